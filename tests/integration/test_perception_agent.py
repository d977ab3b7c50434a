"""Perception tools through the agent and the scripted model server, on the real simulator
(issue 15 acceptance 1): a stop during follow_line or track halts the base before the next model
request; visual_positioning's box is graded against the ground truth even when the vision model
answers badly."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path
from typing import Any

import pytest
from tests.agent.helpers import call
from tests.integration.test_robot_agent import robot, robot_agent

from loopact.robot.perception import PerceptionOptions
from loopact.robot.profile import load_profile, load_site
from loopact.robot.session import RobotSession, start_session
from loopact.sim import SimRobot
from loopact.sim.describe import describe_world, line_length_m, line_polyline
from loopact.sim.groundtruth import distance_to_polyline, iou, object_bbox
from loopact.sim.simlog import read_sim_log
from loopact.vision.model import VisionModel

pytestmark = pytest.mark.sim
__all__ = ["robot"]  # the fixture


async def _preempt_while_moving(
    server: Any, session: RobotSession, tmp_path: Path, first_text: str
) -> tuple[list[float], Any, str]:
    agent, rec = robot_agent(server, session, tmp_path)
    twist_at_request: list[float] = []
    second_id: list[str | None] = [None]

    def on_event(e: Any) -> None:
        if e.type == "model_request" and e.task_id == second_id[0]:
            twist_at_request.append(session.governor.last_twist.linear_mps)
            twist_at_request.append(session.governor.last_twist.angular_radps)

    agent.bus.subscribe(on_event)
    runner = asyncio.ensure_future(agent.run())
    first = agent.submit(first_text)
    await rec.wait_for(lambda e: e.type == "tool_call")
    for _ in range(3000):  # bounded (60 s) wait until the governor commands motion
        if not session.governor.last_twist.is_zero:
            break
        await asyncio.sleep(0.02)
    assert not session.governor.last_twist.is_zero  # it is moving
    second_id[0] = agent.submit("say hello")
    await rec.wait_for(lambda e: e.type == "task_end" and e.task_id == second_id[0], 120)
    await agent.close()
    runner.cancel()
    return twist_at_request, rec, first


async def test_new_command_stops_follow_line_before_the_next_request(
    scripted_server: Any, robot: RobotSession, tmp_path: Path
) -> None:
    await robot.robot.teleport(1.0, -1.1, 0.0)  # type: ignore[attr-defined]
    server = scripted_server(
        [
            {"tool_calls": [call("follow_line", {"color": "purple", "duration_s": 60})]},
            {"text": "Hello."},
        ]
    )
    twists, rec, first = await _preempt_while_moving(server, robot, tmp_path, "follow the line")
    assert twists == [0.0, 0.0]
    ends = {e.task_id: e.data["status"] for e in rec.of("task_end")}
    assert ends[first] == "preempted"


def _arc_position_m(x_m: float, y_m: float, poly: list[tuple[float, float]]) -> float:
    """Where along the closed line (metres from its first corner) the point's foot lies."""
    best, at, walked = math.inf, 0.0, 0.0
    for (ax, ay), (bx, by) in zip(poly, poly[1:], strict=False):
        seg = math.hypot(bx - ax, by - ay)
        f = min(1.0, max(0.0, ((x_m - ax) * (bx - ax) + (y_m - ay) * (by - ay)) / seg**2))
        d = math.hypot(ax + f * (bx - ax) - x_m, ay + f * (by - ay) - y_m)
        if d < best:
            best, at = d, walked + f * seg
        walked += seg
    return at


def _laps_driven(samples: list[dict[str, Any]]) -> float:
    """Laps of the line the true robot centre went round (signed progress along the line)."""
    poly, length = line_polyline(), line_length_m()
    s = [_arc_position_m(p["x_m"], p["y_m"], poly) for p in samples]
    steps = [(b - a + length / 2) % length - length / 2 for a, b in zip(s, s[1:], strict=False)]
    return sum(steps) / length


