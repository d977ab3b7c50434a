"""Greedy grammar-constrained sampling that checks the grammar lazily (issue 13, first motion).

llama-cpp-python's sampler chain applies the GBNF grammar to every token of the vocabulary
(151,936 for Qwen2.5) before each greedy pick: the grammar walks each token's text through
its parse stacks, which on 2 cores costs about as much as the model's own forward pass and
halves the generation speed of a tool call. llama.cpp's own ``common_sampler_sample``
(``common/sampling.cpp``, ``grammar_first = false``) avoids that: it samples without the
grammar, then asks the grammar about that one token only, and applies the grammar to the
whole vocabulary only when the token is rejected. For greedy decoding this picks exactly the
token the full chain would pick (the most likely token overall, when the grammar allows it,
is also the most likely allowed token), so the output is the same, token for token.

:func:`install` makes :class:`llama_cpp.Llama` use :class:`LazyGrammarGreedy` for requests
that are greedy (``temperature`` 0), carry a grammar and no logits processor or mirostat;
every other request keeps llama-cpp-python's chain. This module runs only in the local
server's child process (it imports ``llama_cpp``, which the agent's process never needs).
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from loopact.llm.local.draft import PromptLookupDraft
from loopact.llm.local.draft import install as install_draft

#: ``struct llama_token_data`` (llama.h): ``int32 id; float logit; float p``.
_TOKEN_DATA = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)], align=True)


class LazyGrammarGreedy:
    """A greedy sampler with repetition penalties and a grammar consulted lazily.

    Holds its own llama.cpp penalties and grammar samplers (freed by :meth:`close` or on
    garbage collection). Used through the interface of llama-cpp-python's ``LlamaSampler``:
    :meth:`sample` picks the next token and advances both samplers' state with it.

    Args:
        llama: The ``llama_cpp.Llama`` whose model and vocabulary are used.
        grammar: A ``llama_cpp.LlamaGrammar`` (GBNF text and root rule).
        penalty_last_n: Tokens the repetition penalties look back over.
        penalty_repeat: Repeat penalty (1.0 = off).
        penalty_freq: Frequency penalty (0.0 = off).
        penalty_present: Presence penalty (0.0 = off).

    Raises:
        ValueError: llama.cpp could not parse the grammar.
    """

    def __init__(
        self,
        llama: Any,
        grammar: Any,
        penalty_last_n: int,
        penalty_repeat: float,
        penalty_freq: float,
        penalty_present: float,
    ) -> None:
        import llama_cpp

        self._lib = llama_cpp
        vocab = llama._model.vocab
        self._n_vocab = int(llama_cpp.llama_vocab_n_tokens(vocab))
        self._grammar = llama_cpp.llama_sampler_init_grammar(
            vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8")
        )
        if not self._grammar:
            raise ValueError("llama.cpp could not parse the grammar")
        self._penalties = llama_cpp.llama_sampler_init_penalties(
            self._n_vocab, penalty_last_n, penalty_repeat, penalty_freq, penalty_present
        )
        self._full = (llama_cpp.llama_token_data * self._n_vocab)()
        self._view = np.frombuffer(self._full, dtype=_TOKEN_DATA)
        # ids and p are set once: the penalties and the grammar change logits only, in place
        self._view["id"] = np.arange(self._n_vocab, dtype=np.int32)
        self._view["p"] = 0.0
        self._one = (llama_cpp.llama_token_data * 1)()
        #: Tokens the grammar was asked about alone / tokens that needed the full vocabulary.
        self.lazy_hits = 0
        self.full_passes = 0

    def _array(self, data: Any, size: int) -> Any:
        pointer = ctypes.cast(data, self._lib.llama_token_data_p)
        return self._lib.llama_token_data_array(data=pointer, size=size, selected=-1, sorted=False)

    def sample(self, ctx: Any, idx: int = -1) -> int:
        """The next token for the logits at ``idx`` of ``ctx`` (a ``LlamaContext``).

        The token is the most likely one, after repetition penalties, that the grammar allows;
        both samplers then accept it.
        """
        lib = self._lib
        logits = lib.llama_get_logits_ith(ctx.ctx, idx)
        view = self._view
        view["logit"] = np.ctypeslib.as_array(logits, shape=(self._n_vocab,))
        cur = self._array(self._full, self._n_vocab)
        lib.llama_sampler_apply(self._penalties, ctypes.byref(cur))
        # the array stays in id order: penalties and grammar only change logits, in place
        token = int(np.argmax(view["logit"]))
        if not self._allowed(token, float(view["logit"][token])):
            self.full_passes += 1
            lib.llama_sampler_apply(self._grammar, ctypes.byref(cur))
            token = int(np.argmax(view["logit"]))
        else:
            self.lazy_hits += 1
        lib.llama_sampler_accept(self._penalties, token)
        lib.llama_sampler_accept(self._grammar, token)
        return token

    def _allowed(self, token: int, logit: float) -> bool:
        one = self._one
        one[0].id, one[0].logit, one[0].p = token, logit, 0.0
        cur = self._array(one, 1)
        self._lib.llama_sampler_apply(self._grammar, ctypes.byref(cur))
        return bool(np.isfinite(one[0].logit))

    def close(self) -> None:
        """Free the llama.cpp samplers (idempotent)."""
        for name in ("_grammar", "_penalties"):
            handle = getattr(self, name, None)
            if handle:
                self._lib.llama_sampler_free(handle)
                setattr(self, name, None)

    def __del__(self) -> None:
        self.close()


def wrap(original: Any, draft: bool = True) -> Any:
    """``Llama._init_sampler`` that returns :class:`LazyGrammarGreedy` for greedy grammar requests.

    Args:
        original: llama-cpp-python's ``Llama._init_sampler`` (called for every other request).
        draft: Also decode those requests speculatively with a
            :class:`~loopact.llm.local.draft.PromptLookupDraft` (``Llama.draft_model``, set
            per request; None for every other request). Needs
            :func:`loopact.llm.local.draft.install`.
    """

    def _init_sampler(self: Any, *args: Any, **kwargs: Any) -> Any:
        grammar = kwargs.get("grammar")
        self._loopact_all_logits = False
        self.draft_model = None
        if (
            args
            or grammar is None
            or kwargs.get("temp") != 0.0
            or kwargs.get("logits_processor") is not None
            or kwargs.get("mirostat_mode", 0) != 0
        ):
            return original(self, *args, **kwargs)
        if draft:
            self.draft_model = PromptLookupDraft(self)
        return LazyGrammarGreedy(
            self,
            grammar,
            penalty_last_n=self.last_n_tokens_size,
            penalty_repeat=kwargs.get("repeat_penalty", 1.0),
            penalty_freq=kwargs.get("frequency_penalty", 0.0),
            penalty_present=kwargs.get("presence_penalty", 0.0),
        )

    _init_sampler._loopact_lazy = True  # type: ignore[attr-defined]
    return _init_sampler


def install(draft: bool = True) -> None:
    """Make ``llama_cpp.Llama`` sample greedy grammar requests with :class:`LazyGrammarGreedy`.

    Other requests (a temperature above 0, mirostat, logits processors, no grammar) keep
    llama-cpp-python's own sampler chain. Idempotent; for the server process only.

    Args:
        draft: Also decode greedy grammar requests with prompt-lookup guesses
            (:mod:`loopact.llm.local.draft`; the same tokens, fewer sequential steps).
    """
    import llama_cpp

    original = llama_cpp.Llama._init_sampler
    if not getattr(original, "_loopact_lazy", False):
        if draft:
            install_draft()
        llama_cpp.Llama._init_sampler = wrap(original, draft=draft)
