"""``loopact --help`` and every command's help are written for users (SPEC H1).

A newcomer's audit: the help showed internal spec labels ("SPEC X3", "C2-C4"), ``loopact sim
--help`` a ``COMMAND [ARGS]...`` usage although sim has no subcommands, and every flag a
``<bool>`` type although a flag takes no value. The help is rendered in-process, wide enough
that no line wraps (a label split over two lines would escape the check).
"""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from loopact.cli import app

COMMANDS = ["run", "init", "trace", "scripted-server", "sim", "eval", "node", "base", "mcp"]
SPEC_LABEL = re.compile(r"\bSPEC\b|\b[A-Z]\d+(?:-[A-Z]?\d+)?\b|\bissue \d+")
"""An internal label: ``SPEC X3``, ``C2-C4``, ``H2``, ``issue 16``."""


def _help(*command: str) -> str:
    result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("command", ["", *COMMANDS])
def test_help_has_no_internal_labels_and_no_flag_types(command: str) -> None:
    text = _help(*command.split())
    assert SPEC_LABEL.findall(text) == [], text
    assert "<bool>" not in text, text
    # the flags are still listed, each with its help
    assert re.search(r"--help\s+Show this message and exit\.", text), text


def test_the_label_pattern_finds_what_the_audit_found() -> None:
    found = SPEC_LABEL.findall("next to the base (SPEC X3). nodes (ROS 2 or MQTT; C2-C4).")
    assert found == ["SPEC", "X3", "C2-C4"]
    assert SPEC_LABEL.findall("ROS 2, 16 kHz, s16le, --sim-log, MQTT, mcp.json") == []


def test_sim_has_no_subcommands_and_options_that_take_no_value_show_no_type() -> None:
    text = _help("sim")
    assert re.search(r"Usage: loopact sim \[OPTIONS\]\s*\n", text), text
    assert "COMMAND" not in text
    assert "The built-in MuJoCo simulated robot" in text
    assert re.search(r"--describe\s+Print the world as JSON", text), text
    assert re.search(r"--snapshot\s+<path>\s+Write camera\.png", text), text
    listing = _help()
    assert re.search(r"\bsim\s+The built-in MuJoCo simulated robot", listing), listing
    # sim is listed with the other commands, in the order they are registered
    order = [c for c in re.findall(r"│ (\S+)\s{2,}", listing) if c in COMMANDS]
    assert order == COMMANDS, listing


def test_loopact_sim_without_options_still_shows_its_help() -> None:
    result = CliRunner().invoke(app, ["sim"], env={"COLUMNS": "400"})
    assert "Usage: loopact sim [OPTIONS]" in result.output, result.output
    assert "--snapshot" in result.output
