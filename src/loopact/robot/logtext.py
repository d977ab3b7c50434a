"""Text that someone else wrote, made safe for a log line (issue 21, audit B finding 10).

The base governor logs who released an emergency stop, and that name comes from a ROS 2
message: written raw, a ``by`` of ``"alice\\nFAKE LOG LINE ..."`` forged a second line in
the log that is the audit record of the release. :func:`log_text` quotes such a value like
``repr`` (line breaks, control and invisible characters escaped) and caps its length.
"""

from __future__ import annotations

__all__ = ["LOG_TEXT_CHARS", "log_text"]

LOG_TEXT_CHARS = 64
"""Characters of an outside value that a log line shows by default."""


def log_text(value: object, limit: int = LOG_TEXT_CHARS) -> str:
    """``value`` for a log line when it came from outside (a message, a heartbeat).

    Args:
        value: The value; not a string: its ``str``.
        limit: Characters of it shown; the rest is replaced by ``…(+N characters)``.

    Returns:
        The text quoted and escaped like ``repr`` (``'alice\\\\nFAKE'``: always one line),
        e.g. ``'alice'`` or ``'aaaa…'…(+936 characters)``.
    """
    text = str(value)
    shown = repr(text[:limit])
    return shown if len(text) <= limit else f"{shown}…(+{len(text) - limit} characters)"
