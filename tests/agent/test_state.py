"""The conversation's history marks (SPEC B6: a refused turn is removed before going on)."""

from __future__ import annotations

from loopact.agent.state import Conversation, HourlyBudget
from loopact.events import EventBus
from loopact.llm.messages import Message


def conversation(system: str = "sys") -> Conversation:
    return Conversation(system, EventBus(), HourlyBudget(rounds=10, tokens=1000))


def test_drop_after_removes_only_what_came_after_the_mark() -> None:
    conv = conversation()
    conv.append(Message.user("first"))
    mark = conv.last_message()
    conv.append(Message.user("refused"))
    conv.append(Message.user("its input snapshot"))
    assert conv.drop_after(mark) == 2
    assert [m.text for m in conv.history] == ["sys", "first"]


def test_drop_after_an_empty_history_mark_removes_everything() -> None:
    conv = conversation(system="")
    mark = conv.last_message()
    assert mark is None
    conv.append(Message.user("refused"))
    assert conv.drop_after(mark) == 1
    assert conv.history == []


def test_a_mark_that_compression_replaced_removes_nothing() -> None:
    """Compression rewrote the history meanwhile: cutting at a guess could lose the summary."""
    conv = conversation()
    conv.append(Message.user("first"))
    mark = conv.last_message()
    conv.replace([Message.system("sys"), Message.user("summary"), Message.user("refused")])
    assert conv.drop_after(mark) == 0
    assert [m.text for m in conv.history] == ["sys", "summary", "refused"]


def test_an_equal_but_other_message_is_not_the_mark() -> None:
    """Identity, not equality: the same words said twice are two turns."""
    conv = conversation()
    conv.append(Message.user("again"))
    mark = conv.last_message()
    conv.append(Message.user("again"))
    assert conv.drop_after(mark) == 1
    assert [m.text for m in conv.history] == ["sys", "again"]
