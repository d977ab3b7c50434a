"""``loopact trace`` on traces as they come: valid, cut off by a crash, empty or of the wrong
shape (SPEC H3, docs/trace.md "Reading a trace"); ``loopact scripted-server``'s port.

Every case runs the real command in a separate process, as ``tests/test_cli.py`` does.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.test_cli import run_cli

_TASK = "abcdef123456"
_VALID_LINES = """\
{"ts": 100.0, "type": "trace_start", "task_id": null, "schema": 1, "provider": "openai", "model": "m"}
{"ts": 100.5, "type": "task_start", "task_id": "abcdef123456", "text": "look around", "source": "cli"}
{"ts": 101.0, "type": "model_request", "task_id": "abcdef123456", "round": 1, "n_messages": 2, "tools": ["seewhat", "move"]}
{"ts": 102.25, "type": "model_response", "task_id": "abcdef123456", "round": 1, "text": "", "reasoning": "hm", "tool_calls": [{"id": "c1", "name": "seewhat", "arguments": {"q": "w"}}], "finish_reason": "tool_calls", "usage": {"input_tokens": 5, "output_tokens": 3}}
{"ts": 102.3, "type": "tool_call", "task_id": "abcdef123456", "id": "c1", "name": "seewhat", "arguments": {"q": "w"}}
{"ts": 102.4, "type": "tool_image", "task_id": "abcdef123456", "id": "c1", "name": "seewhat", "n": 0, "caption": "a box", "width_px": 64, "height_px": 48, "bytes": 1234}
{"ts": 103.0, "type": "tool_result", "task_id": "abcdef123456", "id": "c1", "name": "seewhat", "ok": true, "data": {"objects": ["box"]}}
{"ts": 103.1, "type": "tool_result", "task_id": "abcdef123456", "id": "c2", "name": "move", "ok": false, "error": "blocked"}
{"ts": 103.2, "type": "model_request", "task_id": "abcdef123456", "round": 2, "n_messages": 4, "tools": []}
{"ts": 104.0, "type": "model_response", "task_id": "abcdef123456", "round": 2, "text": "A box.\\nThat is all.", "reasoning": "", "tool_calls": [], "finish_reason": "stop"}
{"ts": 104.1, "type": "context_compressed", "task_id": "abcdef123456", "method": "trim", "before_tokens": 10, "after_tokens": 5}
{"ts": 104.2, "type": "error", "task_id": "abcdef123456", "message": "something"}
{"ts": 104.3, "type": "reply", "task_id": "abcdef123456", "text": "A box."}
{"ts": 104.4, "type": "robot_state", "task_id": "abcdef123456", "x_m": 1, "y_m": 0.5, "yaw_rad": -0.25, "frame": "odom"}
{"ts": 104.5, "type": "task_end", "task_id": "abcdef123456", "status": "completed", "rounds": 2}
"""  # noqa: E501
_VALID: list[dict[str, Any]] = [json.loads(line) for line in _VALID_LINES.splitlines()]
# The timeline of _VALID as loopact printed it before traces were checked (a contract).
_VALID_TIMELINE = """\
+   0.000s  -         trace_start     schema 1 openai m
+   0.500s  abcdef12  task_start      look around
+   1.000s  abcdef12  model_request   round 1: 2 messages, tools [seewhat, move]
+   2.250s  abcdef12  model_response  round 1 [tool_calls] seewhat({"q": "w"})
+   2.300s  abcdef12  tool_call       seewhat({"q": "w"})
+   2.400s  abcdef12  tool_image      seewhat image 0 (64x48, 1234 B): a box
+   3.000s  abcdef12  tool_result     seewhat ok: {"objects": ["box"]}
+   3.100s  abcdef12  tool_result     move FAILED: blocked
+   3.200s  abcdef12  model_request   round 2: 4 messages, no tools
+   4.000s  abcdef12  model_response  round 2 [stop] A box. That is all.
+   4.100s  abcdef12  context_compressed {"method": "trim", "before_tokens": 10, "after_tokens": 5}
+   4.200s  abcdef12  error           something
+   4.300s  abcdef12  reply           A box.
+   4.400s  abcdef12  robot_state     x=1.000 m y=0.500 m yaw=-0.250 rad (odom)
+   4.500s  abcdef12  task_end        completed after 2 rounds
"""
_VALID_SCRIPT = {
    "turns": [
        {
            "reasoning": "hm",
            "tool_calls": [{"id": "c1", "name": "seewhat", "arguments": {"q": "w"}}],
            "finish_reason": "tool_calls",
        },
        {"text": "A box.\nThat is all.", "finish_reason": "stop"},
    ]
}


def _jsonl(events: list[Any]) -> str:
    return "".join(json.dumps(e) + "\n" for e in events)


def _read_both(trace: Path, tmp_path: Path) -> list[subprocess.CompletedProcess[str]]:
    """``loopact trace FILE`` and ``loopact trace FILE --to-script replay.json``."""
    script = tmp_path / "replay.json"
    script.unlink(missing_ok=True)
    return [
        run_cli(["trace", str(trace)], tmp_path),
        run_cli(["trace", str(trace), "--to-script", str(script)], tmp_path),
    ]


def test_a_valid_trace_prints_and_converts_exactly_as_before(tmp_path: Path) -> None:
    trace = tmp_path / "valid.jsonl"
    trace.write_text(_VALID_LINES)
    shown, converted = _read_both(trace, tmp_path)
    assert (shown.returncode, shown.stdout, shown.stderr) == (0, _VALID_TIMELINE, "")
    assert (converted.returncode, converted.stderr) == (0, "")
    assert converted.stdout == f"wrote {tmp_path / 'replay.json'} with 2 turns\n"
    assert json.loads((tmp_path / "replay.json").read_text()) == _VALID_SCRIPT


def test_a_line_of_the_wrong_shape_is_refused_with_its_line_number(tmp_path: Path) -> None:
    """Newcomer report: valid JSON of the wrong shape crashed both commands with a traceback."""
    reply = {"ts": 101.0, "type": "reply", "task_id": _TASK}
    response = {"ts": 101.0, "type": "model_response", "task_id": _TASK, "round": 1}
    request = {"ts": 101.0, "type": "model_request", "task_id": _TASK, "round": 1}
    state = {"ts": 101.0, "type": "robot_state", "task_id": _TASK, "frame": "odom"}
    call = {"id": "c1", "name": "look", "arguments": {}}
    cases: list[tuple[Any, str]] = [
        ([1, 2], "expected an event object, got an array"),
        ("text", "expected an event object, got a string"),
        (None, "expected an event object, got null"),
        ({**reply, "ts": "x"}, "'ts' must be a number, got a string"),
        ({**reply, "ts": True}, "'ts' must be a number, got true"),
        ({**reply, "ts": 10**400}, "'ts' must be a number, got a number too large"),
        ({**reply, "type": ["reply"]}, "'type' must be a string, got an array"),
        ({**reply, "task_id": 7}, "'task_id' must be a string or null, got a number"),
        ({**response, "tool_calls": "c1"}, "'tool_calls' must be a list, got a string"),
        ({**response, "tool_calls": [call, 5]}, "'tool_calls'[1] must be an object, got a number"),
        (
            {**response, "tool_calls": [{**call, "arguments": "{}"}]},
            "'tool_calls'[0].arguments must be an object, got a string",
        ),
        ({**response, "tool_calls": [{**call, "id": 3}]}, "'tool_calls'[0].id must be a string"),
        ({**response, "text": ["a"]}, "'text' must be a string or null, got an array"),
        ({**request, "tools": "move"}, "'tools' must be a list of strings, got a string"),
        ({**request, "tools": ["move", {}]}, "'tools'[1] must be a string, got an object"),
        ({**state, "x_m": "1.0"}, "'x_m' must be a number, got a string"),
    ]
    trace = tmp_path / "bad.jsonl"
    for bad, expected in cases:
        trace.write_text(_jsonl([*_VALID[:2], bad, _VALID[-1]]))
        for proc in _read_both(trace, tmp_path):
            assert proc.returncode == 2, (bad, proc.stderr)
            assert f"{trace}:3: {expected}" in proc.stderr, (bad, proc.stderr)
            assert len(proc.stderr.splitlines()) == 1, proc.stderr  # no traceback
            assert proc.stdout == ""
        assert not (tmp_path / "replay.json").exists()


def test_a_call_lacking_a_part_is_printed_but_never_replayed(tmp_path: Path) -> None:
    """A timeline shows what it can of a call without its id, name or arguments; a replay
    script would have to guess them, so --to-script refuses and names the line."""
    trace = tmp_path / "partial.jsonl"
    for missing in ("id", "name", "arguments"):
        call = {"id": "c9", "name": "look", "arguments": {"far": 1}}
        del call[missing]
        trace.write_text(_jsonl([*_VALID[:3], {**_VALID[3], "tool_calls": [call]}]))
        shown, converted = _read_both(trace, tmp_path)
        assert (shown.returncode, shown.stderr) == (0, ""), shown.stderr
        assert "model_response  round 1 [tool_calls] " in shown.stdout
        assert converted.returncode == 2 and converted.stdout == ""
        assert converted.stderr == (
            f"loopact: {trace}:4: tool call 1 has no '{missing}', which a replay needs; "
            "no script written\n"
        )
        assert not (tmp_path / "replay.json").exists()


def test_a_trace_cut_off_mid_line_is_read_up_to_the_cut(tmp_path: Path) -> None:
    """Traces survive a crash: a last line cut off mid-write is skipped with a warning."""
    trace = tmp_path / "trunc.jsonl"
    n = len(_VALID) + 1
    warning = f"loopact: {trace}:{n}: the last line is incomplete (the run was cut off); ignored\n"
    cut_in_a_character = '{"ts": 105.0, "text": "\u00e4'.encode()[:-1]
    for tail in (b'{"ts": 105.0, "type": "rep', cut_in_a_character):
        trace.write_bytes(_VALID_LINES.encode() + tail)
        shown, converted = _read_both(trace, tmp_path)
        assert (shown.returncode, shown.stdout, shown.stderr) == (0, _VALID_TIMELINE, warning)
        assert (converted.returncode, converted.stderr) == (0, warning)
        assert json.loads((tmp_path / "replay.json").read_text()) == _VALID_SCRIPT


def test_a_broken_line_before_the_end_stays_an_error(tmp_path: Path) -> None:
    head, rest = "".join(_VALID_LINES.splitlines(True)[:3]), _jsonl(_VALID[3:])
    trace = tmp_path / "mid.jsonl"
    for text in (
        head + '{"ts": 1.0, "ty\n' + rest,
        head + '{"ts": 1.0, "ty\n',  # the last line, but it ends with a newline
        head + '{"ts": 1.0, "ty\n{"ts": 1.0, "ty',
    ):
        trace.write_text(text)
        for proc in _read_both(trace, tmp_path):
            assert proc.returncode == 2 and proc.stdout == "", proc.stderr
            assert f"{trace}:4: not a JSON line" in proc.stderr
    trace.write_bytes(head.encode() + b'{"text": "\xff"}\n' + rest.encode())
    for proc in _read_both(trace, tmp_path):
        assert proc.returncode == 2 and f"{trace}:4: not UTF-8 text" in proc.stderr


def test_a_file_of_bytes_with_no_newline_is_not_taken_for_a_cut_trace(tmp_path: Path) -> None:
    """300 random bytes without a newline were reported as "the last line is incomplete (the
    run was cut off)" and "the trace is empty" (newcomer try-out, 2026-12-05)."""
    trace = tmp_path / "garbage.bin"
    for data in (bytes(range(256))[::-1] + b"\x01\x02", b"hello world", b"\xff\xfe\x00abc"):
        trace.write_bytes(data)
        for proc in _read_both(trace, tmp_path):
            assert proc.returncode == 2 and proc.stdout == "", proc.stderr
            assert f"{trace}:1: not" in proc.stderr, proc.stderr
            assert "incomplete" not in proc.stderr and "empty" not in proc.stderr


