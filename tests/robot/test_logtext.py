"""Outside text in log lines is quoted, escaped and capped (issue 21, audit B finding 10)."""

from __future__ import annotations

import json
import logging

import pytest

from loopact.robot.base_node import parse_estop
from loopact.robot.governor import SafetyGovernor
from loopact.robot.logtext import log_text


def test_log_text_is_one_quoted_line_of_bounded_length() -> None:
    assert log_text("alice") == "'alice'"
    forged = log_text("alice\nFAKE LOG LINE\r\x1b[2J\u202eevil")
    assert "\n" not in forged and "\r" not in forged and "\x1b" not in forged
    assert forged == "'alice\\nFAKE LOG LINE\\r\\x1b[2J\\u202eevil'"
    assert log_text("a" * 1000) == "'" + "a" * 64 + "'…(+936 characters)"
    assert log_text(42) == "'42'"


def test_parse_estop_caps_by() -> None:
    message = json.dumps({"command": "reset", "token": "t", "by": "b" * 300})
    command, token, by = parse_estop(message)
    assert (command, token, by) == ("reset", "t", "b" * 64)


async def test_governor_logs_who_reset_on_one_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from tests.robot.rig import make_rig

    rig = await make_rig()
    try:
        await rig.governor.emergency_stop("test")
        with caplog.at_level(logging.WARNING, logger="loopact.robot.governor"):
            rig.governor.reset_emergency_stop(by="alice\nFAKE LOG LINE released by root")
    finally:
        await rig.governor.close()
        await rig.robot.close()
    (record,) = [r for r in caplog.records if "reset by" in r.getMessage()]
    assert record.getMessage() == (
        "emergency stop reset by 'alice\\nFAKE LOG LINE released by root'"
    )
    assert isinstance(rig.governor, SafetyGovernor) and not rig.governor.emergency_stopped
