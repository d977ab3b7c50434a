"""send_message over configured channels: email through a real SMTP server on loopback
with STARTTLS and login (aiosmtpd), allow-lists and refusals (issue 19 acceptance 3, SPEC C6)."""

from __future__ import annotations

import asyncio
import email
import email.policy
import email.utils
import shutil
import smtplib
import socket
import ssl
import subprocess
import textwrap
import threading
from collections.abc import Iterator
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, Envelope, Session
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.agent.helpers import call, make_agent

from loopact.agent import Bounds
from loopact.agent.tools import make_send_message_tool
from loopact.app.messages import open_message_channels
from loopact.config import load_config
from loopact.errors import ConfigError, ToolArgumentError
from loopact.events import EventBus
from loopact.tools.base import ToolContext
from loopact.tools.builtin.messages import ConsoleChannel, MessageChannel, SendMessageTool
from loopact.tools.builtin.messages import make_send_message_tool as build_send_message_tool
from loopact.tools.builtin.smtp import EmailChannel, SmtpSettings

TEXT = "Door 3 is open.\nTemperature 31.5 °C — 请检查三号门。\n.leading dot line"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (the client trusts it through ca_file)."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make a test certificate")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
            "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
            "-keyout", str(key), "-out", str(cert),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )  # fmt: skip
    return cert, key


@dataclass
class Mailbox:
    """What the SMTP server received."""

    messages: list[tuple[str, list[str], bytes, bool]] = field(default_factory=list)
    rcpts: list[str] = field(default_factory=list)
    """Every RCPT TO address the server was given, accepted or not."""
    refuse_rcpt: bool = False
    logins: list[tuple[bytes, bytes]] = field(default_factory=list)
    arrived: threading.Event = field(default_factory=threading.Event)

    async def handle_RCPT(  # noqa: N802 - aiosmtpd's hook name
        self, server: Any, session: Session, envelope: Envelope, address: str, options: Any
    ) -> str:
        self.rcpts.append(address)
        if self.refuse_rcpt:
            return "550 5.1.1 mailbox unavailable"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(  # noqa: N802
        self, server: Any, session: Session, envelope: Envelope
    ) -> str:
        tls = session.ssl is not None
        data = envelope.original_content or b""
        self.messages.append((str(envelope.mail_from), list(envelope.rcpt_tos), data, tls))
        self.arrived.set()
        return "250 Message accepted"


def _authenticator(box: Mailbox) -> Any:
    """Accepts robot / s3cret; records every attempt in ``box.logins``."""

    def check(
        server: Any, session: Session, envelope: Envelope, mechanism: str, auth_data: Any
    ) -> AuthResult:
        box.logins.append((auth_data.login, auth_data.password))
        ok = auth_data.login == b"robot" and auth_data.password == b"s3cret"
        return AuthResult(success=ok, handled=False)

    return check


@pytest.fixture
def smtp_server(tls_files: tuple[Path, Path]) -> Iterator[tuple[int, Mailbox]]:
    """aiosmtpd on loopback requiring STARTTLS, then a login (robot / s3cret)."""
    cert, key = tls_files
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    box = Mailbox()
    port = _free_port()
    controller = Controller(
        box,
        hostname="127.0.0.1",
        port=port,
        tls_context=context,
        require_starttls=True,
        auth_required=True,
        auth_require_tls=True,
        authenticator=_authenticator(box),
    )
    controller.start()
    try:
        yield port, box
    finally:
        controller.stop()


def _settings(port: int, ca: Path, **over: Any) -> SmtpSettings:
    values: dict[str, Any] = {
        "host": "127.0.0.1",
        "port": port,
        "starttls": True,
        "username": "robot",
        "password": "s3cret",
        "from_addr": "robot@example.com",
        "ca_file": ca,
        "timeout_s": 10.0,
    }
    values.update(over)
    return SmtpSettings(**values)


