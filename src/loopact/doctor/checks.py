"""What this machine has for each feature (``loopact doctor``; SPEC H1, H2; issue 44).

Each check returns :class:`Check` rows: what was found and, for a missing piece, the command
that brings it. A row is ``needed`` when the main job as configured (``loopact run``: the
simulator or the configured robot, the configured endpoint or else the local brain) cannot run
without it; ``loopact doctor`` exits 0 exactly when no needed row is missing. Nothing here
starts a robot, a model or a server: imports are looked up (``importlib.util.find_spec``),
programs found on ``PATH``, ports bound and released at once.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from loopact.access import listen_socket
from loopact.config import Config

Status = Literal["ok", "missing", "warn", "info"]


@dataclass(frozen=True)
class Check:
    """One row of the doctor's table.

    Attributes:
        feature: What it is for (``the agent``, ``simulator``, ``local brain``, ...).
        name: What was checked.
        status: ``ok``; ``missing`` (the feature cannot work); ``warn`` (it works with less);
            ``info`` (a fact, nothing to fix).
        detail: What was found.
        fix: The command or setting that brings a missing piece ("" when nothing to do).
        needed: The main job as configured needs it.
    """

    feature: str
    name: str
    status: Status
    detail: str
    fix: str = ""
    needed: bool = False

    @property
    def blocks(self) -> bool:
        """A needed piece is missing: the main job cannot run."""
        return self.needed and self.status == "missing"


def has_module(name: str) -> bool:
    """Whether ``import name`` would find it (nothing is imported)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def program(name: str, *also: str) -> str | None:
    """The path of a program on ``PATH`` (or in ``/usr/sbin``, where Debian puts daemons)."""
    for candidate in (name, *also):
        found = shutil.which(candidate) or shutil.which(candidate, path="/usr/sbin:/sbin")
        if found:
            return found
    return None


def port_free(host: str, port: int) -> bool:
    """Whether ``host:port`` can be bound now (bound as the servers bind it, and released at
    once: :func:`loopact.access.listen_socket`)."""
    try:
        listen_socket(host, port).close()
    except OSError:
        return False
    return True


def check_python() -> Check:
    """The Python running loopact (3.10 or newer: an older one cannot import it at all)."""
    version = ".".join(map(str, sys.version_info[:3]))
    return Check("the agent", "Python", "ok", f"{version} ({sys.executable})", needed=True)


def check_simulator(cfg: Config) -> list[Check]:
    """MuJoCo and a headless OpenGL library (EGL or OSMesa) for its camera."""
    import ctypes.util

    needed = cfg.robot.kind == "sim"
    rows = []
    if has_module("mujoco"):
        rows.append(Check("simulator", "MuJoCo", "ok", "installed", needed=needed))
    else:
        fix = "make run (installs the sim extra) or pip install 'loopact[sim]'"
        rows.append(Check("simulator", "MuJoCo", "missing", "not installed", fix, needed))
    libs = [name for name in ("EGL", "OSMesa") if ctypes.util.find_library(name)]
    if os.environ.get("MUJOCO_GL") or libs:
        detail = f"MUJOCO_GL={os.environ['MUJOCO_GL']}" if "MUJOCO_GL" in os.environ else ""
        rows.append(
            Check("simulator", "headless OpenGL", "ok", detail or ", ".join(libs), needed=needed)
        )
    else:
        fix = "sudo apt-get install libegl1 libegl-mesa0 (make run does it)"
        rows.append(
            Check("simulator", "headless OpenGL", "missing", "no EGL or OSMesa", fix, needed)
        )
    return rows


def check_ros2(cfg: Config) -> list[Check]:
    """rclpy (the Kilted wheels or a sourced ROS 2) and the generated loopact_interfaces."""
    needed = cfg.robot.kind == "ros2" or cfg.nodes.transport == "ros2"
    fix = "make ros2 (ROS 2 Kilted wheels and loopact_interfaces; docs/ros2.md)"
    rows = []
    for name, what in (("rclpy", "rclpy"), ("loopact_interfaces", "generated interfaces")):
        if has_module(name):
            rows.append(Check("ROS 2", what, "ok", f"{name} importable", needed=needed))
        else:
            status: Status = "missing" if needed else "warn"
            rows.append(Check("ROS 2", what, status, f"{name} not importable", fix, needed))
    return rows


