"""A real MQTT broker on a free 127.0.0.1 port, for tests and benchmarks (SPEC C4, X2).

:class:`MqttBroker` runs Debian's ``mosquitto`` (installed by ``scripts/system-deps.sh``) as a
child process, with persistence on (so a restart keeps sessions and queued QoS 1 messages, as
a production broker does) and, optionally, a password file. When ``mosquitto`` is not
installed it runs the pure-Python ``amqtt`` broker (the ``dev`` extra) instead, in its own
process, so a developer without apt runs the same tests; ``LOOPACT_TEST_BROKER=amqtt`` forces
it. ::

    broker = MqttBroker(tmp_path).start()
    ... broker.url ...            # mqtt://127.0.0.1:<port>
    broker.restart()              # SIGTERM, start again on the same port
    broker.stop()
"""

from __future__ import annotations

import getpass
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Literal

BrokerKind = Literal["mosquitto", "amqtt"]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def mosquitto_path() -> str | None:
    """The ``mosquitto`` executable, or None."""
    return shutil.which("mosquitto") or (
        "/usr/sbin/mosquitto" if os.access("/usr/sbin/mosquitto", os.X_OK) else None
    )


def default_kind() -> BrokerKind:
    """``mosquitto`` when installed (unless ``LOOPACT_TEST_BROKER=amqtt``), else ``amqtt``."""
    forced = os.environ.get("LOOPACT_TEST_BROKER", "")
    if forced in ("mosquitto", "amqtt"):
        return forced  # type: ignore[return-value]
    return "mosquitto" if mosquitto_path() else "amqtt"


class MqttBroker:
    """A broker process (see the module docstring).

    Args:
        workdir: Folder for its config, persistence file and log.
        kind: ``mosquitto`` or ``amqtt`` (default: :func:`default_kind`).
        users: ``{user: password}``; when given, anonymous clients are refused.
        port: TCP port (default: a free one).
        tls: ``(ca_file, cert_file, key_file)`` of the broker: the listener speaks TLS and
            requires a client certificate signed by that CA (mosquitto only).
        acl: The text of a mosquitto ``acl_file`` (who may read and write which topics;
            docs/security.md), or None for none (mosquitto only).
    """

    def __init__(
        self,
        workdir: Path,
        kind: BrokerKind | None = None,
        users: dict[str, str] | None = None,
        port: int | None = None,
        tls: tuple[Path, Path, Path] | None = None,
        acl: str | None = None,
    ) -> None:
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.kind: BrokerKind = kind or default_kind()
        self.users = dict(users or {})
        self.tls = tls
        self.acl = acl
        self.port = port or free_port()
        self.host = "127.0.0.1"
        self.log_path = self.workdir / f"{self.kind}.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    @property
    def url(self) -> str:
        """``mqtt://127.0.0.1:<port>``."""
        return f"{'mqtts' if self.tls else 'mqtt'}://{self.host}:{self.port}"

    # ------------------------------------------------------------------ config
    def _mosquitto_conf(self) -> Path:
        lines = [
            # run as whoever we are: mosquitto started as root otherwise switches to the
            # "mosquitto" user, who cannot read the test's folder
            f"user {getpass.getuser()}",
            f"listener {self.port} {self.host}",
            "persistence true",
            f"persistence_location {self.workdir}/",
            "persistence_file mosquitto.db",
            "autosave_interval 1",
            "persistent_client_expiration 1h",
            "max_queued_messages 10000",
            "set_tcp_nodelay true",
            "log_type error",
            "log_type warning",
            "log_type notice",
            f"log_dest file {self.log_path}",
        ]
        if self.tls:
            ca, cert, key = self.tls
            lines += [f"cafile {ca}", f"certfile {cert}", f"keyfile {key}"]
            lines += ["require_certificate true", "tls_version tlsv1.2"]
        if self.users:
            pwfile = self.workdir / "passwd"
            pwfile.write_text("")
            pwfile.chmod(0o600)
            for user, password in self.users.items():
                subprocess.run(
                    ["mosquitto_passwd", "-b", str(pwfile), user, password],
                    check=True,
                    capture_output=True,
                )
            lines += ["allow_anonymous false", f"password_file {pwfile}"]
        else:
            lines.append("allow_anonymous true")
        if self.acl is not None:
            acl_file = self.workdir / "acl"
            acl_file.write_text(self.acl, encoding="utf-8")
            acl_file.chmod(0o600)
            lines.append(f"acl_file {acl_file}")
        conf = self.workdir / "mosquitto.conf"
        conf.write_text("\n".join(lines) + "\n")
        return conf

    def _amqtt_conf(self) -> Path:
        import yaml

        plugins: dict[str, object] = {}
        if self.users:
            from pwdlib import PasswordHash

            hasher = PasswordHash.recommended()
            pwfile = self.workdir / "passwd"
            pwfile.write_text(
                "".join(f"{u}:{hasher.hash(p)}\n" for u, p in self.users.items()), "utf-8"
            )
            plugins["amqtt.plugins.authentication.AnonymousAuthPlugin"] = {"allow_anonymous": False}
            plugins["amqtt.plugins.authentication.FileAuthPlugin"] = {"password_file": str(pwfile)}
        else:
            plugins["amqtt.plugins.authentication.AnonymousAuthPlugin"] = {"allow_anonymous": True}
        conf = self.workdir / "amqtt.yaml"
        conf.write_text(
            yaml.safe_dump(
                {
                    "listeners": {"default": {"type": "tcp", "bind": f"{self.host}:{self.port}"}},
                    "plugins": plugins,
                }
            )
        )
        return conf

    # ------------------------------------------------------------------ lifecycle
    def start(self, timeout_s: float = 20.0) -> MqttBroker:
        """Start the broker and wait until it accepts connections.

        Raises:
            RuntimeError: It exited or did not listen within ``timeout_s`` (the log is quoted).
        """
        if (self.tls or self.acl is not None) and self.kind != "mosquitto":
            raise RuntimeError("TLS and ACL brokers are mosquitto only")
        if self.kind == "mosquitto":
            exe = mosquitto_path()
            if exe is None:
                raise RuntimeError("mosquitto is not installed (scripts/system-deps.sh)")
            args = [exe, "-c", str(self._mosquitto_conf())]
        else:
            args = [
                sys.executable,
                "-m",
                "amqtt.scripts.broker_script",
                "-c",
                str(self._amqtt_conf()),
            ]
        out = (self.workdir / f"{self.kind}.out").open("ab")
        self.proc = subprocess.Popen(
            args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
        out.close()
        self.starts += 1
        deadline = time.monotonic() + timeout_s
        while not self._accepts():
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.kind} exited at start:\n{self.output()[-2000:]}")
            if time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"{self.kind} did not listen in time:\n{self.output()[-2000:]}")
            time.sleep(0.02)
        return self

    def _accepts(self) -> bool:
        try:
            with socket.create_connection((self.host, self.port), timeout=0.2):
                return True
        except OSError:
            return False

    def output(self) -> str:
        """The broker's log and console output."""
        text = ""
        for path in (self.log_path, self.workdir / f"{self.kind}.out"):
            if path.exists():
                text += path.read_text(errors="replace")
        return text

    def stop(self) -> None:
        """Stop gracefully (SIGTERM; mosquitto writes its persistence file)."""
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM if self.kind == "mosquitto" else signal.SIGINT)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            self.kill()

    def kill(self) -> None:
        """SIGKILL (a crashed broker)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def restart(self) -> None:
        """Stop and start again on the same port."""
        self.stop()
        self.start()

    def __enter__(self) -> MqttBroker:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()