def _ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(task_id="t1", call_id="c1", workspace=tmp_path)


def _tool(*channels: MessageChannel) -> SendMessageTool:
    return build_send_message_tool([ConsoleChannel(EventBus()), *channels])


def _body(raw: bytes) -> str:
    msg = email.message_from_bytes(raw, policy=email.policy.default)
    part = msg.get_body(("plain",))
    assert part is not None
    return str(part.get_content()).replace("\r\n", "\n")  # SMTP lines end in CRLF


async def test_model_sends_email_through_starttls_and_login_and_off_list_is_refused(
    scripted_server: Any, tmp_path: Path, smtp_server: tuple[int, Mailbox], tls_files: Any
) -> None:
    """Acceptance 3: the scripted model calls send_message(channel="email"); the text
    arrives intact over STARTTLS after a login; an address off the allow-list is refused and
    nothing reaches the server."""
    port, box = smtp_server
    channel = EmailChannel(_settings(port, tls_files[0]), allow_to=["ops@example.com"])
    server = scripted_server(
        [
            {
                "tool_calls": [
                    call(
                        "send_message",
                        {"channel": "email", "to": "ops@example.com", "text": TEXT},
                        "m1",
                    )
                ]
            },
            {
                "tool_calls": [
                    call(
                        "send_message",
                        {"channel": "email", "to": "boss@elsewhere.org", "text": "hi"},
                        "m2",
                    )
                ],
                "expect": {"contains": "email sent to ops@example.com"},
            },
            {"text": "Sent to ops; boss is not allowed.", "expect": {"contains": "not allowed"}},
        ]
    )
    agent, rec = make_agent(server, tmp_path)
    agent.registry.add(make_send_message_tool(agent, [channel]))
    outcome = await agent.run_task("email ops and the boss that door 3 is open")
    await agent.close()
    assert outcome.status == "completed"
    results = {e.data["id"]: e.data for e in rec.of("tool_result")}
    assert results["m1"]["ok"] is True
    assert results["m1"]["metadata"] == {
        "channel": "email",
        "to": "ops@example.com",
        "chars": len(TEXT),
    }
    assert results["m2"]["ok"] is False
    assert "boss@elsewhere.org" in results["m2"]["error"]
    assert "ops@example.com" in results["m2"]["error"]  # names who is allowed
    assert len(box.messages) == 1
    mail_from, rcpts, raw, tls = box.messages[0]
    assert (mail_from, rcpts, tls) == ("robot@example.com", ["ops@example.com"], True)
    assert _body(raw).rstrip("\n") == TEXT
    parsed = email.message_from_bytes(raw, policy=email.policy.default)
    assert parsed["Subject"] == "Door 3 is open."
    assert not rec.of("message")  # nothing went to the console


async def test_recipient_allow_list_is_case_insensitive_and_takes_wildcards(tmp_path: Path) -> None:
    channel = EmailChannel(
        _settings(1, tmp_path / "none.pem"), allow_to=["OPS@example.com", "*@robots.example.com"]
    )
    assert channel.allows("ops@EXAMPLE.com")
    assert channel.allows("r2@robots.example.com")
    assert not channel.allows("r2@robots.example.com.evil.org")
    assert not channel.allows("ops@example.org")


BYPASSES = (
    "evil@attacker.test,ops@example.com",
    "<evil@attacker.test>@example.com",
    "evil@attacker.test (ops@example.com",
    "evil@attacker.test;x@example.com",
    "Ops <evil@attacker.test> , x@example.com",
    "<@attacker.test:ops@example.com>",
    "undisclosed: evil@attacker.test; x@example.com",
    '"evil@attacker.test"@example.com',
    "evil%attacker.test@example.com",
    "ops@example.com\r\nBcc: evil@attacker.test",
)
"""``to`` values that matched ``*@example.com`` although the envelope went, or could go, to
the attacker (issue 39 item 11; the first four are the issue's)."""


