"""The built-in tools (SPEC C6, D7): ``tools``, ``images``, ``documents``, ``messages``."""

from __future__ import annotations

import re
from pathlib import Path

import pydantic

from loopact.config.base import STRICT as _STRICT


class ShellConfig(pydantic.BaseModel):
    """``tools.shell``: the ``shell_exec`` tool (issue 19, SPEC C6); absent unless enabled."""

    model_config = _STRICT
    enabled: bool = False
    allow: dict[str, list[str]] = pydantic.Field(default_factory=dict)
    timeout_s: float = pydantic.Field(10.0, gt=0)
    max_output_chars: int = pydantic.Field(8000, ge=100)

    @pydantic.field_validator("allow")
    @classmethod
    def _program_names(cls, allow: dict[str, list[str]]) -> dict[str, list[str]]:
        """A program is a plain name (``ls``) or an absolute path (``/usr/bin/ls``): never
        empty, relative with a slash, or holding whitespace or shell syntax (``ls;rm``)."""
        bad = [name for name in allow if not _PROGRAM.fullmatch(name) or ".." in name.split("/")]
        if bad:
            raise ValueError(
                f"program name{'s' if len(bad) > 1 else ''} {', '.join(map(repr, bad))} "
                "cannot be run: give a plain name (ls) or an absolute path (/usr/bin/ls), "
                "without spaces or shell characters (; | & $ < > * ...)"
            )
        return allow


_PROGRAM = re.compile(r"(?!\.$)[\w.+-]+|(/[\w.+-]+)+")
"""An allowed program: a name looked up on ``PATH`` or an absolute path."""


class ImagesConfig(pydantic.BaseModel):
    """``images``: ``generate_image`` through an OpenAI-compatible images endpoint (issue 19);
    the tool exists only when ``base_url`` and ``model`` are both set."""

    model_config = _STRICT
    base_url: str | None = pydantic.Field(None, pattern=r"^https?://\S+$")
    model: str | None = None
    api_key: pydantic.SecretStr | None = None
    default_size: str = pydantic.Field("1024x1024", pattern=r"^\d{2,4}x\d{2,4}$")
    timeout_s: float = pydantic.Field(120.0, gt=0)

    @property
    def configured(self) -> bool:
        """True when both ``base_url`` and ``model`` are set."""
        return bool(self.base_url and self.model)


class DocumentsConfig(pydantic.BaseModel):
    """``documents``: ``write_document`` (issue 19)."""

    model_config = _STRICT
    font: Path | None = None


class ToolsConfig(pydantic.BaseModel):
    """``tools``: settings of built-in general tools (issue 19)."""

    model_config = _STRICT
    shell: ShellConfig = ShellConfig()


class EmailConfig(pydantic.BaseModel):
    """``messages.email``: the ``email`` channel of ``send_message`` (issue 19, SPEC C6).

    The password is read from the environment variable named by ``password_env`` when the
    configuration is loaded (:meth:`password`); it is never written in the file.
    """

    model_config = _STRICT
    host: str
    port: int = pydantic.Field(587, ge=1, le=65535)
    starttls: bool = True
    username: str | None = None
    password_env: str | None = None
    from_addr: str = pydantic.Field(pattern=r"^[^@\s]+@[^@\s]+$")
    allow_to: list[str] = pydantic.Field(default_factory=list)
    ca_file: Path | None = None
    timeout_s: float = pydantic.Field(20.0, gt=0)
    subject: str | None = None
    _password: str | None = pydantic.PrivateAttr(None)

    def password(self) -> str | None:
        """The password from ``password_env`` (None when unset); never log it."""
        return self._password


class TopicMessagesConfig(pydantic.BaseModel):
    """``messages.ros2``: the ``ros2`` channel; ``to`` is a topic (``std_msgs/String``)."""

    model_config = _STRICT
    allow_to: list[str] = pydantic.Field(default_factory=list)


class MessagesConfig(pydantic.BaseModel):
    """``messages``: channels of ``send_message`` beyond the console (issue 19, SPEC C6)."""

    model_config = _STRICT
    email: EmailConfig | None = None
    ros2: TopicMessagesConfig | None = None
    mqtt: TopicMessagesConfig | None = None
