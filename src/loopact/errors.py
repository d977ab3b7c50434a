"""The one exception tree of loopact.

::

    LoopactError
    ├── ConfigError            the user's configuration is wrong (names the key and the fix)
    │   └── SkillFileError         a skill file that cannot be used (also a ValueError)
    ├── InstallError           the local brain could not be installed (issue 6)
    ├── ModelError             a model request failed
    │   ├── ModelRetryableError    connection error, 408/409/429/5xx, stream cut: worth a retry
    │   └── ModelFatalError        4xx that cannot succeed, malformed response
    │       ├── ModelRefused           a refusal stop: the refused turn is dropped
    │       ├── ContextOverflow        the prompt did not fit: compressed and asked again once
    │       └── PromptTooLong          it cannot fit even compressed: not sent at all (E1)
    ├── ToolError              a tool failed; becomes a failed tool result for the model
    │   ├── ToolArgumentError      arguments that are not JSON, fail the schema or a range check
    │   │   └── BoxAnswerError         a box-selection answer that fails validation (D5; ValueError)
    │   ├── PlanError              a plan that cannot be parsed, validated or resolved (A4)
    │   └── NodeError              a node call or transport failed (C2)
    ├── ProtocolError          a heartbeat or result off the node protocol (also a ValueError)
    ├── TaskFailed             the task cannot go on (a rejected plan, a failed plan step)
    ├── BoundReached           a bound tripped; carries the fallback text (A2; inside the loop)
    ├── OutputLimitReached     a response passed max_tokens or the token budget (A2; inside)
    ├── RobotError             the robot link or hardware is unusable (raised, handled by the loop)
    │   ├── StaleDataError         sensor data older than the configured maximum age
    │   ├── DriverError            raw access to a board's pins or buses failed (devices/)
    │   └── SafetyError            the safety governor refused or stopped a command (X3)
    │       └── MotionStopped          ... a motion, for a typed cause (a StopCause)
    │           └── EmergencyStopError     the latched emergency stop is active
    ├── PushRejected           the memory remote moved on since the fetch (E4): merge, push again
    ├── MemoryRepoError        the memory folder or its Git repository cannot be used (E2):
    │                          read-only, locked, damaged; names the folder and the fix
    ├── VoiceError             audio in or out, speech to text or text to speech failed (F4)
    │   ├── AudioDeviceError       no sound card / PortAudio, or the device failed
    │   ├── AudioFormatError       audio that cannot be read (not WAV, bad header, empty)
    │   └── SpeechEngineError      an STT or TTS engine is missing, failed or timed out
    └── ScriptError            the scripted model server was misused (X2): exhausted or unconsumed

A robot error and a tool's argument error may carry what they say as a typed phrase (a
:class:`loopact.i18n.Phrase`, seen here as :class:`PhraseLike`): ``said`` keeps it, so a tool
that turns the error into a failed result renders it in its reader's language; ``str(exc)``
is its English text. :class:`StopCause` is the one enumeration of why a motion ends: the
governor's verdicts and the tools' own ends; :class:`MotionStopped` carries it, and so does a
:class:`StopReason`, the reason the agent gives its stop hooks.

A module may keep a private exception for its own control flow when it derives from this tree
and never escapes the module. Argument checks that are not a safety decision (a distance that
must be positive) raise :class:`ToolArgumentError`; :class:`SafetyError` is for what the
governor refuses or stops.
Exceptions never log themselves; the layer that handles an error decides whether to log it.
"""

from __future__ import annotations

import enum
from typing import Protocol


class PhraseLike(Protocol):
    """A sentence for people as a catalogue key and parameters (:class:`loopact.i18n.Phrase`).

    The errors cannot import :mod:`loopact.i18n` (it sits above them), so they know a phrase
    by what it offers.
    """

    @property
    def id(self) -> str:
        """The catalogue key."""
        ...

    def text(self, lang: str = "en") -> str:
        """The sentence in ``lang``."""
        ...


