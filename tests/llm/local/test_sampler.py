"""The local brain's lazy grammar sampler picks what llama-cpp-python's full chain picks (issue 13).

Runs the real pinned GGUF in this process (``local_model``: skipped with the reason when
``make test-local`` has not set it up). The grammar forces an answer the model would not give
on its own, so the lazy sampler has to fall back to the whole vocabulary for some tokens and
takes the greedy token directly for others; the tokens must be the same as the chain's.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from tests.llm.local.test_brain import _local_ready

from loopact.config import LocalConfig
from loopact.llm.local.brain import resolve_model_path
from loopact.llm.local.sampler import LazyGrammarGreedy, wrap

GRAMMAR = r"""
root ::= "{\"name\": \"" name "\", \"arguments\": {\"" key "\": " num "}}"
name ::= "move_forward" | "turn_left" | "turn_right"
key ::= "distance_m" | "angle_deg"
num ::= [0-9] ("." [0-9])?
"""
PROMPT = (
    "<|im_start|>system\nYou drive a robot. Answer with one JSON tool call.<|im_end|>\n"
    "<|im_start|>user\nplease turn to your left by ninety degrees<|im_end|>\n"
    "<|im_start|>assistant\n"
)


def small_llama() -> Any:
    """The pinned GGUF in this process with a 512-token context (``llama_cpp.Llama``)."""
    import llama_cpp

    return llama_cpp.Llama(
        model_path=str(resolve_model_path(LocalConfig())), n_ctx=512, n_threads=2, verbose=False
    )


@pytest.mark.local_model
@pytest.mark.skipif(_local_ready() is not None, reason=str(_local_ready()))
@pytest.mark.timeout(300)
def test_lazy_grammar_sampling_gives_the_chains_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    import llama_cpp

    llm = small_llama()

    def complete() -> str:
        grammar = llama_cpp.LlamaGrammar.from_string(GRAMMAR, verbose=False)
        out: Any = llm.create_completion(
            PROMPT, grammar=grammar, temperature=0.0, max_tokens=48, repeat_penalty=1.1
        )
        return str(out["choices"][0]["text"])

    chain = complete()
    made: list[LazyGrammarGreedy] = []
    lazy_init = wrap(llama_cpp.Llama._init_sampler)

    def recording(self: Any, *args: Any, **kwargs: Any) -> Any:
        sampler = lazy_init(self, *args, **kwargs)
        if isinstance(sampler, LazyGrammarGreedy):
            made.append(sampler)
        return sampler

    monkeypatch.setattr(llama_cpp.Llama, "_init_sampler", recording)
    lazy = complete()
    assert lazy == chain
    assert json.loads(lazy)["name"] in ("move_forward", "turn_left", "turn_right"), lazy
    assert len(made) == 1
    # some tokens were the model's own greedy choice, some had to be searched for
    assert made[0].lazy_hits > 0 and made[0].full_passes > 0, vars(made[0])
    # a request with a temperature keeps the chain
    grammar = llama_cpp.LlamaGrammar.from_string(GRAMMAR, verbose=False)
    llm.create_completion(PROMPT, grammar=grammar, temperature=0.7, max_tokens=8, seed=1)
    assert len(made) == 1