def test_an_empty_trace_is_a_usage_error(tmp_path: Path) -> None:
    trace = tmp_path / "empty.jsonl"
    for text in ("", "\n\n  \n", '{"ts": 100.0, "type": "trace_st'):
        trace.write_text(text)
        for proc in _read_both(trace, tmp_path):
            assert proc.returncode == 2, (text, proc.stderr)
            assert proc.stderr.endswith(f"loopact: {trace}: the trace is empty\n"), proc.stderr
            assert proc.stdout == ""
        assert not (tmp_path / "replay.json").exists()


def test_json_lines_that_are_not_a_trace_are_refused(tmp_path: Path) -> None:
    """Newcomer report: a --sim-log pose file or ``{"a": 1}`` printed a line of ``?`` per line
    and exited 0; a file none of whose lines has an event's ``ts`` and ``type`` is refused."""
    pose = {"t_s": 0.05, "x_m": 0.01, "y_m": 0.0, "yaw_deg": 0.0, "head": {}, "objects": {}}
    cases: list[tuple[list[Any], str]] = [
        (
            [pose, {**pose, "t_s": 0.1}],
            "line 1 has no 'ts' or 'type' (its keys: t_s, x_m, y_m, yaw_deg, head, objects); "
            "a --sim-log pose file? use loopact sim --snapshot DIR --sim-log {trace}",
        ),
        (
            [{"a": 1}, {"a": 2}],
            "line 1 has no 'ts' or 'type' (its keys: a); "
            "loopact trace reads the files loopact run --trace writes",
        ),
        ([{"ts": 1.0}], "line 1 has no 'type' (its keys: ts);"),
        ([{}, {"type": "reply"}], "line 1 has no 'ts' or 'type' (it is an empty object);"),
    ]
    trace = tmp_path / "other.jsonl"
    for lines, expected in cases:
        trace.write_text("\n" + _jsonl(lines))  # a blank first line is not line 1
        expected = expected.replace("line 1", "line 2").format(trace=trace)
        for proc in _read_both(trace, tmp_path):
            assert (proc.returncode, proc.stdout) == (2, ""), (lines, proc.stderr)
            assert proc.stderr.startswith(
                f"loopact: cannot read trace: {trace} is not a loopact trace: {expected}"
            ), proc.stderr
            assert len(proc.stderr.splitlines()) == 1, proc.stderr  # no traceback
        assert not (tmp_path / "replay.json").exists()