def check_mqtt(cfg: Config) -> Check:
    """The mosquitto broker (for a broker on this machine, and the MQTT tests)."""
    from urllib.parse import urlsplit

    host = urlsplit(cfg.mqtt.broker).hostname or ""
    needed = cfg.nodes.transport == "mqtt" and host in ("127.0.0.1", "localhost", "::1")
    found = program("mosquitto")
    if found:
        return Check("MQTT", "mosquitto", "ok", found, needed=needed)
    status: Status = "missing" if needed else "warn"
    fix = "sudo apt-get install mosquitto (make run does it)"
    return Check("MQTT", "mosquitto", status, "not installed", fix, needed)


def check_voice(cfg: Config) -> list[Check]:
    """espeak-ng, the speech-to-text engine and a sound card."""
    needed = cfg.voice.enabled
    rows = []
    espeak = program("espeak-ng")
    status: Status = "missing" if needed else "warn"
    if espeak:
        rows.append(Check("voice", "espeak-ng", "ok", espeak, needed=needed))
    else:
        fix = "sudo apt-get install espeak-ng (make run does it)"
        rows.append(Check("voice", "espeak-ng", status, "not installed", fix, needed))
    if has_module("faster_whisper") and has_module("webrtcvad"):
        found = "faster-whisper, webrtcvad"
        rows.append(Check("voice", "speech to text", "ok", found, needed=needed))
    else:
        fix = "make run (installs the voice extra) or pip install 'loopact[voice]'"
        rows.append(Check("voice", "speech to text", status, "not installed", fix, needed))
    rows.append(_audio_device(needed))
    return rows


def _audio_device(needed: bool) -> Check:
    fix = "no sound card: use --audio-in FILE.wav / --audio-out FILE.wav (docs/voice.md)"
    try:
        import sounddevice

        devices = list(sounddevice.query_devices())
    except Exception as exc:  # PortAudio missing, or no device: the same to the user
        return Check("voice", "audio device", "warn", f"none ({type(exc).__name__})", fix, False)
    ins = sum(1 for d in devices if d.get("max_input_channels", 0) > 0)
    outs = sum(1 for d in devices if d.get("max_output_channels", 0) > 0)
    if ins and outs:
        return Check("voice", "audio device", "ok", f"{ins} input, {outs} output", needed=needed)
    return Check("voice", "audio device", "warn", f"{ins} input, {outs} output", fix, False)


def check_browser() -> Check:
    """Debian's Chromium (the web console's browser tests; make test)."""
    found = program("chromium", "chromium-browser")
    if found:
        return Check("browser tests", "Chromium", "ok", found)
    fix = "make test (scripts/install-browser.sh)"
    return Check("browser tests", "Chromium", "warn", "not installed", fix)


def check_ports(cfg: Config) -> list[Check]:
    """The ports this run would listen on are free."""
    wanted: list[tuple[str, str, int]] = []
    if cfg.web.enabled:
        wanted.append(("web console", cfg.web.host, cfg.web.port))
    if cfg.foxglove.enabled and cfg.foxglove.port:
        wanted.append(("Foxglove live view", cfg.foxglove.host, cfg.foxglove.port))
    rows = []
    for feature, host, port in wanted:
        if port_free(host, port):
            rows.append(Check(feature, f"port {port}", "ok", f"{host}:{port} free"))
        else:
            key = "web.port (--web-port)" if feature == "web console" else "foxglove.port"
            fix = f"stop the program on it, or choose another with {key}"
            rows.append(Check(feature, f"port {port}", "warn", f"{host}:{port} in use", fix))
    return rows


def check_web() -> Check:
    """The web console's server (the web extra)."""
    if all(has_module(m) for m in ("fastapi", "uvicorn")):
        return Check("web console", "FastAPI, uvicorn", "ok", "installed")
    fix = "make run (installs the web extra) or pip install 'loopact[web]'"
    return Check("web console", "FastAPI, uvicorn", "warn", "not installed", fix)


def check_observe(cfg: Config, telemetry_on: bool) -> list[Check]:
    """foxglove-sdk (--record, --foxglove) and the OpenTelemetry SDK (telemetry)."""
    fix = "make run (installs the observe extra) or pip install 'loopact[observe]'"
    recording = cfg.record.path is not None or cfg.foxglove.enabled
    wants = (
        ("recording", "foxglove-sdk", "foxglove", recording),
        ("telemetry", "OpenTelemetry SDK", "opentelemetry.sdk", telemetry_on),
    )
    rows = []
    for feature, name, module, needed in wants:
        if has_module(module):
            rows.append(Check(feature, name, "ok", "installed", needed=needed))
        else:
            status: Status = "missing" if needed else "warn"
            rows.append(Check(feature, name, status, "not installed", fix, needed))
    return rows


def blocking(rows: Iterable[Check]) -> list[Check]:
    """The needed rows that are missing."""
    return [row for row in rows if row.blocks]
