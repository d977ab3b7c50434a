"""``vision.model``: a separate vision model for seewhat and visual_positioning (issue 15, D5).

The local variant (a llama.cpp GGUF + mmproj) runs as a supervised child process; here the
child is a stand-in ``llama_cpp.server`` package (first on ``PYTHONPATH``) that records its
command line and serves loopact's scripted model server on the port it is given, so the real
provider code talks real HTTP to a real process, on the real simulator.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import textwrap
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pydantic
import pytest
from tests.llm.local.fakes import fake_server_files, gguf, write

from loopact.app.robot import open_robot
from loopact.app.vision import (
    local_vision_brain,
    make_vision_model,
    start_local_vision,
    use_vision,
)
from loopact.config import Config, VisionModelConfig
from loopact.errors import ConfigError
from loopact.llm.local.process import LocalBrain
from loopact.sim.describe import describe_world
from loopact.sim.groundtruth import iou, object_bbox

FAKE_SERVER = textwrap.dedent(
    """
    import json, os, sys, time
    from pathlib import Path
    from loopact.testing import ScriptedModelServer
    args = sys.argv[1:]
    d = Path(os.environ["LOOPACT_FAKE_VISION_DIR"])
    (d / "argv.json").write_text(json.dumps(args))
    script = json.loads((d / "script.json").read_text())
    server = ScriptedModelServer(script, port=int(args[args.index("--port") + 1])).start()
    seen = 0
    while True:
        reqs = [r for r in server.requests if r.path == "/v1/chat/completions"]
        if len(reqs) != seen:
            seen = len(reqs)
            tmp = d / "requests.tmp"
            tmp.write_text(json.dumps([r.body for r in reqs]))
            os.replace(tmp, d / "requests.json")
        time.sleep(0.01)
    """
)


def _gguf(path: Path) -> Path:
    path.write_bytes(b"GGUF\x03\x00\x00\x00" + b"\x00" * 64)
    return path


@pytest.fixture
def fake_llama(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A stand-in ``llama_cpp.server`` for the child (and for ``server_installed()`` here)."""
    pkgs = tmp_path / "fakepkgs"
    server_pkg = pkgs / "llama_cpp" / "server"
    server_pkg.mkdir(parents=True)
    (pkgs / "llama_cpp" / "__init__.py").write_text("")
    (server_pkg / "__init__.py").write_text("")
    (server_pkg / "__main__.py").write_text(FAKE_SERVER)
    for name in ("uvicorn", "fastapi", "sse_starlette", "pydantic_settings"):
        if importlib.util.find_spec(name) is None:
            (pkgs / name).mkdir()
            (pkgs / name / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(pkgs))
    monkeypatch.setenv("PYTHONPATH", str(pkgs))
    work = tmp_path / "vision"
    work.mkdir()
    monkeypatch.setenv("LOOPACT_FAKE_VISION_DIR", str(work))
    monkeypatch.setenv("LOOPACT_CACHE_DIR", str(tmp_path / "cache"))  # the server's log
    return work


def test_vision_model_config_names_one_source_and_the_projector(tmp_path: Path) -> None:
    with pytest.raises(pydantic.ValidationError, match="either base_url"):
        VisionModelConfig()
    with pytest.raises(pydantic.ValidationError, match="not both"):
        VisionModelConfig(base_url="http://h/v1", model_path=tmp_path / "m.gguf")
    with pytest.raises(pydantic.ValidationError, match="needs mmproj_path"):
        VisionModelConfig(model_path=tmp_path / "m.gguf")
    with pytest.raises(pydantic.ValidationError, match="chat_format"):
        VisionModelConfig(
            model_path=tmp_path / "m.gguf", mmproj_path=tmp_path / "p.gguf", chat_format="chatml"
        )
    ok = VisionModelConfig(model_path=tmp_path / "m.gguf", mmproj_path=tmp_path / "p.gguf")
    assert ok.chat_format == "mtmd" and ok.base_url is None


def test_missing_or_wrong_files_are_config_errors(tmp_path: Path) -> None:
    model = _gguf(tmp_path / "m.gguf")
    missing = VisionModelConfig(model_path=model, mmproj_path=tmp_path / "nope.gguf")
    with pytest.raises(ConfigError, match=r"vision.model.mmproj_path .*nope.gguf does not exist"):
        local_vision_brain(missing)
    text = tmp_path / "p.gguf"
    text.write_text("not a model")
    with pytest.raises(ConfigError, match="vision.model.mmproj_path .* is not a GGUF file"):
        local_vision_brain(VisionModelConfig(model_path=model, mmproj_path=text))


