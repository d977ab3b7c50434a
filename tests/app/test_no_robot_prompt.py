"""Without a robot the system prompt says so (``loopact run --robot none``; SPEC A1, H1).

Asked to "move forward one meter" with no robot attached, the local brain called
``file_read("/notes/todo.txt")`` and the reply told that call's failure: nothing told the model
that it has no body. The command runs in its own process against the scripted model server.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from loopact.agent.prompt import build_system_prompt

NO_ROBOT = "No robot is connected"


def test_the_system_prompt_says_that_no_robot_is_connected(
    scripted_server: Any, tmp_path: Path
) -> None:
    answer = "No robot is connected, so I cannot move."
    server = scripted_server([{"text": answer, "expect": {"contains": NO_ROBOT}}])
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("LOOPACT_") and k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")
    }
    env.update({"XDG_CONFIG_HOME": str(tmp_path / "xdg"), "XDG_DATA_HOME": str(tmp_path / "d")})
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "loopact", "run", "--robot", "none", "--no-memory"),
            *("--once", "move forward one meter", "--base-url", server.base_url),
            *("--model", "m", "--api-key", "sk-x", "--workspace", str(tmp_path / "ws")),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr  # the task ended with a reply
    assert proc.stdout.strip() == answer
    system = server.requests[0].body["messages"][0]
    assert system["role"] == "system" and NO_ROBOT in system["content"]


def test_a_robot_is_not_said_to_be_missing() -> None:
    robot = {"profile": "sim", "waypoints": ["kitchen"], "max_linear_mps": 0.5}
    assert NO_ROBOT not in build_system_prompt(robot)
    assert "the mind of a mobile robot" in build_system_prompt(robot)
