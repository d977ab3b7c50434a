"""The offline brain: a small model served by llama.cpp on this machine (SPEC B1, B4, H2).

Not a wire protocol (it speaks the OpenAI-compatible one through
:class:`~loopact.llm.openai_chat.OpenAIChatModel`) but everything around it:

- :mod:`~loopact.llm.local.brain`: where its model is, what it can do, what is missing;
- :mod:`~loopact.llm.local.build`, :mod:`~loopact.llm.local.wheel`,
  :mod:`~loopact.llm.local.install`: the portable llama-cpp-python build, its wheel cache and
  ``make local-brain``;
- :mod:`~loopact.llm.local.launch`, :mod:`~loopact.llm.local.process`: the server as a
  supervised child process;
- :mod:`~loopact.llm.local.server`, :mod:`~loopact.llm.local.sampler`,
  :mod:`~loopact.llm.local.draft`: the server itself, its lazy grammar sampler and its
  prompt-lookup drafts;
- :mod:`~loopact.llm.local.model`: the brain as a :class:`~loopact.llm.base.Model`.

See ``docs/local-brain.md``.
"""
