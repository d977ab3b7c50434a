"""The one exception tree of loopact.

::

    LoopactError
    ├── ConfigError            the user's configuration is wrong (names the key and the fix)
    ├── ModelError             a model request failed
    │   ├── ModelRetryableError    connection error, 408/409/429/5xx, stream cut: worth a retry
    │   └── ModelFatalError        4xx that cannot succeed, malformed response
    ├── ToolError              a tool failed; becomes a failed tool result for the model
    │   └── ToolArgumentError      arguments that are not JSON or fail the tool's schema
    ├── RobotError             the robot link or hardware is unusable (raised, handled by the loop)
    │   ├── StaleDataError         sensor data older than the configured maximum age
    │   └── SafetyError            the safety governor refused or stopped a command (X3)
    │       └── EmergencyStopError     the latched emergency stop is active
    └── ScriptError            the scripted model server was misused (X2): exhausted or unconsumed

Exceptions never log themselves; the layer that handles an error decides whether to log it.
"""

from __future__ import annotations


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


class ToolError(LoopactError):
    """A tool failed. Raised inside a tool, it becomes a failed result for the model (SPEC A1)."""


class ToolArgumentError(ToolError):
    """Tool-call arguments that are not JSON (after repair, SPEC B7) or fail the schema."""


class RobotError(LoopactError):
    """The robot link or hardware is unusable; raised and handled by the loop."""


class StaleDataError(RobotError):
    """Sensor data is older than the configured maximum age (SPEC D1: never silently used).

    Args:
        message: What is stale and how old it is.
        age_s: The data's age in seconds on the robot's clock.
    """

    def __init__(self, message: str, age_s: float | None = None) -> None:
        super().__init__(message)
        self.age_s = age_s


class SafetyError(RobotError):
    """The safety governor refused or stopped a command (SPEC C5, X3)."""


class EmergencyStopError(SafetyError):
    """The latched emergency stop is active; it needs an explicit reset (SPEC X3)."""


class ScriptError(LoopactError):
    """The scripted model server was misused: script exhausted or turns left unconsumed (X2)."""
