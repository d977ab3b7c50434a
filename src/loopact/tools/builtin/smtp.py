"""The ``email`` message channel: SMTP with STARTTLS and login (SPEC C6; config ``messages.email``).

One SMTP session per message, run by :mod:`smtplib` in a worker thread with a socket timeout
on every step, so a server that stops answering ends the call instead of hanging it. The
message is ``text/plain; charset=utf-8`` (any language arrives intact). When ``starttls`` is
set the session is upgraded before the login and the server's certificate is verified (the
system's CA store, or ``ca_file``); a server that does not offer STARTTLS is refused rather
than sending the password in clear. Every refusal of the server (login, sender, recipient,
data) becomes a failed result naming the SMTP code and text.

``to`` is one plain address or nothing (issue 39 item 11): :func:`parse_email_address` refuses
a list (``a@x.test,b@example.com``), a display name or angle brackets, a comment, a source
route, a group, a quoted local part, an address literal and the ``%``/``!`` relay routing of
old mail servers, so the allow-list is matched against the one address the envelope then
carries. (Before, ``evil@attacker.test,ops@example.com`` matched ``*@example.com`` and
:mod:`smtplib` sent the envelope to the first address in it.)
"""

from __future__ import annotations

import asyncio
import smtplib
import socket
import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from email.errors import MessageError
from email.headerregistry import Address
from email.message import EmailMessage
from email.utils import formatdate, getaddresses, make_msgid
from pathlib import Path

from loopact.errors import ToolArgumentError, ToolError
from loopact.tools.base import ToolContext
from loopact.tools.builtin.messages import MessageChannel

SUBJECT_CHARS = 60
"""The subject line is the message's first line, cut to this many characters."""


_NOT_PLAIN = (
    (",;", "a list of addresses"),
    ("<>", "angle brackets (a display name or a route)"),
    ("()", "a comment"),
    (":", "a route or a group"),
    ('"\\', "a quoted part"),
    ("[]", "an address literal"),
    ("%!", "relay routing ('%' or '!')"),
)
"""Characters a plain addr-spec for us never holds, and what they would make of it."""


def parse_email_address(text: str) -> str:
    """``text`` as exactly one plain e-mail address (an RFC 5322 addr-spec), else refused.

    Plain means ``local@domain`` with a dot-atom on each side, ASCII only: no display name,
    angle brackets, comment, source route, group, list, quoted local part, address literal
    or ``%``/``!`` relay routing. The address is checked with the standard library's parser
    (:class:`email.headerregistry.Address`, :func:`email.utils.getaddresses`), which must
    read back exactly the text given.

    Args:
        text: The recipient as the model gave it; surrounding spaces are ignored.

    Returns:
        The address, as given (its case kept).

    Raises:
        ToolArgumentError: ``text`` is not one plain address; the message says why.
    """
    address = text.strip()
    shown = repr(text)[:120]
    for chars, what in _NOT_PLAIN:
        if any(c in address for c in chars):
            raise ToolArgumentError(f"`to` {shown} is not one plain email address: it has {what}")
    if not address.isascii() or any(c.isspace() or not c.isprintable() for c in address):
        raise ToolArgumentError(
            f"`to` {shown} is not one plain email address: it has spaces, control or "
            "non-ASCII characters"
        )
    try:
        parsed = Address(addr_spec=address)
    except (ValueError, IndexError, MessageError) as exc:
        raise ToolArgumentError(f"`to` {shown} is not one plain email address: {exc}") from None
    if (
        parsed.addr_spec != address
        or not parsed.username
        or not parsed.domain
        or getaddresses([address]) != [("", address)]
    ):
        raise ToolArgumentError(f"`to` {shown} is not one plain email address (local@domain)")
    return address


@dataclass(frozen=True)
class SmtpSettings:
    """Where and how to send email (``messages.email``).

    Attributes:
        host: SMTP server host name or address.
        port: TCP port (587 for submission with STARTTLS).
        starttls: Upgrade to TLS with STARTTLS before logging in (required when True).
        username: Login name, or None for no login.
        password: The password (from the environment variable ``password_env``), or None.
        from_addr: The sender address.
        ca_file: PEM file of CAs to trust instead of the system store (a private CA).
        timeout_s: Socket timeout of each SMTP step, in seconds.
        subject: A fixed subject; None uses the message's first line.
    """

    host: str
    port: int
    starttls: bool
    username: str | None
    password: str | None
    from_addr: str
    ca_file: Path | None = None
    timeout_s: float = 20.0
    subject: str | None = None


