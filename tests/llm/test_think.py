"""The <think> splitter (SPEC B5)."""

from __future__ import annotations

from loopact.llm.think import ThinkSplitter, partial_tag_suffix


def run(
    chunks: list[str], start_in_reasoning: bool = False
) -> tuple[str, str, list[tuple[str, str]]]:
    s = ThinkSplitter(start_in_reasoning)
    segments: list[tuple[str, str]] = []
    for c in chunks:
        segments.extend(s.feed(c))
    segments.extend(s.flush())
    reasoning = "".join(t for k, t in segments if k == "reasoning")
    text = "".join(t for k, t in segments if k == "text")
    return reasoning, text, segments


def test_whole_tags() -> None:
    reasoning, text, _ = run(["<think>plan it</think>Hello"])
    assert reasoning == "plan it"
    assert text == "Hello"


def test_tags_split_across_chunks() -> None:
    reasoning, text, _ = run(["<th", "ink>step ", "one</thi", "nk>The ", "answer"])
    assert reasoning == "step one"
    assert text == "The answer"


def test_every_split_point() -> None:
    full = "before<think>inner thoughts</think>after"
    for i in range(len(full)):
        for j in range(i, len(full)):
            reasoning, text, _ = run([full[:i], full[i:j], full[j:]])
            assert reasoning == "inner thoughts", (i, j)
            assert text == "beforeafter", (i, j)


def test_one_char_chunks() -> None:
    reasoning, text, _ = run(list("<think>a<b</think>x<y"))
    assert reasoning == "a<b"
    assert text == "x<y"


def test_text_that_looks_like_a_tag_start_is_released() -> None:
    s = ThinkSplitter()
    assert s.feed("a <t") == [("text", "a ")]
    assert s.feed("able>") == [("text", "<table>")]


def test_unclosed_think_stays_reasoning() -> None:
    reasoning, text, _ = run(["<think>still thinking"])
    assert reasoning == "still thinking"
    assert text == ""


def test_stray_close_before_any_text_makes_reasoning() -> None:
    reasoning, text, _ = run(["thinking here</think>answer"])
    assert reasoning == "thinking here"
    assert text == "answer"


def test_segments_keep_stream_order() -> None:
    _, _, segments = run(["A<think>r1</think>B<think>r2</think>C"])
    assert segments == [
        ("text", "A"),
        ("reasoning", "r1"),
        ("text", "B"),
        ("reasoning", "r2"),
        ("text", "C"),
    ]


def test_start_in_reasoning() -> None:
    reasoning, text, _ = run(["pondering</think>done"], start_in_reasoning=True)
    assert reasoning == "pondering"
    assert text == "done"


def test_partial_tag_suffix() -> None:
    assert partial_tag_suffix("abc<th", "<think>") == 3
    assert partial_tag_suffix("abc<", "<think>") == 1
    assert partial_tag_suffix("abc", "<think>") == 0
    assert partial_tag_suffix("<think>", "<think>") == 0
