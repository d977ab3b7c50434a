"""Prompt-lookup speculative decoding of the local server (issue 13, first motion).

The lookup itself is tested on token arrays. The decoding runs the real pinned GGUF in this
process (``local_model``: skipped with the reason when ``make test-local`` has not set it up):
with guesses the model must write exactly the tokens it writes without them, in fewer
evaluations.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from tests.llm.local.test_brain import _local_ready
from tests.llm.local.test_sampler import small_llama

from loopact.llm.local.draft import PromptLookupDraft, install, lookup


def ids(*values: int) -> np.ndarray[Any, np.dtype[np.intc]]:
    return np.array(values, dtype=np.intc)


def test_lookup_guesses_what_followed_every_earlier_occurrence_alike() -> None:
    # "7 8" occurred at 0 and at 5, followed by "1 2 3" and "1 2 4": "1 2" is agreed
    seq = ids(7, 8, 1, 2, 3, 7, 8, 1, 2, 4, 9, 7, 8)
    got = lookup(seq, max_ngram=2, min_ngram=2, max_guesses=10)
    assert got.tolist() == [1, 2]
    assert got.dtype == np.intc
    assert lookup(seq, max_ngram=2, min_ngram=2, max_guesses=1).tolist() == [1]


def test_lookup_guesses_nothing_where_the_earlier_occurrences_differ() -> None:
    # after "7 8" came 1 once and 3 once: as after '{"name": "' the examples name other tools
    assert lookup(ids(7, 8, 1, 7, 8, 3, 7, 8), max_ngram=2, min_ngram=2, max_guesses=5).size == 0


def test_lookup_takes_fewer_guesses_from_a_single_occurrence() -> None:
    seq = ids(7, 8, 1, 2, 3, 4, 5, 6, 9, 7, 8)
    assert lookup(seq, 2, 2, max_guesses=10, single_guesses=3).tolist() == [1, 2, 3]
    assert lookup(seq, 2, 2, max_guesses=10).tolist() == [1, 2, 3, 4, 5, 6, 9, 7, 8]
    assert lookup(seq, 2, 2, max_guesses=10, single_guesses=0).size == 0


def test_lookup_prefers_the_longest_run_of_last_tokens() -> None:
    # "5 7 8" occurred once, at 0; "7 8" also at 5, followed by something else
    seq = ids(5, 7, 8, 1, 2, 7, 8, 3, 4, 5, 7, 8)
    assert lookup(seq, max_ngram=3, min_ngram=2, max_guesses=2).tolist() == [1, 2]
    assert lookup(seq, max_ngram=2, min_ngram=2, max_guesses=2).size == 0


def test_lookup_guesses_nothing_without_an_earlier_occurrence() -> None:
    assert lookup(ids(1, 2, 3, 4), max_ngram=3, min_ngram=2, max_guesses=5).size == 0
    # a single repeated token is below min_ngram
    assert lookup(ids(1, 9, 2, 9), max_ngram=3, min_ngram=2, max_guesses=5).size == 0
    assert lookup(ids(1, 9, 2, 9), max_ngram=3, min_ngram=1, max_guesses=5).tolist() == [2, 9]
    assert lookup(ids(4), max_ngram=3, min_ngram=1, max_guesses=5).size == 0


def test_agreed_guesses_stop_at_the_end_of_the_context() -> None:
    # "1 2" at 0 and at 3, both followed by "3 1 2"; then the later one reaches the end
    seq = ids(1, 2, 3, 1, 2, 3, 1, 2)
    assert lookup(seq, max_ngram=2, min_ngram=2, max_guesses=10).tolist() == [3, 1, 2]


class _Pieces:
    """Token id -> text, the part of ``llama_cpp.Llama`` the draft reads besides the ids."""

    def __init__(self, pieces: dict[int, bytes]) -> None:
        self.pieces = pieces
        self._loopact_all_logits = False

    def detokenize(self, tokens: list[int]) -> bytes:
        return b"".join(self.pieces[t] for t in tokens)


def test_draft_stops_guessing_before_a_line_break_and_asks_for_all_logits() -> None:
    pieces = _Pieces({1: b'{"', 2: b"name", 3: b'": "', 4: b"}}", 5: b"\nUser", 6: b"x"})
    draft = PromptLookupDraft(pieces, max_ngram=2, min_ngram=2, single_guesses=6)
    assert draft(ids(2, 3, 6, 4, 5, 1, 2, 3)).tolist() == [6, 4]
    assert pieces._loopact_all_logits is True and draft.guessed == 2
    assert draft(ids(1, 2, 3)).size == 0
    assert pieces._loopact_all_logits is False


def test_draft_rejects_bad_settings() -> None:
    with pytest.raises(ValueError, match="min_ngram"):
        PromptLookupDraft(object(), max_ngram=2, min_ngram=3)
    with pytest.raises(ValueError, match="max_guesses"):
        PromptLookupDraft(object(), max_guesses=0)
    with pytest.raises(ValueError, match="single_guesses"):
        PromptLookupDraft(object(), single_guesses=-1)


GRAMMAR = r"""
root ::= "{\"name\": \"" name "\", \"arguments\": {\"" key "\": " num "}}"
name ::= "move_forward" | "turn_left" | "turn_right"
key ::= "distance_m" | "angle_deg"
num ::= [0-9]+ ("." [0-9])?
"""
PROMPT = (
    "<|im_start|>system\nYou drive a robot. Answer with one JSON tool call, for example:\n"
    '{"name": "move_forward", "arguments": {"distance_m": 1.0}}\n'
    '{"name": "turn_left", "arguments": {"angle_deg": 45}}<|im_end|>\n'
    "<|im_start|>user\nplease turn to your left by ninety degrees<|im_end|>\n"
    "<|im_start|>assistant\n"
)


@pytest.mark.local_model
@pytest.mark.skipif(_local_ready() is not None, reason=str(_local_ready()))
@pytest.mark.timeout(300)
def test_guessed_tokens_are_the_models_own_in_fewer_evaluations(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import llama_cpp

    from loopact.llm.local.sampler import wrap

    llm = small_llama()
    monkeypatch.setattr(llama_cpp.Llama, "eval", llama_cpp.Llama.eval)  # restored afterwards
    install()
    evals: list[int] = []
    patched_eval = llama_cpp.Llama.eval

    def counting(self: Any, tokens: Any) -> None:
        evals.append(len(tokens))
        patched_eval(self, tokens)

    monkeypatch.setattr(llama_cpp.Llama, "eval", counting)
    original_init = llama_cpp.Llama._init_sampler

    def complete(draft: bool) -> tuple[str, int, int]:
        monkeypatch.setattr(llama_cpp.Llama, "_init_sampler", wrap(original_init, draft=draft))
        llm.reset()
        evals.clear()
        grammar = llama_cpp.LlamaGrammar.from_string(GRAMMAR, verbose=False)
        out: Any = llm.create_completion(
            PROMPT, grammar=grammar, temperature=0.0, max_tokens=48, repeat_penalty=1.1
        )
        return str(out["choices"][0]["text"]), int(out["usage"]["completion_tokens"]), len(evals)

    plain, plain_tokens, plain_evals = complete(draft=False)
    assert llm.draft_model is None
    guessed, guessed_tokens, guessed_evals = complete(draft=True)
    assert isinstance(llm.draft_model, PromptLookupDraft) and llm.draft_model.guessed > 0
    assert guessed == plain
    assert json.loads(guessed)["name"] == "turn_left", guessed
    assert guessed_tokens == plain_tokens
    # without guesses one evaluation per token written (and one for the prompt); fewer with
    assert plain_evals >= plain_tokens
    assert guessed_evals < plain_evals, (guessed_evals, plain_evals)
    # a request with a temperature decodes without guesses
    grammar = llama_cpp.LlamaGrammar.from_string(GRAMMAR, verbose=False)
    llm.create_completion(PROMPT, grammar=grammar, temperature=0.7, max_tokens=8, seed=1)
    assert llm.draft_model is None
