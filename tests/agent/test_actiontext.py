"""Action-text parsing and catalogue rendering (SPEC A5)."""

from __future__ import annotations

import pytest

from loopact.agent.actiontext import observation_text, parse_actions, render_catalogue
from loopact.llm.base import ToolSpec

MOVE = ToolSpec(
    "move_forward",
    "Drive straight ahead.\nLonger text that is not shown.",
    {
        "type": "object",
        "properties": {
            "distance_m": {"type": "number", "description": "How far to drive, in metres."},
            "speed_mps": {"type": "number", "default": 0.2, "description": "Speed in m/s."},
        },
        "required": ["distance_m"],
    },
)
SAY = ToolSpec(
    "say",
    "Speak to the person.",
    {
        "type": "object",
        "properties": {"text": {"type": "string"}, "loud": {"type": "boolean"}},
        "required": ["text"],
    },
)
SEE = ToolSpec("seewhat", "Look through the camera.", {"type": "object", "properties": {}})
FOLLOW = ToolSpec(
    "follow_line",
    "Follow a coloured line.",
    {
        "type": "object",
        "properties": {"colour": {"type": "string", "enum": ["red", "black"]}},
        "required": ["colour"],
    },
)
SPECS = [MOVE, SAY, SEE, FOLLOW]


def test_positional_arguments_follow_schema_order() -> None:
    p = parse_actions("move_forward(1.0, 0.3)", SPECS)
    assert p.call is not None
    assert p.call.name == "move_forward"
    assert p.call.arguments == {"distance_m": 1.0, "speed_mps": 0.3}
    assert p.call.error is None
    assert not p.finished


def test_keyword_and_mixed_arguments() -> None:
    p = parse_actions("move_forward(2, speed_mps=0.5)", SPECS)
    assert p.call is not None
    assert p.call.arguments == {"distance_m": 2, "speed_mps": 0.5}
    p = parse_actions("move_forward(speed_mps=-0.1, distance_m=+1.5)", SPECS)
    assert p.call is not None
    assert p.call.arguments == {"distance_m": 1.5, "speed_mps": -0.1}


def test_quoted_strings_with_escapes_and_booleans_and_null() -> None:
    p = parse_actions('say("he said \\"hi\\"\\nbye", true)', SPECS)
    assert p.call is not None
    assert p.call.arguments == {"text": 'he said "hi"\nbye', "loud": True}
    for word, value in [("True", True), ("false", False), ("False", False)]:
        q = parse_actions(f"say('x', loud={word})", SPECS)
        assert q.call is not None and q.call.arguments["loud"] is value
    for word in ("null", "None"):
        q = parse_actions(f"say('x', {word})", SPECS)
        assert q.call is not None and q.call.arguments == {"text": "x", "loud": None}


def test_curly_quotes_are_accepted() -> None:
    p = parse_actions("say(\u201cni hao\u201d)", SPECS)
    assert p.call is not None
    assert p.call.arguments == {"text": "ni hao"}


@pytest.mark.parametrize("value", ["1e999", "-1e999", "inf", "nan", "float('inf')"])
def test_non_finite_numbers_are_refused(value: str) -> None:
    p = parse_actions(f"move_forward({value})", SPECS)
    assert p.call is not None
    assert p.call.arguments == {}
    assert p.call.error is not None and "move_forward" in p.call.error


def test_expressions_are_never_evaluated() -> None:
    p = parse_actions("move_forward(__import__('os').system('true'))", SPECS)
    assert p.call is not None
    assert p.call.error is not None
    assert "not a literal" in p.call.error
    p = parse_actions("move_forward(1 + 1)", SPECS)
    assert p.call is not None and p.call.error is not None


def test_bad_arguments_name_what_is_valid() -> None:
    p = parse_actions("move_forward(1, 2, 3)", SPECS)
    assert p.call is not None and p.call.error is not None
    assert "distance_m, speed_mps" in p.call.error
    p = parse_actions("move_forward(distance=1)", SPECS)
    assert p.call is not None and p.call.error is not None
    assert "no parameter 'distance'" in p.call.error and "distance_m" in p.call.error
    p = parse_actions("move_forward(1, distance_m=2)", SPECS)
    assert p.call is not None and p.call.error is not None
    assert "given twice" in p.call.error


def test_no_argument_action() -> None:
    p = parse_actions("seewhat()", SPECS)
    assert p.call is not None
    assert p.call.name == "seewhat" and p.call.arguments == {} and p.call.error is None


def test_first_action_runs_later_ones_ignored_and_progress_kept() -> None:
    text = (
        "I see a red box ahead.\n"
        "Action: move_forward(1.0)\n"
        "- seewhat()\n"
        "Then I will look again.\n"
        "finishtask()"
    )
    p = parse_actions(text, SPECS)
    assert p.call is not None and p.call.name == "move_forward"
    assert p.call.arguments == {"distance_m": 1.0}
    assert p.ignored == ("seewhat()", "finishtask()")
    assert not p.finished
    assert p.progress == "I see a red box ahead.\nThen I will look again."
    assert "ignored: seewhat(), finishtask()" in p.feedback()