class StopCause(enum.Enum):
    """Why a motion ended (SPEC X3): the safety governor's verdicts and the tools' own ends.

    The governor stops a lease for ``OBSTACLE``, ``GEOFENCE``, ``DEADLINE``, ``WATCHDOG``,
    ``EMERGENCY_STOP``, ``STOPPED`` (a person's stop: the ``stop`` tool, Stop on a channel),
    ``PREEMPTED`` (a new instruction or the end of the task that ran it), ``REPLACED``
    (another motion took the base: the lease was lost) or ``TAKEN_OVER`` (an operator took
    the base with teleop commands, issue 41); ``TARGET`` is a motion that ended itself. The
    camera tools end for their own causes: ``DURATION``, ``LAPS``, ``LINE_LOST``, ``LOST``,
    ``MAX_DISTANCE``, ``TIMEOUT``, ``ERROR``. Navigation ends for ``NO_PATH`` (the map has
    none, or obstacles seen on the way cut it), ``NAV2_ABORTED`` / ``NAV2_CANCELLED`` (the Nav2
    action server ended the goal) and ``REFUSED`` (the governor refused a step of the path for
    a reason that is not a stop cause; issue 40). An arm motion ends ``SLIPPED`` when the
    object it carried slipped out of the gripper (issue 43).

    :attr:`stopped_by` is the word results and traces carry in ``stopped_by`` (a contract:
    docs/tools.md, docs/perception.md): the cause's value (``taken_over`` for an operator's
    takeover), except ``cancelled`` for a stop, a preemption and a lost lease, as it has
    always been.
    """

    TARGET = "target"
    OBSTACLE = "obstacle"
    GEOFENCE = "geofence"
    DEADLINE = "deadline"
    WATCHDOG = "watchdog"
    EMERGENCY_STOP = "emergency_stop"
    STOPPED = "stopped"
    PREEMPTED = "preempted"
    REPLACED = "replaced"
    TAKEN_OVER = "taken_over"
    DURATION = "duration"
    LAPS = "laps"
    LINE_LOST = "line_lost"
    LOST = "lost"
    MAX_DISTANCE = "max_distance"
    TIMEOUT = "timeout"
    ERROR = "error"
    NO_PATH = "no_path"
    NAV2_ABORTED = "nav2_aborted"
    NAV2_CANCELLED = "nav2_cancelled"
    REFUSED = "refused"
    SLIPPED = "slipped"

    @property
    def stopped_by(self) -> str:
        """The ``stopped_by`` word of this cause (``cancelled`` for a stop, a preemption and
        a lost lease)."""
        if self in (StopCause.STOPPED, StopCause.PREEMPTED, StopCause.REPLACED):
            return "cancelled"
        return str(self.value)


class StopReason(str):
    """Why the agent calls its stop hooks: the reason as text (what a stop hook has always
    received, ``"new command from terminal"``) with its typed cause (SPEC A6, X3).

    :meth:`loopact.robot.governor.SafetyGovernor.stop_all` ends the running motions with
    :attr:`cause`; any other hook reads it as the string it is.

    Args:
        text: The reason, for people and logs.
        cause: :attr:`StopCause.STOPPED` (a person's stop) or :attr:`StopCause.PREEMPTED` (a
            new instruction, a reset).
    """

    cause: StopCause

    def __new__(cls, text: str, cause: StopCause) -> StopReason:
        self = super().__new__(cls, text)
        self.cause = cause
        return self


class LoopactError(Exception):
    """Base class of every error loopact raises on purpose."""


class ConfigError(LoopactError):
    """The configuration is wrong.

    Args:
        message: What is wrong, naming the key (``model.base_url``) and the fix.
        key: The dotted configuration key at fault, when there is one.
    """

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


class SkillFileError(ConfigError, ValueError):
    """A skill file that cannot be used (the message names the file and the problem, E3)."""


class InstallError(LoopactError):
    """The local brain could not be installed; the message says what is missing (issue 6)."""


