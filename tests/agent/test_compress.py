"""Context compression planning (SPEC E1): pairs are never split, summaries are vetted."""

from __future__ import annotations

import random

import pytest

from loopact.agent.compress import (
    IMAGE_TOKENS,
    CompressionPlan,
    accept_summary,
    estimate_tokens,
    hard_trim,
    is_summary,
    pairing_problems,
    plan_compression,
    summary_message,
    summary_request_messages,
)
from loopact.llm.messages import Image, Message, ToolCall

IMG = Image(b"\xff\xd8fake-jpeg", width_px=320, height_px=240)


def random_history(rng: random.Random) -> list[Message]:
    """A well-formed history: turns of rounds with parallel calls, results in any order."""
    h = [Message.system("You are a robot. " * rng.randint(1, 5))]
    if rng.random() < 0.3:
        h.append(summary_message("Earlier we mapped the room. " * rng.randint(1, 10)))
    n_call = 0
    for t in range(rng.randint(1, 5)):
        images = [IMG] if rng.random() < 0.2 else []
        h.append(Message.user(f"task {t} " + "words " * rng.randint(1, 30), images=images))
        for _r in range(rng.randint(0, 6)):
            calls = []
            for _ in range(rng.choice([1, 1, 2, 3])):
                n_call += 1
                calls.append(ToolCall(f"call_{n_call}", rng.choice(["look", "move"]), {"n": 1}))
            h.append(Message.assistant("thinking " * rng.randint(0, 8), tool_calls=calls))
            results = [Message.tool(c.id, c.name, "result " * rng.randint(1, 80)) for c in calls]
            rng.shuffle(results)
            h.extend(results)
            if rng.random() < 0.15:  # an injected user message between rounds
                h.append(Message.user("also: " + "hey " * rng.randint(1, 5)))
        if rng.random() < 0.7:
            h.append(Message.assistant("done " * rng.randint(1, 20)))
    return h


def ids(messages: list[Message] | tuple[Message, ...]) -> list[int]:
    return [id(m) for m in messages]


def check_plan(history: list[Message], plan: CompressionPlan) -> list[Message]:
    n_sys = len(plan.system)
    body = history[n_sys:]
    assert ids(plan.system) == ids(history[:n_sys])
    assert all(m.role == "system" for m in plan.system) and body[0].role != "system"
    # Nothing lost or duplicated: head + pinned + tail is exactly the body; tail is its end.
    assert sorted(ids(plan.head) + ids(plan.pinned) + ids(plan.tail)) == sorted(ids(body))
    assert ids(plan.tail) == ids(body[len(body) - len(plan.tail) :])
    assert plan.head and plan.tail and plan.tail[0].role != "tool"
    new = [*plan.system, *plan.pinned, summary_message("short"), *plan.tail]
    assert pairing_problems(new) == []
    # The latest real user message (the current goal) survives.
    last_user = [m for m in body if m.role == "user" and not is_summary(m)]
    if last_user:
        assert id(last_user[-1]) in ids(new)
    return new


def test_random_histories_never_split_pairs_or_orphan_results() -> None:
    rng = random.Random(1234)
    planned = pinned = 0
    for _ in range(600):
        history = random_history(rng)
        assert pairing_problems(history) == []
        for keep in (1, 2, 3):
            plan = plan_compression(history, keep_recent_turns=keep)
            if plan is None:
                continue
            planned += 1
            pinned += bool(plan.pinned)
            check_plan(history, plan)
            if not plan.pinned:
                # Turn cut: the latest turn is kept whole.
                body = history[len(plan.system) :]
                starts = [i for i, m in enumerate(body) if m.role == "user" and not is_summary(m)]
                assert ids(body[starts[-1] :]) == ids(
                    plan.tail[len(plan.tail) - (len(body) - starts[-1]) :]
                )
        for limit in (50, 200, 800):
            trimmed = hard_trim(history, limit, estimate_tokens)
            assert pairing_problems(trimmed) == []
            assert trimmed[0] is history[0]
            pos = [ids(history).index(id(m)) for m in trimmed]
            assert pos == sorted(pos)  # a subsequence, order kept, nothing new
            if trimmed != history:
                assert trimmed[-1] is history[-1]
    assert planned > 500 and pinned > 50  # both kinds of cut were exercised