async def test_allow_list_bypasses_reach_nobody_through_a_real_smtp_server(
    scripted_server: Any, tmp_path: Path, smtp_server: tuple[int, Mailbox], tls_files: Any
) -> None:
    """Issue 39 item 11: the model sends to each bypass string under the docs' wildcard entry
    ``*@example.com``; each is a failed result saying what is wrong with it, and the SMTP
    server is never given a recipient. A plain address of the domain still arrives, and the
    envelope carries exactly it. (Before: the first four reached RCPT TO as
    evil@attacker.test.)"""
    port, box = smtp_server
    channel = EmailChannel(_settings(port, tls_files[0]), allow_to=["*@example.com"])
    calls = [
        call("send_message", {"channel": "email", "to": to, "text": "secrets"}, f"b{i}")
        for i, to in enumerate(BYPASSES)
    ]
    ok = call("send_message", {"channel": "email", "to": " Ops@Example.com ", "text": "hi"}, "ok")
    server = scripted_server(
        [
            {"tool_calls": calls},
            {"tool_calls": [ok], "expect": {"contains": "not one plain email address"}},
            {"text": "Only ops got it.", "expect": {"contains": "email sent to Ops@Example.com"}},
        ]
    )
    bounds = Bounds(max_calls_state=len(BYPASSES) + 1, backoff_base_s=0.01)
    agent, rec = make_agent(server, tmp_path, bounds=bounds)
    agent.registry.add(make_send_message_tool(agent, [channel]))
    outcome = await agent.run_task("mail the secrets")
    await agent.close()
    assert outcome.status == "completed"
    results = {e.data["id"]: e.data for e in rec.of("tool_result")}
    for i, to in enumerate(BYPASSES):
        assert results[f"b{i}"]["ok"] is False, to
        assert "not one plain email address" in results[f"b{i}"]["error"], to
        assert "nothing was sent" in results[f"b{i}"]["error"], to
    assert results["ok"]["ok"] is True
    assert box.rcpts == ["Ops@Example.com"]
    assert [(m[0], m[1]) for m in box.messages] == [("robot@example.com", ["Ops@Example.com"])]
    parsed = email.message_from_bytes(box.messages[0][2], policy=email.policy.default)
    assert parsed["To"] == "Ops@Example.com"


@pytest.mark.parametrize("to", BYPASSES)
def test_a_bypass_string_is_neither_allowed_nor_parsed(tmp_path: Path, to: str) -> None:
    channel = EmailChannel(_settings(1, tmp_path / "none.pem"), allow_to=["*@example.com"])
    assert not channel.allows(to)
    with pytest.raises(ToolArgumentError, match="not one plain email address"):
        channel.check_recipient(to)


@given(
    st.text(alphabet=st.sampled_from("ab.@,;<>()\":%! \t\r\n[]'+-_"), max_size=14).map(
        lambda middle: middle + "@example.com"
    )
)
@settings(max_examples=400, deadline=None)
def test_whatever_the_allow_list_accepts_smtplib_sends_to_that_one_address(middle: str) -> None:
    """Any ``to`` the email channel accepts under ``*@example.com`` is one address of
    example.com, exactly the address smtplib then puts in RCPT TO (its ``quoteaddr``)."""
    channel = EmailChannel(_settings(1, Path("none.pem")), allow_to=["*@example.com"])
    if not channel.allows(middle):
        return
    recipient = channel.check_recipient(middle)
    assert recipient == middle.strip()
    assert smtplib.quoteaddr(recipient) == f"<{recipient}>"
    assert email.utils.getaddresses([recipient]) == [("", recipient)]
    assert recipient.lower().endswith("@example.com") and recipient.count("@") == 1