async def test_agent_follows_the_line_two_laps_within_ten_centimetres(
    scripted_server: Any, tmp_path: Path
) -> None:
    """Issue 15 acceptance 1 in the default suite: the scripted model calls
    follow_line(color="purple", laps=2); the simulator's pose log grades it (320x240 camera,
    4x real time, 0.3 m/s on straights: the slow_sim run's set-up)."""
    log = tmp_path / "sim.jsonl"
    sim = await asyncio.wait_for(SimRobot.create(speed=4.0, width=320, height=240, sim_log=log), 30)
    opts = PerceptionOptions(line_speed_mps=0.3)
    session = start_session(sim, load_profile("sim"), load_site("sim_room"), None, opts)
    server = scripted_server(
        [
            {"tool_calls": [call("follow_line", {"color": "purple", "laps": 2}, "fl1")]},
            {"text": "Two laps done."},
        ]
    )
    try:
        await sim.teleport(2.0, -1.1, 0.0)  # on the south side of the loop, facing along it
        t0 = sim.clock.now()
        agent, rec = robot_agent(server, session, tmp_path)
        try:
            outcome = await asyncio.wait_for(agent.run_task("drive two laps on the line"), 240)
        finally:
            await agent.close()
        t1 = sim.clock.now()
    finally:
        await session.close()
    assert outcome.status == "completed", outcome
    result = next(e.data for e in rec.of("tool_result") if e.data["id"] == "fl1")
    assert result["ok"] and result["data"]["laps"] == 2, result
    assert result["data"]["stopped_by"] == "laps"
    samples = [p for p in read_sim_log(log) if t0 <= p["t_s"] <= t1]
    d = [distance_to_polyline(p["x_m"], p["y_m"], line_polyline()) for p in samples]
    within = sum(x <= 0.10 for x in d) / len(d)
    assert within >= 0.95, (within, max(d))  # ground truth, not the tool's claim
    assert len(samples) >= 10 * (samples[-1]["t_s"] - samples[0]["t_s"])  # the log's rate held
    # two laps by ground truth: back at the start twice (laps count within 0.2 m of it)
    assert (
        2 * line_length_m() - 0.5
        <= _laps_driven(samples) * line_length_m()
        <= (2 * line_length_m() + 0.5)
    )
    assert server.requests and len(server.requests) == 2  # the model was asked, then answered


async def test_visual_positioning_red_box_with_a_vision_model_that_answers_prose(
    scripted_server: Any, robot: RobotSession, tmp_path: Path
) -> None:
    await robot.robot.teleport(1.0, -0.5, -0.6)  # type: ignore[attr-defined]
    server = scripted_server(
        [
            {"tool_calls": [call("visual_positioning", {"target": "red box"}, "vp1")]},
            {"text": "The red box is on the right side of the image."},  # box request 1
            {
                "text": '{"found": true, "target": "red box", "bbox": [0, 0, 9999, 10], '
                '"confidence": 0.9, "reason": "it is there"}'
            },  # box request 2: outside the frame
            {"text": "Found it."},
        ]
    )
    agent, rec = robot_agent(server, robot, tmp_path)
    from loopact.llm.openai_chat import OpenAIChatModel

    robot.perception.vision = VisionModel(OpenAIChatModel("vlm", server.base_url, "k"))
    try:
        outcome = await asyncio.wait_for(agent.run_task("where is the red box?"), 120)
    finally:
        robot.perception.vision = None
        await agent.close()
    assert outcome.status == "completed"
    result = next(e.data for e in rec.of("tool_result") if e.data["id"] == "vp1")
    meta = result["metadata"]
    assert meta["source"] == "detector" and len(meta["model_refused"]) == 2
    assert "not JSON" in meta["model_refused"][0] and "outside" in meta["model_refused"][1]
    box = result["data"]["bbox"]
    pose = await robot.robot.get_pose()
    head = await robot.robot.get_head()
    cube = next(o for o in describe_world()["objects"] if o["name"] == "red_cube")
    gt = object_bbox(
        cube, (pose.x_m, pose.y_m, pose.yaw_rad), (head.pan_rad, head.tilt_rad), 640, 480
    )
    assert gt is not None and iou(gt, box) >= 0.5
    shown = [e for e in rec.of("tool_image") if e.data["id"] == "vp1"]
    assert len(shown) == 1 and shown[0].data["width_px"] == 640  # the overlay, for people