class EmailChannel(MessageChannel):
    """``send_message(channel="email", to=ADDRESS, text=...)`` over SMTP.

    Args:
        settings: The SMTP settings.
        allow_to: Addresses (``*`` wildcards allowed) mail may go to.
    """

    name = "email"
    description = "email; `to` is an email address"

    def __init__(self, settings: SmtpSettings, allow_to: Sequence[str]) -> None:
        super().__init__(allow_to=list(allow_to), timeout_s=settings.timeout_s * 3)
        self.settings = settings

    def parse_recipient(self, to: str) -> str:
        """``to`` as exactly one plain address (:func:`parse_email_address`; issue 39 item 11).

        Raises:
            ToolArgumentError: ``to`` is not one plain address.
        """
        return parse_email_address(to)

    async def deliver(self, to: str | None, text: str, ctx: ToolContext) -> str:
        """Send one email to ``to``.

        Raises:
            ToolError: A user name is set without a password (no login is attempted), or
                the server is unreachable, refuses STARTTLS, the login, the sender,
                the recipient or the message, or stops answering.
        """
        assert to is not None  # check_recipient() ran
        to = parse_email_address(to)  # the envelope carries this one address, nothing else
        if self.settings.username and not self.settings.password:
            raise ToolError(
                f"messages.email.username is {self.settings.username!r} but there is no "
                "password (set messages.email.password_env to the variable that holds it); "
                "not logging in with an empty password, nothing was sent"
            )
        message = self._compose(to, text)
        await asyncio.to_thread(self._send, message, to)
        return f"email sent to {to}"

    def _compose(self, to: str, text: str) -> EmailMessage:
        s = self.settings
        msg = EmailMessage()
        first = text.strip().splitlines()[0] if text.strip() else ""
        subject = s.subject or (
            first if len(first) <= SUBJECT_CHARS else first[: SUBJECT_CHARS - 3] + "..."
        )
        msg["Subject"] = subject
        msg["From"] = s.from_addr
        msg["To"] = to
        msg["Date"] = formatdate(localtime=True)
        msg["Message-ID"] = make_msgid(domain=s.from_addr.rpartition("@")[2] or None)
        msg.set_content(text, charset="utf-8")
        return msg

    def _send(self, message: EmailMessage, to: str) -> None:
        s = self.settings
        where = f"SMTP server {s.host}:{s.port}"
        try:
            with smtplib.SMTP(s.host, s.port, timeout=s.timeout_s) as smtp:
                smtp.ehlo()
                if s.starttls:
                    if not smtp.has_extn("starttls"):
                        raise ToolError(
                            f"{where} does not offer STARTTLS; not sending credentials or mail "
                            "in clear (set messages.email.starttls: false only for a trusted "
                            "local relay)"
                        )
                    context = ssl.create_default_context(
                        cafile=str(s.ca_file) if s.ca_file else None
                    )
                    smtp.starttls(context=context)
                    smtp.ehlo()
                if s.username and s.password:
                    smtp.login(s.username, s.password)
                refused = smtp.send_message(message, from_addr=s.from_addr, to_addrs=[to])
        except ToolError:
            raise
        except smtplib.SMTPAuthenticationError as exc:
            raise ToolError(f"{where} refused the login of {s.username!r}: {_reply(exc)}") from None
        except smtplib.SMTPRecipientsRefused as exc:
            codes = "; ".join(
                f"{rcpt}: {code} {_text(msg)}" for rcpt, (code, msg) in exc.recipients.items()
            )
            raise ToolError(f"{where} refused the recipient: {codes}; nothing was sent") from None
        except smtplib.SMTPSenderRefused as exc:
            raise ToolError(
                f"{where} refused the sender {s.from_addr}: {exc.smtp_code} {_text(exc.smtp_error)}"
            ) from None
        except smtplib.SMTPResponseException as exc:
            raise ToolError(f"{where} refused the message: {_reply(exc)}") from None
        except smtplib.SMTPNotSupportedError as exc:
            raise ToolError(f"{where}: {exc} (check messages.email.username)") from None
        except ssl.SSLError as exc:
            raise ToolError(
                f"TLS with {where} failed: {exc.reason or exc} (a private CA? set "
                "messages.email.ca_file)"
            ) from None
        except (TimeoutError, smtplib.SMTPServerDisconnected) as exc:
            if not isinstance(exc, (socket.timeout, TimeoutError)) and "timed out" not in str(exc):
                raise ToolError(f"{where} closed the connection: {exc}") from None
            raise ToolError(
                f"{where} did not answer within {s.timeout_s:g} s; the email may not have been sent"
            ) from None
        except (smtplib.SMTPException, OSError) as exc:
            raise ToolError(f"cannot send email through {where}: {exc}") from None
        if refused:
            raise ToolError(f"{where} refused {', '.join(refused)}")


def _text(raw: bytes | str) -> str:
    return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)


def _reply(exc: smtplib.SMTPResponseException) -> str:
    return f"{exc.smtp_code} {_text(exc.smtp_error)}"