async def test_smtp_server_that_refuses_the_recipient_is_a_clear_result(
    tmp_path: Path, smtp_server: tuple[int, Mailbox], tls_files: Any
) -> None:
    port, box = smtp_server
    box.refuse_rcpt = True
    tool = _tool(EmailChannel(_settings(port, tls_files[0]), ["ops@example.com"]))
    with pytest.raises(Exception) as info:
        await tool.invoke(
            {"channel": "email", "to": "ops@example.com", "text": "x"}, _ctx(tmp_path)
        )
    assert "550" in str(info.value) and "refused the recipient" in str(info.value)
    assert box.messages == []


async def test_wrong_password_is_a_refused_login(
    tmp_path: Path, smtp_server: tuple[int, Mailbox], tls_files: Any
) -> None:
    port, box = smtp_server
    tool = _tool(EmailChannel(_settings(port, tls_files[0], password="nope"), ["ops@example.com"]))
    with pytest.raises(Exception) as info:
        await tool.invoke(
            {"channel": "email", "to": "ops@example.com", "text": "x"}, _ctx(tmp_path)
        )
    assert "refused the login of 'robot'" in str(info.value) and "535" in str(info.value)
    assert box.messages == []


async def test_user_name_without_a_password_never_logs_in_with_an_empty_one(
    tmp_path: Path, smtp_server: tuple[int, Mailbox], tls_files: Any
) -> None:
    """Audit B finding 5: an unset password went to the server as b'' (twice)."""
    port, box = smtp_server
    tool = _tool(EmailChannel(_settings(port, tls_files[0], password=None), ["ops@example.com"]))
    with pytest.raises(Exception) as info:
        await tool.invoke(
            {"channel": "email", "to": "ops@example.com", "text": "x"}, _ctx(tmp_path)
        )
    assert "messages.email.username is 'robot' but there is no password" in str(info.value)
    assert "messages.email.password_env" in str(info.value)
    assert box.logins == [] and box.messages == []