def test_finishtask_ends_the_task() -> None:
    p = parse_actions("All done, the box is reached.\nfinishtask()", SPECS)
    assert p.finished
    assert p.call is None
    assert p.progress == "All done, the box is reached."
    assert p.has_action


def test_unknown_action_is_an_error_never_a_call() -> None:
    p = parse_actions("fly_away(10)\nmove_forward(1.0)", SPECS)
    assert p.call is None
    assert len(p.errors) == 1
    assert "fly_away" in p.errors[0]
    for name in ("move_forward", "say", "seewhat", "follow_line", "finishtask()"):
        assert name in p.errors[0]
    assert p.ignored == ("move_forward(1.0)",)
    assert "fly_away" in p.feedback()


def test_prose_without_actions() -> None:
    text = "I think (maybe) the box is red. Call seewhat() later, when ready."
    p = parse_actions(text, SPECS)
    assert p.call is None and not p.finished and not p.has_action
    assert p.progress == text
    assert p.feedback() == ""


def test_fenced_and_backticked_actions() -> None:
    p = parse_actions("```\nmove_forward(0.5)\n```", SPECS)
    assert p.call is not None and p.call.arguments == {"distance_m": 0.5}
    assert p.progress == ""
    p = parse_actions("1. `follow_line('red')`", SPECS)
    assert p.call is not None and p.call.arguments == {"colour": "red"}


def test_lists_and_objects_are_literals() -> None:
    spec = ToolSpec(
        "track",
        "Track a box.",
        {"type": "object", "properties": {"bbox": {"type": "array"}, "opts": {"type": "object"}}},
    )
    p = parse_actions('track([1, 2, 3, 4], {"fast": true})', [spec])
    assert p.call is not None
    assert p.call.arguments == {"bbox": [1, 2, 3, 4], "opts": {"fast": True}}


def test_call_ids_differ_per_action() -> None:
    a = parse_actions("move_forward(1.0)", SPECS).call
    b = parse_actions("move_forward(1.0)", SPECS).call
    assert a is not None and b is not None and a.id != b.id


def test_render_catalogue() -> None:
    text = render_catalogue(SPECS)
    assert (
        "- move_forward(distance_m: number, speed_mps: number = 0.2) - Drive straight ahead."
        in text
    )
    assert "distance_m: How far to drive, in metres." in text
    assert "Longer text" not in text
    assert "- seewhat() - Look through the camera." in text
    assert "- say(text: string, loud: boolean = None) - Speak to the person." in text
    assert 'follow_line(colour: "red" | "black")' in text
    assert "finishtask()" in text
    assert "exactly one action per reply as name(args)" in text
    assert "write finishtask() when done" in text


def test_rendered_signature_parses_back() -> None:
    """A call written the way the catalogue shows it is understood."""
    p = parse_actions("move_forward(distance_m=1.2, speed_mps=0.2)", SPECS)
    assert p.call is not None and p.call.arguments == {"distance_m": 1.2, "speed_mps": 0.2}


def test_labels_and_trailing_comments() -> None:
    for line in (
        "Next action: move_forward(1.0)",
        "Step 2: move_forward(1.0)",
        "\u52a8\u4f5c\uff1amove_forward(1.0)",
        "move_forward(1.0)  # drive one metre",
        "move_forward(1.0) // drive (slowly)",
        "move_forward(1.0);",
    ):
        p = parse_actions(line, SPECS)
        assert p.call is not None, line
        assert p.call.arguments == {"distance_m": 1.0}, line
        assert p.progress == "", line
    p = parse_actions("move_forward(1.0) and then look around", SPECS)
    assert p.call is None and p.progress == "move_forward(1.0) and then look around"


def test_observation_text() -> None:
    p = parse_actions("move_forward(1.0)\nseewhat()", SPECS)
    assert p.call is not None
    text = observation_text(p.call, True, "drove 1.00 m", p)
    assert text.splitlines()[0] == "Result of move_forward(distance_m=1.0): ok"
    assert "drove 1.00 m" in text and "ignored: seewhat()" in text
    assert text.endswith("or finishtask() when the task is done.")
    failed = observation_text(p.call, False, "blocked by an obstacle")
    assert failed.startswith("Result of move_forward(distance_m=1.0): failed\nblocked")


@pytest.mark.parametrize(
    "line",
    [
        "move_forward(0.3) seewhat()",
        "move_forward(0.3); seewhat()",
        "move_forward(0.3), then seewhat()",
        "move_forward(0.3)，然后 seewhat()",
        "`move_forward(0.3)` `seewhat()`",
        "Action: move_forward(0.3) and seewhat().",
    ],
)
def test_two_actions_on_one_line_run_the_first_and_report_the_second(line: str) -> None:
    """Several actions on one line are a list of actions, as on several lines (A5): the
    first runs, the others are reported as ignored; before, the line was taken for prose
    and became the task's reply with nothing run."""
    p = parse_actions(line, SPECS)
    assert p.call is not None and p.call.name == "move_forward", line
    assert p.call.arguments == {"distance_m": 0.3} and p.call.error is None, line
    assert p.ignored == ("seewhat()",), line
    assert p.progress == "", line