def test_a_trace_with_a_few_odd_lines_is_read(tmp_path: Path) -> None:
    """A line without ``ts`` or ``type`` among events is shown with ``?`` (docs/trace.md: a
    missing field is not an error), also when it comes first, and a cut-off last line is
    still skipped with its warning."""
    trace = tmp_path / "odd.jsonl"
    odd = {"note": "by hand"}
    trace.write_text(_jsonl([odd, *_VALID[:-1], {"type": "x"}]) + '{"ts": 1')
    shown, converted = _read_both(trace, tmp_path)
    warning = f"loopact: {trace}:{len(_VALID) + 2}: the last line is incomplete"
    assert shown.returncode == 0 and shown.stderr.startswith(warning), shown.stderr
    # times count from the first line that has one, not from 0 for the odd first line
    assert shown.stdout == (
        '+   0.000s  -         ?               {"note": "by hand"}\n'
        + "".join(_VALID_TIMELINE.splitlines(True)[:-1])
        + "+   0.000s  -         x               {}\n"
    )
    assert converted.returncode == 0 and converted.stderr.startswith(warning)
    assert json.loads((tmp_path / "replay.json").read_text()) == _VALID_SCRIPT


def test_scripted_server_refuses_a_port_out_of_range_or_in_use(
    scripted_server: Any, tmp_path: Path
) -> None:
    """Newcomer report: --port 99999 ended in OverflowError's traceback."""
    script = tmp_path / "ok.json"
    script.write_text('{"turns": [{"text": "x"}]}')
    for port in ("99999", "65536", "-1"):
        proc = run_cli(["scripted-server", str(script), "--port", port], tmp_path)
        assert proc.returncode == 2, (port, proc.stderr)
        assert proc.stderr == f"loopact: --port must be 0-65535 (got {port})\n"
    busy = scripted_server([])
    port = busy.base_url.rsplit(":", 1)[1].split("/")[0]
    proc = run_cli(["scripted-server", str(script), "--port", port], tmp_path)
    assert proc.returncode == 2
    (line,) = proc.stderr.splitlines()  # no traceback
    assert line.startswith(f"loopact: cannot listen on 127.0.0.1:{port}: ")