class ModelError(LoopactError):
    """A model request failed.

    Args:
        message: A readable description (never containing an API key).
        status: The HTTP status code, when the failure was an HTTP response.
    """

    retryable: bool = False

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class ModelRetryableError(ModelError):
    """A failure worth retrying (SPEC B6): connection error, 408/409/429/5xx, cut stream.

    Args:
        message: A readable description.
        status: The HTTP status code, if any.
        retry_after_s: The server's ``Retry-After`` in seconds, if it sent one.
    """

    retryable = True

    def __init__(
        self, message: str, status: int | None = None, retry_after_s: float | None = None
    ) -> None:
        super().__init__(message, status)
        self.retry_after_s = retry_after_s


class ModelFatalError(ModelError):
    """A failure a retry cannot fix (SPEC B6): 400/401/403/404/422, a malformed response."""


class ContextOverflow(ModelFatalError):
    """The server refused the prompt as longer than the model's context window (SPEC E1, B6).

    OpenAI's ``context_length_exceeded``, vLLM's and llama.cpp's "maximum context length is
    N tokens", Anthropic's "prompt is too long: N tokens > M maximum". The agent learns the
    window from it, compresses the history and asks once more
    (:meth:`loopact.agent.rounds.TaskRounds.run_round`).

    Args:
        message: A readable description.
        status: The HTTP status code, if any.
        context_tokens: The context window in tokens the server named, or None.
    """

    def __init__(
        self, message: str, status: int | None = None, context_tokens: int | None = None
    ) -> None:
        super().__init__(message, status)
        self.context_tokens = context_tokens


class PromptTooLong(ModelFatalError):
    """The prompt is longer than the model's context window even after compression, so it is
    not sent (SPEC E1, B6): one instruction, or one tool result, is longer than the window.

    Args:
        message: What is too long, by how much, and the setting that names the window.
        prompt_tokens: The prompt's size in tokens (estimated).
        context_tokens: The model's context window in tokens.
    """

    def __init__(self, message: str, prompt_tokens: int, context_tokens: int) -> None:
        super().__init__(message)
        self.prompt_tokens = prompt_tokens
        self.context_tokens = context_tokens


class ModelRefused(ModelFatalError):
    """The model declined to answer: Anthropic's ``stop_reason: "refusal"`` (SPEC B6).

    Anthropic's documentation asks that the turn that caused a refusal be removed before the
    conversation goes on; the agent drops the refused task's messages from the history so the
    next instruction is not refused for the same content
    (:meth:`loopact.agent.state.Conversation.drop_after`).
    """


class ToolError(LoopactError):
    """A tool failed. Raised inside a tool, it becomes a failed result for the model (SPEC A1)."""


class ToolArgumentError(ToolError):
    """Tool-call arguments that are not JSON (after repair, SPEC B7), fail the schema, or fail
    a tool's own range check (a distance that must be positive).

    Args:
        message: What is wrong: text, or a typed phrase (kept in :attr:`said`).
    """

    said: PhraseLike | None = None

    def __init__(self, message: str | PhraseLike = "") -> None:
        super().__init__(_english(message))
        self.said = None if isinstance(message, str) else message


class PlanError(ToolError):
    """A plan that cannot be parsed, validated or resolved (SPEC A4).

    The message names what is valid (the available tools, the earlier steps, the available
    keys) so the model can fix the plan. A :class:`ToolError`, so raised inside a planning
    tool it becomes a failed result for the model.
    """


class NodeError(ToolError):
    """A node call or transport failed (no server, rejected goal, link lost; SPEC C2).

    Becomes a failed tool result for the model.
    """


class ProtocolError(LoopactError, ValueError):
    """A heartbeat or result that does not follow the node protocol (the message says why)."""


class TaskFailed(LoopactError):
    """The task cannot go on (a rejected plan, a failed plan step); the text says why."""