def test_long_single_turn_pins_the_goal_and_keeps_last_rounds() -> None:
    h = [Message.system("sys"), Message.user("Find the red box")]
    for i in range(10):
        calls = [ToolCall(f"a{i}", "look", {}), ToolCall(f"b{i}", "detect", {})]
        h.append(Message.assistant(f"round {i}", tool_calls=calls))
        h += [Message.tool(f"b{i}", "detect", "x" * 400), Message.tool(f"a{i}", "look", "y" * 400)]
    plan = plan_compression(h, keep_recent_turns=2, keep_recent_rounds=2)
    assert plan is not None
    assert [m.text for m in plan.pinned] == ["Find the red box"]
    assert [m.text for m in plan.tail if m.role == "assistant"] == ["round 8", "round 9"]
    assert len(plan.head) == 8 * 3
    new = check_plan(h, plan)
    assert [m.role for m in new[:3]] == ["system", "user", "user"] and is_summary(new[2])


def test_turn_cut_keeps_recent_turns_whole() -> None:
    h = [Message.system("sys")]
    for t in range(4):
        h.append(Message.user(f"task {t}"))
        h.append(Message.assistant("", tool_calls=[ToolCall(f"c{t}", "look", {})]))
        h.append(Message.tool(f"c{t}", "look", "seen " * 50))
        h.append(Message.assistant(f"answer {t}"))
    plan = plan_compression(h, keep_recent_turns=2)
    assert plan is not None and not plan.pinned
    assert plan.tail[0].text == "task 2" and len(plan.tail) == 8 and len(plan.head) == 8


def test_nothing_to_cut_returns_none() -> None:
    assert plan_compression([Message.system("s")]) is None
    assert plan_compression([Message.system("s"), Message.user("hi")]) is None
    one_round = [
        Message.system("s"),
        Message.user("go"),
        Message.assistant("", tool_calls=[ToolCall("c", "move", {})]),
        Message.tool("c", "move", "ok"),
    ]
    assert plan_compression(one_round) is None
    # Only an old summary before the turn: re-summarising it alone is pointless.
    assert plan_compression([Message.system("s"), summary_message("old"), *one_round[1:]]) is None


def test_unanswered_call_does_not_block_or_orphan() -> None:
    h = [Message.system("s")]
    for t in range(3):
        h += [
            Message.user(f"t{t}"),
            Message.assistant("", tool_calls=[ToolCall(f"c{t}", "look", {})]),
            Message.tool(f"c{t}", "look", "r" * 300),
        ]
    h.insert(2, Message.assistant("", tool_calls=[ToolCall("lost", "move", {})]))  # no result
    plan = plan_compression(h, keep_recent_turns=1)
    assert plan is not None
    new = [*plan.system, *plan.pinned, summary_message("s"), *plan.tail]
    assert not [p for p in pairing_problems(new) if "has no call" in p]


def plan_for_summary() -> CompressionPlan:
    h = [Message.system("sys")]
    for t in range(3):
        h += [
            Message.user(f"task {t}", images=[IMG]),
            Message.assistant("", tool_calls=[ToolCall(f"c{t}", "look", {"deg": 90})]),
            Message.tool(f"c{t}", "look", f"saw a red box {t} " * 40),
            Message.assistant(f"answer {t}"),
        ]
    plan = plan_compression(h, keep_recent_turns=1)
    assert plan is not None
    return plan


def test_summary_request_is_plain_text_with_goal() -> None:
    plan = plan_for_summary()
    msgs = summary_request_messages(plan, goal="Tidy the lab")
    assert [m.role for m in msgs] == ["system", "user"]
    assert all(not m.tool_calls and not m.images for m in msgs)
    text = msgs[1].text
    assert "Current goal: Tidy the lab" in text
    assert "called look" in text and "saw a red box 0" in text and "sha256:" in text
    assert "task 2" not in text  # the kept turn is not summarised
    assert "Goal" in msgs[0].text and "Open questions" in msgs[0].text


