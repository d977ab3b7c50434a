"""Prompt-lookup speculative decoding for the local server's tool calls (issue 13, first motion).

A tool call of the local brain is mostly text the prompt already holds: the catalogue's
examples spell ``{"name": "move_forward", "arguments": {"distance_m": 1.0}}`` and the model
writes the same tokens again. Prompt-lookup decoding (Saxena 2023, "prompt lookup decoding";
llama.cpp's ``--lookup`` and llama-cpp-python's ``LlamaPromptLookupDecoding``) guesses the next
tokens by finding the last few generated tokens earlier in the context and copying what
followed them there. The model then evaluates the guesses in one batch, which on a CPU costs
little more than one token (the weights are read once), and keeps the guesses up to the first
one that differs from what it samples itself. The output is the same token for token: every
token is still the model's own pick at its position.

llama-cpp-python's ``Llama.generate`` runs this loop when ``Llama.draft_model`` is set, but
its constructor then turns on ``logits_all``, which keeps the logits of every prompt token
(151,936 floats each: 5 GB at an 8,192-token context) and computes the output layer for the
whole 5,000-token prompt. :func:`install` instead sets the draft model per request, only for
the greedy grammar requests :mod:`loopact.llm.local.sampler` samples (tool calls), and makes
only the batches that carry guesses return logits for each of their tokens.

This module runs only in the local server's child process (it imports ``llama_cpp``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

#: Longest run of last tokens looked up; shortest that counts; most guesses when the earlier
#: occurrences agree; most guesses from a single earlier occurrence. Chosen on the tool calls
#: and replies of 8 benchmark instructions (bench/HISTORY.md, local brain, issue 13 third pass).
MAX_NGRAM = 4
MIN_NGRAM = 2
MAX_GUESSES = 10
SINGLE_GUESSES = 6


class PromptLookupDraft:
    """Guesses the next tokens from where the context's last tokens occurred before.

    Called by ``Llama.generate`` with the tokens so far. Guesses come from :func:`lookup`
    and stop before the first token that holds a line break (a call ends at its closing
    brace; the catalogue's examples go on with the next line).

    Args:
        llama: The ``llama_cpp.Llama`` whose next evaluation must return the logits of every
            guessed token (its ``_loopact_all_logits`` is set when guesses are returned).
        max_ngram: Longest run of last tokens looked up (>= min_ngram).
        min_ngram: Shortest run that counts as a match (>= 1).
        max_guesses: Most tokens guessed when several earlier occurrences agree (>= 1).
        single_guesses: Most tokens guessed from a single earlier occurrence (>= 0).

    Raises:
        ValueError: An argument is out of range.
    """

    def __init__(
        self,
        llama: Any,
        max_ngram: int = MAX_NGRAM,
        min_ngram: int = MIN_NGRAM,
        max_guesses: int = MAX_GUESSES,
        single_guesses: int = SINGLE_GUESSES,
    ) -> None:
        if not 1 <= min_ngram <= max_ngram or max_guesses < 1 or single_guesses < 0:
            raise ValueError(
                "need 1 <= min_ngram <= max_ngram, max_guesses >= 1 and single_guesses >= 0, "
                f"got {min_ngram}, {max_ngram}, {max_guesses}, {single_guesses}"
            )
        self._llama = llama
        self.max_ngram, self.min_ngram = max_ngram, min_ngram
        self.max_guesses, self.single_guesses = max_guesses, single_guesses
        self._breaks: dict[int, bool] = {}
        #: Tokens guessed so far (kept or not).
        self.guessed = 0

    def __call__(self, input_ids: npt.NDArray[np.intc], /, **_: Any) -> npt.NDArray[np.intc]:
        guesses = lookup(
            input_ids, self.max_ngram, self.min_ngram, self.max_guesses, self.single_guesses
        )
        for i, token in enumerate(guesses.tolist()):
            if self._line_break(token):
                guesses = guesses[:i]
                break
        self.guessed += len(guesses)
        # the batch that evaluates the guesses needs the logits at each of its positions
        self._llama._loopact_all_logits = len(guesses) > 0
        return guesses

    def _line_break(self, token: int) -> bool:
        known = self._breaks.get(token)
        if known is None:
            known = b"\n" in self._llama.detokenize([token])
            self._breaks[token] = known
        return known


def lookup(
    ids: npt.NDArray[np.intc],
    max_ngram: int,
    min_ngram: int,
    max_guesses: int,
    single_guesses: int | None = None,
) -> npt.NDArray[np.intc]:
    """What followed the last tokens of ``ids`` where they occurred before.

    Tries the last ``max_ngram`` tokens, then shorter runs down to ``min_ngram``. For the
    longest run that occurred earlier: with one earlier occurrence, the up to
    ``single_guesses`` tokens that followed it; with several, the tokens that followed all
    of them alike, up to ``max_guesses`` (none when they differ at once: after
    ``{"name": "`` the catalogue's examples name different tools, after a tool's name they
    all go on with ``", "arguments": {"`` and its first argument).

    Args:
        ids: Token ids, oldest first (1-D).
        max_ngram: Longest run of last tokens tried first.
        min_ngram: Shortest run tried.
        max_guesses: Most tokens returned.
        single_guesses: Most tokens returned from a single occurrence (``max_guesses`` when
            None).

    Returns:
        Token ids (``np.intc``), empty when nothing is worth guessing.
    """
    n = int(ids.shape[0])
    single = max_guesses if single_guesses is None else min(single_guesses, max_guesses)
    for size in range(min(max_ngram, n - 1), min_ngram - 1, -1):
        tail = ids[n - size :]
        # windows starting before the tail itself, each followed by at least one token
        windows = np.lib.stride_tricks.sliding_window_view(ids[: n - 1], size)
        hits = np.flatnonzero((windows == tail).all(axis=1)) + size
        if not hits.size:
            continue
        if hits.size == 1:
            start = int(hits[0])
            return np.asarray(ids[start : min(start + single, n)], dtype=np.intc)
        agreed = 0
        while agreed < max_guesses:
            at = hits + agreed
            if int(at[-1]) >= n:
                break
            column = ids[at]
            if not (column == column[0]).all():
                break
            agreed += 1
        start = int(hits[0])
        return np.asarray(ids[start : start + agreed], dtype=np.intc)
    return np.empty(0, dtype=np.intc)


def eval_all_logits(llama: Any, tokens: list[int]) -> None:
    """``Llama.eval`` of one batch that returns the logits at every position of it.

    The same bookkeeping as llama-cpp-python's ``Llama.eval`` (KV cache trimmed to
    ``n_tokens``, tokens recorded in ``input_ids``), without copying logits into
    ``Llama.scores`` (sampling reads them from the context, ``llama_get_logits_ith``).

    Args:
        llama: The ``llama_cpp.Llama``.
        tokens: At most ``n_batch`` token ids.
    """
    n_past = int(llama.n_tokens)
    llama._ctx.kv_cache_seq_rm(-1, n_past, -1)
    llama._batch.set_batch(batch=tokens, n_past=n_past, logits_all=True)
    llama._ctx.decode(llama._batch)
    llama.input_ids[n_past : n_past + len(tokens)] = tokens
    llama.n_tokens = n_past + len(tokens)
    llama._requires_eval = False


def wrap_eval(original: Any) -> Any:
    """``Llama.eval`` that evaluates a batch of guesses with :func:`eval_all_logits`.

    Args:
        original: llama-cpp-python's ``Llama.eval`` (every other evaluation).
    """

    def _eval(self: Any, tokens: Any) -> None:
        guessed = getattr(self, "_loopact_all_logits", False)
        self._loopact_all_logits = False  # for this one evaluation only
        if guessed and len(tokens) <= self.n_batch:
            eval_all_logits(self, list(tokens))
        else:
            original(self, tokens)

    _eval._loopact_draft = True  # type: ignore[attr-defined]
    return _eval


def install() -> None:
    """Make ``llama_cpp.Llama.eval`` return per-token logits for batches of guesses.

    The draft model itself is set per request by :func:`loopact.llm.local.sampler.wrap`
    (``Llama.draft_model``: a :class:`PromptLookupDraft` for greedy grammar requests, None
    for every other). Idempotent; for the server process only.
    """
    import llama_cpp

    original = llama_cpp.Llama.eval
    if not getattr(original, "_loopact_draft", False):
        llama_cpp.Llama.eval = wrap_eval(original)
