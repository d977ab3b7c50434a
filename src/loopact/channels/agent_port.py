"""What a channel needs from the agent: :class:`AgentPort` (SPEC F1-F3; issue 38 item 4).

The channels (terminal, web console, ROS 2 text, voice) are typed against this protocol, not
against :class:`loopact.agent.runtime.Agent` or ``Any``: what they may call is written here, and
mypy checks that the agent the app hands them has it. A test double with these members is a
valid agent for a channel.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol

from loopact.events import Event
from loopact.llm.base import Model
from loopact.llm.messages import Audio, Image


class EventSource(Protocol):
    """Where a channel follows the agent's events (an :class:`~loopact.events.EventBus`)."""

    def subscribe(self, fn: Callable[[Event], None]) -> Callable[[], None]:
        """Call ``fn`` with every event; returns a function that stops it."""


class AgentSettings(Protocol):
    """The agent's options a channel reads."""

    @property
    def lang(self) -> str:
        """The language of texts for people (``en``, ``zh``)."""

    @property
    def mode(self) -> str:
        """``task``, ``plan`` or ``continuous``."""


class ConfirmPort(Protocol):
    """The confirmations a channel may answer (a :class:`~loopact.agent.confirm.ConfirmationBroker`;
    issue 41)."""

    @property
    def pending(self) -> list[str]:
        """Ids of the requests waiting for an answer, oldest first."""

    def may_answer(self, source: str) -> bool:
        """Whether the channel ``source`` may answer (``confirm.channels``)."""


class AgentPort(Protocol):
    """The agent as the channels see it (:class:`loopact.agent.runtime.Agent` has all of it)."""

    @property
    def broker(self) -> ConfirmPort:
        """Its pending confirmations (issue 41: answered on every channel that may)."""

    @property
    def bus(self) -> EventSource:
        """The agent's events (progress, replies, confirmations)."""

    @property
    def options(self) -> AgentSettings:
        """Its language and mode."""

    @property
    def busy(self) -> bool:
        """True while a task runs."""

    def submit(
        self,
        text: str,
        images: Iterable[Image] = (),
        source: str = "terminal",
        audio: Iterable[Audio] = (),
    ) -> str | None:
        """A command from ``source`` (with its pictures, and the spoken clips of a voice
        command): preempts the running task; the new task's id, or None when the text only
        stopped the robot."""

    def stop(self, source: str = "terminal") -> None:
        """Stop the running task and the robot at once."""

    def reset(self) -> None:
        """Forget the conversation."""

    def status(self) -> dict[str, Any]:
        """What the agent is doing (busy, task, provider, model, ...), JSON-able."""

    def answer_confirmation(self, request_id: str, allow: bool, source: str = "terminal") -> bool:
        """Answer a ``confirm_request``; False when it is unknown or answered already."""

    def last_images(self, call_id: str) -> list[Image]:
        """The images the tool call ``call_id`` returned (the web console shows them)."""

    def set_model(self, model: Model) -> bool:
        """Switch the model (``/provider``); True when the history was carried over."""

    async def run(self) -> None:
        """Work on the commands until closed."""

    async def wait_idle(self) -> None:
        """Until no task runs or waits."""

    async def close(self) -> None:
        """Stop what runs and close the model."""