class BoundReached(LoopactError):
    """A bound tripped (SPEC A2); carries the fallback text for the user.

    Raised and handled inside the agent loop: a task that hits a bound ends ``bounded``.

    Args:
        name: The bound (``max_rounds``, ``tokens``, ``invalid_rounds``, ``hourly_budget``).
        text: The fallback text for the user.
    """

    def __init__(self, name: str, text: str) -> None:
        super().__init__(text)
        self.name = name
        self.text = text


class BoxAnswerError(ToolArgumentError, ValueError):
    """A box-selection answer that failed validation (the message says why, for the model; D5)."""


class OutputLimitReached(LoopactError):
    """A response was not read on: it passed a limit (SPEC A2). Not a model error.

    Attributes:
        name: The bound: ``output_tokens`` (the request's ``max_tokens``) or ``tokens``
            (the task's token budget).
        limit: The limit in tokens.
        used: Tokens used (estimated) when it tripped.
    """

    def __init__(self, name: str, limit: int, used: int) -> None:
        super().__init__(f"{name} limit of {limit} passed ({used})")
        self.name = name
        self.limit = limit
        self.used = used


class RobotError(LoopactError):
    """The robot link or hardware is unusable; raised and handled by the loop.

    Args:
        message: What is wrong: text, or a typed phrase (kept in :attr:`said`; ``str(exc)``
            is its English text).
    """

    said: PhraseLike | None = None

    def __init__(self, message: str | PhraseLike = "") -> None:
        super().__init__(_english(message))
        self.said = None if isinstance(message, str) else message


class DriverError(RobotError):
    """Raw hardware access failed (the message says what and where); the board turns it into
    a failed tool result (devices/)."""


class StaleDataError(RobotError):
    """Sensor data is older than the configured maximum age (SPEC D1: never silently used).

    Args:
        message: What is stale and how old it is.
        age_s: The data's age in seconds on the robot's clock.
    """

    def __init__(self, message: str | PhraseLike, age_s: float | None = None) -> None:
        super().__init__(message)
        self.age_s = age_s


class SafetyError(RobotError):
    """The safety governor refused or stopped a command (SPEC C5, X3)."""


class MotionStopped(SafetyError):
    """The safety governor refused or stopped a motion for a typed cause (SPEC X3).

    A tool maps :attr:`cause` to its result's ``stopped_by`` and to what it says; never the
    text of the error (issue 38).

    Args:
        message: What happened: text, or a typed phrase (kept in :attr:`said`).
        cause: Why.
    """

    def __init__(self, message: str | PhraseLike, cause: StopCause) -> None:
        super().__init__(message)
        self.cause = cause


class EmergencyStopError(MotionStopped):
    """The latched emergency stop is active; it needs an explicit reset (SPEC X3).

    Args:
        message: What happened: text, or a typed phrase.
    """

    def __init__(self, message: str | PhraseLike = "emergency stop") -> None:
        super().__init__(message, StopCause.EMERGENCY_STOP)


class PushRejected(LoopactError):
    """The memory remote moved on since the fetch (SPEC E4): fetch, merge and push again."""


class MemoryRepoError(LoopactError):
    """The memory folder or its Git repository cannot be used right now (SPEC E2).

    The message names the folder (or the file in it) and what to do: a read-only disk, a lock
    another program holds, a damaged repository. Raised by :class:`loopact.memory.GitMemory`
    at open and by its writes; the agent turns it into a failed tool result or a warning.
    """


class ScriptError(LoopactError):
    """The scripted model server was misused: script exhausted or turns left unconsumed (X2)."""


class VoiceError(LoopactError):
    """Audio input or output, speech to text or text to speech failed (SPEC F4, issue 16)."""


class AudioDeviceError(VoiceError):
    """No usable sound device (no sound card, PortAudio missing) or the device failed."""


class AudioFormatError(VoiceError, ValueError):
    """Audio that cannot be read: not a WAV file, a bad header, no samples (issue 16)."""


class SpeechEngineError(VoiceError):
    """A speech-to-text or text-to-speech engine is missing, failed or timed out."""


def _english(message: str | PhraseLike) -> str:
    return message if isinstance(message, str) else message.text("en")
