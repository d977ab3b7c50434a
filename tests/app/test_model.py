"""The model a config names, and what of the config reaches each request (issue 14)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.agent.helpers import make_agent

from loopact.app.memory import OpenedMemory
from loopact.app.model import make_model
from loopact.app.robot import Body
from loopact.app.run import agent_options
from loopact.config import load_config
from loopact.errors import ConfigError


def _config(tmp_path: Path, **model: Any) -> Any:
    cfg, _ = load_config(None, env={}, cwd=tmp_path, overrides={"model": model})
    return cfg


def test_model_temperature_goes_into_the_agent_options(tmp_path: Path) -> None:
    cfg = _config(tmp_path, base_url="http://127.0.0.1:9/v1", temperature=0.3)
    none = OpenedMemory(None, None, None)
    assert agent_options(cfg, Body("none"), none, tmp_path).temperature == 0.3
    # the local brain has its own local.temperature
    assert agent_options(cfg, Body("none"), none, tmp_path, local=True).temperature is None


async def test_the_temperature_is_sent_with_every_request(
    scripted_server: Any, tmp_path: Path
) -> None:
    server = scripted_server(
        [{"tool_calls": [{"name": "wait", "arguments": {"seconds": 0.01}}]}, {"text": "ok"}]
    )
    agent, _ = make_agent(server, tmp_path, temperature=0.3)
    assert (await agent.run_task("wait a moment")).reply == "ok"
    await agent.close()
    assert [r.body["temperature"] for r in server.requests] == [0.3, 0.3]


def test_dify_refuses_a_temperature_with_a_clear_error(tmp_path: Path) -> None:
    cfg = _config(tmp_path, provider="dify", base_url="http://127.0.0.1:9/v1", temperature=0.3)
    with pytest.raises(ConfigError, match="Dify app sets its own") as err:
        make_model(cfg)
    assert err.value.key == "model.temperature"