@pytest.mark.sim
async def test_a_local_gguf_vision_model_describes_and_selects_boxes(
    tmp_path: Path, fake_llama: Path
) -> None:
    fake_llama.joinpath("script.json").write_text(
        json.dumps(
            {
                "turns": [
                    {"text": "A red cube stands on the floor to the right."},
                    {"text": "I think it is somewhere on the right."},  # box 1: prose
                    {"text": "null"},  # box 2: not an object either -> the detector decides
                ]
            }
        )
    )
    vm = VisionModelConfig(
        model_path=_gguf(tmp_path / "vlm.gguf"),
        mmproj_path=_gguf(tmp_path / "mmproj.gguf"),
        start_timeout_s=60,
    )
    cfg = Config.model_validate({"vision": {"model": vm.model_dump()}})
    session = await open_robot("sim", "sim", "sim_room", speed=4.0)
    try:
        async with AsyncExitStack() as stack:
            vision = await make_vision_model(cfg, None, stack)
            assert vision is not None
            use_vision(session, vision, separate=True)
            argv = json.loads(fake_llama.joinpath("argv.json").read_text())
            assert argv[argv.index("--model") + 1] == str(vm.model_path)
            assert argv[argv.index("--clip_model_path") + 1] == str(vm.mmproj_path)
            assert argv[argv.index("--chat_format") + 1] == "mtmd"
            tools = {t.name: t for t in session.tools}
            await session.robot.teleport(1.0, -0.5, -0.6)  # type: ignore[attr-defined]
            seen: Any = await tools["seewhat"]()
            assert seen.ok, seen.error
            assert seen.data["result"] == "A red cube stands on the floor to the right."
            assert seen.metadata["source"] == vision.name
            assert "red" in seen.data["detector"]  # the detector's view is kept beside it
            found: Any = await tools["visual_positioning"](target="red box")
            assert found.ok and found.data["found"], found.data
            assert found.metadata["source"] == "detector"
            assert len(found.metadata["model_refused"]) == 2  # never trusted blindly
            pose, head = await session.robot.get_pose(), await session.robot.get_head()
            cube = next(o for o in describe_world()["objects"] if o["name"] == "red_cube")
            gt = object_bbox(
                cube, (pose.x_m, pose.y_m, pose.yaw_rad), (head.pan_rad, head.tilt_rad), 640, 480
            )
            assert gt is not None and iou(gt, found.data["bbox"]) >= 0.5
            requests = await _requests(fake_llama, 3)
            for body in requests:  # every request carried the frame as an image
                content = body["messages"][-1]["content"]
                assert any(part.get("type") == "image_url" for part in content), content
    finally:
        await session.close()


async def _requests(work: Path, n: int) -> list[dict[str, Any]]:
    path = work / "requests.json"
    for _ in range(500):  # bounded: 10 s for the child to write what it has received
        if path.exists() and len(got := json.loads(path.read_text())) >= n:
            return list(got)
        await asyncio.sleep(0.02)
    raise AssertionError(f"the vision server saw fewer than {n} requests")


async def test_a_vision_server_that_does_not_start_leaves_the_detector(
    tmp_path: Path, fake_llama: Path
) -> None:
    fake_llama.joinpath("script.json").write_text("{broken json")  # the child dies at start
    vm = VisionModelConfig(
        model_path=_gguf(tmp_path / "vlm.gguf"),
        mmproj_path=_gguf(tmp_path / "mmproj.gguf"),
        start_timeout_s=30,
    )
    brain = local_vision_brain(vm)
    async with AsyncExitStack() as stack:
        assert await start_local_vision(brain, vm, stack) is None
    assert not brain.running


async def test_a_local_vision_server_logs_apart_from_the_local_brain(
    tmp_path: Path, fake_llama: Path
) -> None:
    """Both servers in one loopact process: the vision server's log is its own, so starting
    it does not truncate the brain's log that a crash line names (issue 13, SPEC B1)."""
    fake_llama.joinpath("script.json").write_text("{broken json")  # the vision child dies
    scripts, env = fake_server_files(tmp_path / "brain")
    write(scripts, "default.json", [])
    brain = LocalBrain(
        model_path=gguf(tmp_path / "brain.gguf"),
        start_timeout_s=60,
        extra_env=env,
        server_module="llama_cpp.server",
    )
    vm = VisionModelConfig(
        model_path=_gguf(tmp_path / "vlm.gguf"),
        mmproj_path=_gguf(tmp_path / "mmproj.gguf"),
        start_timeout_s=30,
    )
    vision = local_vision_brain(vm)
    async with brain:
        async with AsyncExitStack() as stack:
            assert await start_local_vision(vision, vm, stack) is None
        assert brain.running and brain.log_path is not None and vision.log_path is not None
        assert brain.log_path != vision.log_path
        assert brain.log_path.parent == vision.log_path.parent == tmp_path / "cache" / "logs"
        brain_log = brain.log_path.read_text()
        assert "fake local server 1: pid" in brain_log and "JSONDecodeError" not in brain_log
        assert "JSONDecodeError" in vision.log_path.read_text()