async def test_a_vision_model_box_on_bare_floor_is_refused_and_an_unchecked_one_is_flagged(
    scripted_server: Any, robot: RobotSession, tmp_path: Path
) -> None:
    """Issue 15 bad input "a box for a different object" beyond colour: a box on bare floor is
    refused with the reason, the retry's box is snapped to the detector's red box (graded by
    ground truth); a phrase the detector cannot check keeps the model's box, confidence told."""
    await robot.robot.teleport(1.0, -0.5, -0.6)  # type: ignore[attr-defined]
    pose, head = await robot.robot.get_pose(), await robot.robot.get_head()
    cube = next(o for o in describe_world()["objects"] if o["name"] == "red_cube")
    gt = object_bbox(
        cube, (pose.x_m, pose.y_m, pose.yaw_rad), (head.pan_rad, head.tilt_rad), 640, 480
    )
    assert gt is not None
    loose = [round(gt[0]) - 12, round(gt[1]) - 6, round(gt[2]) + 4, round(gt[3]) + 15]
    floor, table = [60, 300, 200, 420], [130, 55, 260, 170]  # bare floor; the table's legs

    def box_answer(bbox: list[int], target: str, confidence: float) -> dict[str, str]:
        body = {"found": True, "target": target, "bbox": bbox, "confidence": confidence}
        return {"text": json.dumps({**body, "reason": "seen"})}

    server = scripted_server(
        [
            {"tool_calls": [call("visual_positioning", {"target": "red box"}, "vp1")]},
            box_answer(floor, "red box", 0.9),  # box request 1: bare floor
            box_answer(loose, "red box", 0.8),  # box request 2: the red box, loosely drawn
            {
                "tool_calls": [
                    call("visual_positioning", {"target": "the thing on the left"}, "vp2")
                ]
            },
            box_answer(table, "a wooden table", 0.4),
            {"text": "The red box is ahead; maybe a table on the left, I am not sure."},
        ]
    )
    agent, rec = robot_agent(server, robot, tmp_path)
    from loopact.llm.openai_chat import OpenAIChatModel

    robot.perception.vision = VisionModel(OpenAIChatModel("vlm", server.base_url, "k"))
    try:
        outcome = await asyncio.wait_for(agent.run_task("where is the red box?"), 120)
    finally:
        robot.perception.vision = None
        await agent.close()
    assert outcome.status == "completed"
    results = {e.data["id"]: e.data for e in rec.of("tool_result")}
    first = results["vp1"]
    assert first["metadata"]["source"] == "openai/vlm"
    refused = first["metadata"]["model_refused"]
    assert len(refused) == 1 and refused[0].startswith(
        f"bbox {floor} covers no detected object (IoU < 0.3 with each candidate); 'red box' asks"
        " for a red, box-shaped object; the candidates that fit: the red box at ["
    )
    box = first["data"]["bbox"]
    assert box != loose and iou(gt, box) >= 0.8 > iou(gt, loose)  # snapped to the object
    assert first["data"]["reason"].startswith("the vision model chose the red box at ")
    second = results["vp2"]
    assert second["data"]["bbox"] == table and second["metadata"]["low_confidence"] is True
    assert second["data"]["reason"] == (
        "low confidence (0.40): the vision model's box, unchecked (the phrase names no colour or"
        " shape the detector could check), model confidence 0.40; seen; tell the user you are"
        " not sure this is the right object"
    )


async def test_low_confidence_is_told_to_the_model_which_carries_on_with_text(
    scripted_server: Any, robot: RobotSession, tmp_path: Path
) -> None:
    await robot.robot.teleport(1.0, -0.5, -0.6)  # type: ignore[attr-defined]
    robot.perception.min_confidence = 0.95  # the detector's 0.9 for "red box" is then low
    server = scripted_server(
        [
            {"tool_calls": [call("visual_positioning", {"target": "red box"}, "vp1")]},
            {"text": "I think the red box is ahead on the right, but I am not sure."},
        ]
    )
    agent, rec = robot_agent(server, robot, tmp_path)
    try:
        outcome = await asyncio.wait_for(agent.run_task("where is the red box?"), 120)
    finally:
        await agent.close()
    assert outcome.status == "completed"
    result = next(e.data for e in rec.of("tool_result") if e.data["id"] == "vp1")
    assert result["metadata"]["low_confidence"] is True
    assert result["data"]["found"] is True and len(result["data"]["bbox"]) == 4  # still an answer
    # the model is told, in the tool result it reads, to say that it is unsure (G2)
    told = [m for m in server.requests[1].body["messages"] if m["role"] == "tool"]
    assert len(told) == 1 and "low confidence (0.90)" in str(told[0]["content"])
    assert "tell the user you are not sure" in str(told[0]["content"])


async def test_new_command_stops_track_before_the_next_request(
    scripted_server: Any, robot: RobotSession, tmp_path: Path
) -> None:
    await robot.robot.teleport(1.0, -0.5, -0.6)  # type: ignore[attr-defined]
    from loopact.robot.positioning import locate

    found = await locate(_env(robot), robot.perception, "red box")
    x1, y1, x2, y2 = found.data["bbox"]
    server = scripted_server(
        [
            {"tool_calls": [call("track", {"x1": x1, "y1": y1, "x2": x2, "y2": y2})]},
            {"text": "Hello."},
        ]
    )
    await robot.robot.teleport(1.0, -0.5, -0.45)  # type: ignore[attr-defined]  # so it turns
    twists, rec, first = await _preempt_while_moving(server, robot, tmp_path, "track the box")
    assert twists == [0.0, 0.0]
    ends = {e.task_id: e.data["status"] for e in rec.of("task_end")}
    assert ends[first] == "preempted"


def _env(session: RobotSession) -> Any:
    from loopact.robot.motion import RobotEnv
    from loopact.vision.gate import ImageGate

    return RobotEnv(session.robot, session.governor, session.profile, session.site, ImageGate())