@pytest.mark.parametrize(
    ("env", "state"), [({}, "which is not set"), ({"NOPE_UNSET_VAR": ""}, "which is empty")]
)
def test_password_env_naming_an_unset_variable_is_a_config_error(
    tmp_path: Path, env: dict[str, str], state: str
) -> None:
    """Audit B finding 5: it was read as no password, and the login was tried with b''."""
    path = tmp_path / "loopact.yaml"
    path.write_text(
        "messages:\n  email:\n    host: 127.0.0.1\n    username: robot\n"
        "    password_env: NOPE_UNSET_VAR\n    from_addr: robot@example.com\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as info:
        load_config(path, env=env)
    assert str(info.value).startswith(f"messages.email.password_env names NOPE_UNSET_VAR, {state}")
    assert info.value.key == "messages.email.password_env"


async def test_untrusted_certificate_is_refused(
    tmp_path: Path, smtp_server: tuple[int, Mailbox]
) -> None:
    port, box = smtp_server
    tool = _tool(EmailChannel(_settings(port, None), ["ops@example.com"]))
    with pytest.raises(Exception) as info:
        await tool.invoke(
            {"channel": "email", "to": "ops@example.com", "text": "x"}, _ctx(tmp_path)
        )
    assert "TLS with SMTP server" in str(info.value) and "ca_file" in str(info.value)
    assert box.messages == []


async def test_server_without_starttls_gets_no_credentials(tmp_path: Path) -> None:
    box = Mailbox()
    port = _free_port()
    controller = Controller(box, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        tool = _tool(EmailChannel(_settings(port, None), ["ops@example.com"]))
        with pytest.raises(Exception) as info:
            await tool.invoke(
                {"channel": "email", "to": "ops@example.com", "text": "x"}, _ctx(tmp_path)
            )
    finally:
        controller.stop()
    assert "does not offer STARTTLS" in str(info.value)
    assert box.messages == []


async def test_server_that_never_answers_times_out(tmp_path: Path) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)  # accepts the connection (kernel backlog), never greets
    try:
        port = listener.getsockname()[1]
        tool = _tool(EmailChannel(_settings(port, None, timeout_s=0.5), ["ops@example.com"]))
        with pytest.raises(Exception) as info:
            await tool.invoke(
                {"channel": "email", "to": "ops@example.com", "text": "x"}, _ctx(tmp_path)
            )
    finally:
        listener.close()
    assert "did not answer within 0.5 s" in str(info.value)


async def test_connection_refused_is_a_clear_result(tmp_path: Path) -> None:
    tool = _tool(EmailChannel(_settings(_free_port(), None), ["ops@example.com"]))
    with pytest.raises(Exception) as info:
        await tool.invoke(
            {"channel": "email", "to": "ops@example.com", "text": "x"}, _ctx(tmp_path)
        )
    assert "cannot send email through SMTP server 127.0.0.1" in str(info.value)


async def test_bad_arguments_are_refused_before_anything_is_sent(tmp_path: Path) -> None:
    sent: list[str] = []

    class Recorder(MessageChannel):
        name = "pager"
        description = "a pager; `to` is a pager number"

        async def deliver(self, to: str | None, text: str, ctx: ToolContext) -> str:
            sent.append(text)
            return "paged"

    tool = _tool(Recorder(allow_to=["42"]))
    ctx = _ctx(tmp_path)
    cases = [
        ({"channel": "pager", "to": "42", "text": "  "}, "needs some text"),
        ({"channel": "pager", "to": "42", "text": "x" * 20_001}, "at most 20000"),
        ({"channel": "fax", "to": "42", "text": "x"}, "configured channels: console, pager"),
        ({"channel": "pager", "text": "x"}, "needs `to`; allowed recipients: 42"),
        ({"channel": "pager", "to": "43", "text": "x"}, "'43' is not allowed"),
    ]
    for args, expected in cases:
        with pytest.raises(Exception) as info:
            await tool.invoke(args, ctx)
        assert expected in str(info.value), args
    assert sent == []
    result = await tool.invoke({"channel": "pager", "to": "42", "text": "hello"}, ctx)
    assert result.ok and result.data == "paged" and sent == ["hello"]
    assert tool.parameters["properties"]["channel"]["enum"] == ["console", "pager"]
    assert "pager (a pager; `to` is a pager number), to one of: 42" in tool.description


@pytest.mark.parametrize("turns", [0, 1, 2, 3, 4])
async def test_a_cancel_as_the_channel_delivers_is_never_swallowed(
    tmp_path: Path, turns: int
) -> None:
    """A task stopped while the receipt is on its way ends cancelled (asyncio.wait_for
    before 3.12 returned the receipt and the stopped task went on)."""
    receipt: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    started = asyncio.Event()

    class Slow(MessageChannel):
        name = "pager"

        async def deliver(self, to: str | None, text: str, ctx: ToolContext) -> str:
            started.set()
            return await receipt

    tool = _tool(Slow(allow_to=["42"]))
    args = {"channel": "pager", "to": "42", "text": "hi"}
    task = asyncio.ensure_future(tool.invoke(args, _ctx(tmp_path)))
    await asyncio.wait_for(started.wait(), 5)
    receipt.set_result("paged")
    for _ in range(turns):  # the receipt travels through the loop's callbacks meanwhile
        await asyncio.sleep(0)
    if task.cancel():
        with pytest.raises(asyncio.CancelledError):
            await task
    else:
        assert task.result().data == "paged"


async def test_console_is_the_default_channel(tmp_path: Path) -> None:
    """The continuous-mode form send_message(text) still emits the console message."""
    bus = EventBus()
    seen: list[Any] = []
    bus.subscribe(seen.append)
    tool = build_send_message_tool([ConsoleChannel(bus)])
    result = await tool.invoke({"text": "On it."}, _ctx(tmp_path))
    assert result.ok and result.data == "delivered"
    assert [(e.type, e.task_id, e.data) for e in seen] == [
        ("message", "t1", {"text": "On it.", "source": "agent"})
    ]


async def test_config_keys_as_written_in_the_issue_build_the_email_channel(
    tmp_path: Path, smtp_server: tuple[int, Mailbox], tls_files: Any
) -> None:
    """The ``messages.email`` keys of issue 19, with the password from LOOPACT_SMTP_PASSWORD."""
    port, box = smtp_server
    path = tmp_path / "loopact.yaml"
    path.write_text(
        textwrap.dedent(
            f"""\
            messages:
              email:
                host: 127.0.0.1
                port: {port}
                starttls: true
                username: robot
                password_env: LOOPACT_SMTP_PASSWORD
                from_addr: robot@example.com
                allow_to: [ops@example.com]
                ca_file: {tls_files[0]}
            """
        ),
        encoding="utf-8",
    )
    cfg, _ = load_config(path, env={"LOOPACT_SMTP_PASSWORD": "s3cret"})
    assert cfg.messages.email is not None and cfg.messages.email.password() == "s3cret"
    assert "s3cret" not in repr(cfg) and "s3cret" not in cfg.model_dump_json()
    async with AsyncExitStack() as stack:
        channels = await open_message_channels(cfg, stack)
        assert [c.name for c in channels] == ["email"]
        tool = _tool(*channels)
        result = await tool.invoke(
            {"channel": "email", "to": "ops@example.com", "text": "from config"}, _ctx(tmp_path)
        )
    assert result.ok
    await asyncio.to_thread(box.arrived.wait, 5)
    assert _body(box.messages[0][2]).strip() == "from config"


async def test_examples_name_an_allowed_recipient_of_each_channel(tmp_path: Path) -> None:
    """A model that writes calls as text copies the example's channel and ``to`` (issue 20):
    each channel with recipients gets one example whose call its allow-list accepts."""
    from loopact.nodes.mqtt.channel import MqttChannel

    sent: list[tuple[str | None, str]] = []

    class Recorder(MessageChannel):
        name = "pager"
        description = "a pager; `to` is a pager number"

        async def deliver(self, to: str | None, text: str, ctx: ToolContext) -> str:
            sent.append((to, text))
            return "paged"

    mqtt = MqttChannel(lambda: None, allow_to=["robots/#", "robots/alerts"])
    wild = Recorder(allow_to=["*"])
    wild.name = "beeper"
    tool = _tool(Recorder(allow_to=["4*", "42"]), mqtt, wild)
    assert tool.examples == (
        (
            "send 42 a message on pager that the battery is low",
            {"channel": "pager", "to": "42", "text": "Battery low: I need to recharge soon."},
        ),
        (
            "tell the fleet on the MQTT topic robots/alerts that the battery is low",
            {
                "channel": "mqtt",
                "to": "robots/alerts",
                "text": "Battery low: I need to recharge soon.",
            },
        ),
    )  # no example for a channel whose allow-list has only patterns, none for the console
    assert mqtt.check_recipient(tool.examples[1][1]["to"]) == "robots/alerts"
    # the grammar writes required keys first: an example in that order is one it can copy
    assert [list(args) for _, args in tool.examples] == [["text", "channel", "to"]] * 2
    result = await tool.invoke(dict(tool.examples[0][1]), _ctx(tmp_path))
    assert result.ok and sent == [("42", "Battery low: I need to recharge soon.")]
    console_only = build_send_message_tool([ConsoleChannel(EventBus())])
    assert console_only.examples == ()
    # the compact catalogue shows an argument's first sentence: the allow-lists are in it
    assert tool.parameters["properties"]["to"]["description"] == (
        "The recipient on that channel (not needed for console): pager: one of 4*, 42; "
        "mqtt: one of robots/#, robots/alerts; beeper: one of *."
    )
    assert console_only.parameters["properties"]["to"]["description"] == (
        "The recipient on that channel (not needed for console)."
    )