@pytest.mark.parametrize(
    ("message", "finish"),
    [
        (Message.assistant("fine summary"), "length"),
        (Message.assistant("fine summary"), "tool_calls"),
        (Message.assistant("summary", tool_calls=[ToolCall("x", "look", {})]), "stop"),
        (Message.assistant("   "), "stop"),
        (Message.assistant("word " * 5000), "stop"),  # larger than what it replaces
    ],
)
def test_bad_summaries_are_refused(message: Message, finish: str) -> None:
    assert accept_summary(plan_for_summary(), message, finish, estimate_tokens) is None


def test_good_summary_builds_the_new_history_and_rolls() -> None:
    plan = plan_for_summary()
    new = accept_summary(
        plan, Message.assistant("Goal: tidy. Progress: saw boxes."), "stop", estimate_tokens
    )
    assert new is not None
    assert new[0] is plan.system[0] and is_summary(new[1])
    assert "Progress: saw boxes." in new[1].text
    assert ids(new[2:]) == ids(plan.tail)
    assert estimate_tokens(new) < estimate_tokens([*plan.system, *plan.head, *plan.tail])
    # A later compression summarises the old summary again (rolling).
    later = [*new, Message.user("next task"), Message.assistant("ok " * 200)]
    plan2 = plan_compression(later, keep_recent_turns=1)
    assert plan2 is not None and any(is_summary(m) for m in plan2.head)


def test_hard_trim_keeps_pairs_and_goal() -> None:
    h = [Message.system("sys"), Message.user("Patrol")]
    for i in range(6):
        calls = [ToolCall(f"a{i}", "look", {}), ToolCall(f"b{i}", "move", {})]
        h += [Message.assistant("", tool_calls=calls)]
        h += [Message.tool(f"a{i}", "look", "z" * 800), Message.tool(f"b{i}", "move", "ok")]
    trimmed = hard_trim(h, 700, estimate_tokens)
    assert trimmed[:2] == h[:2]
    assert estimate_tokens(trimmed) <= 700
    assert pairing_problems(trimmed) == [] and len(trimmed) < len(h)
    tiny = hard_trim(h, 10, estimate_tokens)  # nothing fits: the smallest valid history
    assert tiny == [h[0], h[1], *h[-3:]]
    assert hard_trim(h, 10**6, estimate_tokens) == h


def test_estimate_tokens_counts_text_images_and_calls() -> None:
    assert estimate_tokens([Message.user("x" * 400)]) == 4 + 100
    assert estimate_tokens([Message.user("", images=[IMG])]) == 4 + IMAGE_TOKENS
    call = ToolCall("c1", "move", {"distance_m": 1.5})
    assert estimate_tokens([Message.assistant("", tool_calls=[call])]) > 4


def test_two_big_rounds_of_one_turn_summarise_the_first() -> None:
    """A task whose rounds are each big (a long file, four camera images) fills the context in
    two rounds. Keeping the last two rounds whole leaves nothing to summarise, so before this
    the history was only ever trimmed: every dropped round was lost with no summary and no
    checkpoint. The latest turn is then cut keeping fewer rounds, down to the last one."""
    h = [Message.system("sys"), Message.user("Read big.txt twice")]
    for i in range(2):
        h.append(Message.assistant("", tool_calls=[ToolCall(f"r{i}", "file_read", {})]))
        h.append(Message.tool(f"r{i}", "file_read", f"part {i} " + "y" * 16_000))
    plan = plan_compression(h, keep_recent_turns=2, keep_recent_rounds=2)
    assert plan is not None
    assert [m.text for m in plan.pinned] == ["Read big.txt twice"]
    assert [m.tool_call_id for m in plan.head if m.role == "tool"] == ["r0"]
    assert [m.tool_call_id for m in plan.tail if m.role == "tool"] == ["r1"]
    check_plan(h, plan)
    # One round only: still nothing to summarise.
    assert plan_compression(h[:4], keep_recent_rounds=2) is None
