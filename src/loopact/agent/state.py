"""The agent's conversation state, in one place (SPEC A7, C3, E1).

:class:`Conversation` holds what outlives one task: the history, the inputs waiting to be
injected (messages in continuous mode, accumulate-mode sensor data pulled from input sources),
the images of recent tool calls (for live channels), and the continuous mode's rolling-hour
budget. The :class:`~loopact.agent.runtime.Agent` owns it; each
:class:`~loopact.agent.task.TaskRun` changes it through these methods only.

Everything here runs on the event loop thread.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from loopact.events import EventBus, EventType
from loopact.llm.messages import Image, Message

log = logging.getLogger(__name__)

#: Tool calls whose images are kept for live channels.
KEEP_IMAGES = 20

InputSource = Callable[[], "Message | None"]
"""Returns one user message with the data that arrived since it was last asked, or None."""


@dataclass(frozen=True)
class Input:
    """A message or sensor event waiting to be injected into the conversation (A7, C3).

    Attributes:
        id: Its command id.
        source: Channel or input node name (``terminal``, ``web``, ``ros2``, a sensor).
        text: The text (JSON-encoded for sensor data).
        images: Images sent with it.
        ts: Arrival time (unix seconds).
    """

    id: str
    source: str
    text: str
    images: tuple[Image, ...] = ()
    ts: float = 0.0


def format_inputs(inputs: list[Input]) -> str:
    """One snapshot user message for a batch of inputs (SPEC C3), one line per input."""
    lines = []
    for i in inputs:
        clock = time.strftime("%H:%M:%S", time.localtime(i.ts))
        lines.append(f"[{clock} {i.source}] {i.text}")
    return "\n".join(lines)


class HourlyBudget:
    """Model rounds and tokens allowed per rolling hour (continuous mode, SPEC A7).

    Args:
        rounds: Rounds allowed per rolling hour.
        tokens: Tokens allowed per rolling hour.
    """

    WINDOW_S = 3600.0

    def __init__(self, rounds: int, tokens: int) -> None:
        self.rounds = rounds
        self.tokens = tokens
        self._window: deque[tuple[float, int]] = deque()

    def record(self, tokens: int) -> None:
        """Count one model round and its tokens."""
        self._window.append((time.monotonic(), tokens))

    def wait_s(self) -> float:
        """Seconds until the budget allows another round (0 when it does)."""
        now = time.monotonic()
        window = self._window
        while window and window[0][0] < now - self.WINDOW_S:
            window.popleft()
        used = sum(n for _, n in window)
        if len(window) < self.rounds and used < self.tokens:
            return 0.0
        return max(0.1, window[0][0] + self.WINDOW_S - now)


class Conversation:
    """History, pending inputs, recent images and the rolling-hour budget of one agent.

    Args:
        system_prompt: The system message text ("" for none).
        bus: Where ``input`` and ``input_snapshot`` events go.
        budget: The continuous mode's rolling-hour budget.
    """

    def __init__(self, system_prompt: str, bus: EventBus, budget: HourlyBudget) -> None:
        self.system_prompt = system_prompt
        self.bus = bus
        self.budget = budget
        self.history: list[Message] = []
        self._inputs: list[Input] = []
        self._sources: list[InputSource] = []
        self._images: OrderedDict[str, list[Image]] = OrderedDict()
        self.arrived = asyncio.Event()
        """Set when an input arrives or a source has new data (wakes continuous mode)."""
        self.reset()

    # ---------------------------------------------------------------- history
    def reset(self) -> None:
        """Start a new conversation: only the system message stays."""
        self.history = [Message.system(self.system_prompt)] if self.system_prompt else []

    def set_system_prompt(self, text: str) -> None:
        """Use ``text`` as the system message from the next request on (rules and
        preferences that arrived from other robots, SPEC E2); the history is kept."""
        self.system_prompt = text
        if self.history and self.history[0].role == "system":
            self.history[0] = Message.system(text)
        elif text:
            self.history.insert(0, Message.system(text))

    def append(self, message: Message) -> None:
        """Append a message to the history."""
        self.history.append(message)

    def replace(self, history: list[Message]) -> None:
        """Replace the history in place (compression, SPEC E1)."""
        self.history[:] = history

    def last_message(self) -> Message | None:
        """The newest message of the history (None when it is empty): a mark for
        :meth:`drop_after`."""
        return self.history[-1] if self.history else None

    def drop_after(self, mark: Message | None) -> int:
        """Remove every message after ``mark`` (a :meth:`last_message`; None: all of them).

        Used when the model refused a task (:class:`~loopact.errors.ModelRefused`): the turn
        that caused the refusal must not go to the model again. When compression replaced
        ``mark`` meanwhile, nothing is removed.

        Returns:
            How many messages were removed.
        """
        if mark is None:
            keep = 0
        else:
            found = [i for i, m in enumerate(self.history) if m is mark]
            if not found:
                return 0
            keep = found[-1] + 1
        dropped = len(self.history) - keep
        del self.history[keep:]
        return dropped

    @property
    def system_text(self) -> str:
        """The text of the history's system message ("" when it has none)."""
        if self.history and self.history[0].role == "system":
            return self.history[0].text
        return ""

    # ---------------------------------------------------------------- inputs (A7, C3)
    def add_source(self, source: InputSource) -> None:
        """Register a pull-based source of input snapshots (``InputHub.take_snapshot``)."""
        self._sources.append(source)

    def notify(self) -> None:
        """Tell a waiting continuous-mode agent that a source has new data."""
        self.arrived.set()

    def add_input(
        self, text: str, source: str, images: Iterable[Image] = (), task_id: str | None = None
    ) -> Input:
        """Queue a message or sensor event for the next round boundary; emits ``input``."""
        item = Input(uuid.uuid4().hex[:12], source, text, tuple(images), time.time())
        self._inputs.append(item)
        self.bus.emit(EventType.INPUT, task_id, id=item.id, source=source, text=text)
        self.arrived.set()
        return item

    @property
    def has_inputs(self) -> bool:
        """True when queued inputs wait to be injected."""
        return bool(self._inputs)

    @property
    def first_input(self) -> Input | None:
        """The oldest queued input, or None."""
        return self._inputs[0] if self._inputs else None

    def take_inputs(self) -> list[Input]:
        """Remove and return the queued inputs."""
        items, self._inputs = self._inputs, []
        return items

    def pull_sources(self, task_id: str | None) -> int:
        """Append every source's pending snapshot to the history; emits ``input_snapshot``.

        A failing source is logged and skipped.

        Returns:
            How many snapshot messages were appended.
        """
        added = 0
        for source in self._sources:
            try:
                message = source()
            except Exception:
                log.exception("input source %r failed", source)
                continue
            if message is not None:
                self.history.append(message)
                self.bus.emit(EventType.INPUT_SNAPSHOT, task_id, text=message.text)
                added += 1
        return added

    def inject_inputs(self, task_id: str | None) -> None:
        """At a round boundary: the queued inputs as one snapshot user message, then the
        sources' snapshots (SPEC A7, C3), so that a snapshot never splits a tool call from
        its result."""
        inputs = self.take_inputs()
        if inputs:
            images = tuple(img for i in inputs for img in i.images)
            self.history.append(Message.user(format_inputs(inputs), images))
        self.pull_sources(task_id)

    # ---------------------------------------------------------------- images
    def remember_images(self, call_id: str, images: list[Image]) -> None:
        """Keep a tool call's images for live channels (the last :data:`KEEP_IMAGES` calls)."""
        self._images[call_id] = images
        while len(self._images) > KEEP_IMAGES:
            self._images.popitem(last=False)

    def last_images(self, call_id: str) -> list[Image]:
        """Images a recent tool call returned (empty when unknown or expired)."""
        return self._images.get(call_id, [])