def test_full_width_brackets_and_commas_are_read_as_ascii() -> None:
    p = parse_actions("move_forward（0.5， speed_mps=0.3）", SPECS)
    assert p.call is not None and p.call.error is None
    assert p.call.arguments == {"distance_m": 0.5, "speed_mps": 0.3}
    # a full-width comma inside a string argument is the person's text: kept
    p = parse_actions('say("你好，世界")', SPECS)
    assert p.call is not None and p.call.arguments == {"text": "你好，世界"}


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ('move_forward({"distance_m": 0.3)', "does not match"),
        ("move_forward(0.3", "never closed"),
        ("Action: move_forward(0.3,, 0.2)", "syntax"),
    ],
)
def test_a_known_action_whose_arguments_do_not_parse_is_a_failed_call(line: str, why: str) -> None:
    """Before, such a line was prose: the broken action became the reply, nothing ran and the
    model was never told. Now it is a call that is never run, with an error naming why and
    how to write it."""
    p = parse_actions(line, SPECS)
    assert p.call is not None and p.call.name == "move_forward", line
    assert p.call.error is not None and why in p.call.error, p.call.error
    assert "do not parse" in p.call.error
    assert "write it as move_forward(distance_m: number, speed_mps: number = 0.2)" in (p.call.error)
    assert p.has_action


@pytest.mark.parametrize(
    ("text", "mention"),
    [
        (
            "好的，我先向前走0.3米 move_forward(0.3)，然后停下。",
            "move_forward(0.3)",
        ),
        (
            "好的，我先向前走0.3米：move_forward(0.3)",
            "move_forward(0.3)",
        ),
        ("I already did move_forward(1.0), so now I look.", "move_forward(1.0)"),
        ("move_forward(1.0) and then look around", "move_forward(1.0)"),
        ("任务完成 finishtask()", "finishtask()"),
    ],
)
def test_an_action_inside_a_sentence_is_a_mention_never_run(text: str, mention: str) -> None:
    """A call a sentence mentions is never run (models echo what already ran), and the
    model is told to write the action on its own line instead of the sentence being taken
    as the answer."""
    p = parse_actions(text, SPECS)
    assert p.call is None and not p.finished and not p.has_action
    assert p.mentions == (mention,)
    assert p.progress == text
    feedback = p.mention_feedback()
    assert mention in feedback and "own line" in feedback and "finishtask()" in feedback


def test_mentions_do_not_count_next_to_an_action_line() -> None:
    p = parse_actions("I did seewhat() before.\nmove_forward(0.5)", SPECS)
    assert p.call is not None and p.call.arguments == {"distance_m": 0.5}
    assert p.progress == "I did seewhat() before."


TURN = ToolSpec(
    "turn_left",
    "Turn left in place.",
    {
        "type": "object",
        "properties": {"angle_deg": {"type": "number"}, "speed_dps": {"type": "number"}},
        "required": ["angle_deg"],
    },
)


@pytest.mark.parametrize(
    ("line", "arguments"),
    [
        ("turn_left(90 degrees)", {"angle_deg": 90}),
        ("turn_left(-45°)", {"angle_deg": -45}),
        ("turn_left(angle_deg=90 deg, speed_dps=30 deg/s)", {"angle_deg": 90, "speed_dps": 30}),
        ("turn_left(90度)", {"angle_deg": 90}),
        ("move_forward(1 m)", {"distance_m": 1}),
        ("move_forward(1m)", {"distance_m": 1}),
        ("move_forward(2 meters, 0.3 m/s)", {"distance_m": 2, "speed_mps": 0.3}),
        ("move_forward(50 cm)", {"distance_m": 0.5}),  # the unit the name declares
    ],
)
def test_a_number_with_its_unit_is_the_number_in_the_arguments_unit(
    line: str, arguments: dict[str, float]
) -> None:
    """The 0.5B brain wrote "turn left 90 degrees" as ``turn_left(90 degrees)``; Python's
    syntax refused it, the turn never ran and the task ended on a bound (2026-12-05)."""
    p = parse_actions(line, [*SPECS, TURN])
    assert p.call is not None and p.call.error is None, p.call
    assert p.call.arguments == arguments
    assert p.call.raw_arguments == line  # the source as written


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("move_forward(90 degrees)", '"90 degrees" is an angle, but distance_m takes a length'),
        ("say(5 m, true)", '"5 m" is a length, but text takes no unit'),
    ],
)
def test_a_unit_of_another_kind_is_a_failed_call_that_says_so(line: str, why: str) -> None:
    p = parse_actions(line, [*SPECS, TURN])
    assert p.call is not None and p.call.error is not None, p.call
    assert why in p.call.error, p.call.error
    assert p.call.arguments == {}


def test_units_inside_strings_stay_text() -> None:
    p = parse_actions('say("walk 5 m north", loud=1 m)', SPECS)
    assert p.call is not None and p.call.error is not None
    assert "loud takes no unit" in p.call.error  # the string's "5 m" was not read
    q = parse_actions('say("walk 5 m north")', SPECS)
    assert q.call is not None and q.call.arguments == {"text": "walk 5 m north"}
