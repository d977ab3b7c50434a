"""Test doubles that ship with loopact (SPEC X2).

:class:`ScriptedModelServer` replays a :class:`Script` of :class:`Turn` values over the real
model wire protocols (OpenAI chat completions today), recording each request as a
:class:`RecordedRequest`. See ``docs/scripted-server.md`` for the script format.
"""

from loopact.testing.script import Script, Turn
from loopact.testing.server import RecordedRequest, ScriptedModelServer

__all__ = ["RecordedRequest", "Script", "ScriptedModelServer", "Turn"]
