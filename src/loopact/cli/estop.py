"""``loopact estop``: the operator's emergency stop from a shell (issue 41; SPEC X3, H6).

``loopact estop proof NONCE`` prints the reset proof for a nonce (HMAC-SHA256 of the nonce,
keyed with the operator's secret: ``LOOPACT_ESTOP_TOKEN``, ``robot.estop.reset_token`` of
``--config``, or typed at a hidden prompt); ``loopact estop stop`` latches a robot's (or with
``--fleet`` every robot's on an MQTT broker) emergency stop; ``loopact estop reset`` reads the
robot's current nonce, proves the secret over it without sending it, and reports whether the
governor released the stop. ``--transport ros2`` (the default) talks to ``loopact base`` on
``/<agent>/base/...``; ``--transport mqtt`` to a robot's panel topics
(:mod:`loopact.robot.panel_topics`).
"""

from __future__ import annotations

import asyncio
import getpass
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import typer

from loopact._compat import wait_within
from loopact.cli._common import EXIT_ERROR, EXIT_OK, EXIT_USAGE, check_agent_name, err
from loopact.errors import ConfigError, LoopactError

estop_app = typer.Typer(
    name="estop",
    help="The operator's emergency stop: stop a robot or the fleet, reset with a proof.",
    no_args_is_help=True,
    add_completion=False,
)

ANSWER_S = 5.0
"""How long stop and reset wait for the governor's answer, seconds."""


def _secret(config: Path | None) -> str:
    from loopact.config import load_config

    try:
        cfg, _ = load_config(config)
    except ConfigError as exc:
        err.print(f"loopact: {exc}", markup=False)
        raise typer.Exit(EXIT_USAGE) from None
    token = cfg.robot.estop.reset_token
    if token is not None:
        return token.get_secret_value()
    if sys.stdin.isatty():
        typed = getpass.getpass("the operator's reset secret: ")
        if typed:
            return typed
    err.print(
        "loopact: no reset secret: set LOOPACT_ESTOP_TOKEN (or robot.estop.reset_token in "
        "--config), or type it at a terminal",
        markup=False,
    )
    raise typer.Exit(EXIT_USAGE)


@estop_app.command("proof")
def proof(
    nonce: str = typer.Argument(..., help="The nonce the robot's e-stop state shows."),
    config: Path | None = typer.Option(None, "--config", help="Config file (robot.estop)."),
) -> None:
    """Print the reset proof for NONCE (the secret never leaves this machine)."""
    from loopact.robot.estop import estop_proof

    typer.echo(estop_proof(_secret(config), nonce.strip()))


def _topics(agent: str, transport: str) -> dict[str, str]:
    if transport not in ("ros2", "mqtt"):
        err.print(f"loopact estop: --transport {transport!r}: use ros2 or mqtt", markup=False)
        raise typer.Exit(EXIT_USAGE)
    if transport == "mqtt":
        from loopact.robot.panel_topics import panel_topics

        return panel_topics(agent)
    from loopact.robot.ros2_robot import base_request_topics

    req = base_request_topics(agent)
    return {"estop": req["emergency_stop"], "state": req["status"], "fleet": ""}


def _state_of(message: dict[str, Any], transport: str) -> dict[str, Any]:
    if transport == "mqtt":
        return message
    estop = message.get("estop")
    return {**(estop if isinstance(estop, dict) else {}), "event": message.get("event")}


async def _connector(transport: str, broker: str | None, config: Path | None) -> Any:
    if transport == "mqtt":
        from loopact.app.mqtt import mqtt_settings
        from loopact.config import load_config
        from loopact.nodes.mqtt.connector import MqttConnector

        cfg, _ = load_config(config, overrides={"mqtt": {"broker": broker}})
        return MqttConnector(mqtt_settings(cfg), prefix=cfg.mqtt.prefix, role="estop")
    from loopact.nodes.ros2.connector import Ros2Connector

    return Ros2Connector(f"loopact_estop_{os.getpid()}")


async def _exchange(
    transport: str,
    broker: str | None,
    config: Path | None,
    agent: str,
    send: Any,
    done: Any,
) -> dict[str, Any] | None:
    """Subscribe to the state, ``send(publish, state)`` when it is known, wait for ``done``."""
    topics = _topics(agent, transport)
    conn = await _connector(transport, broker, config)
    states: list[dict[str, Any]] = []
    arrived = asyncio.Event()

    def on_state(payload: Any) -> None:
        try:
            message = json.loads(str(payload))
        except ValueError:
            return
        if isinstance(message, dict):
            states.append(_state_of(message, transport))
            arrived.set()

    try:
        await conn.start()
        conn.subscribe(topics["state"], "string", on_state, latched=True, depth=50)
        await wait_within(arrived.wait(), ANSWER_S)
        target = topics["fleet"] or topics["estop"]
        for topic in {topics["estop"], target}:
            conn.advertise(topic, "string")
        match_end = time.monotonic() + ANSWER_S  # a new ROS 2 publisher is matched first
        while True:
            if conn.subscriber_count(topics["estop"]) != 0 or time.monotonic() > match_end:
                break
            await asyncio.sleep(0.02)
        seen = len(states)
        await send(conn, topics, states[-1])
        end = time.monotonic() + ANSWER_S
        while time.monotonic() < end:
            for state in states[seen:]:
                if done(state):
                    return state
            seen = len(states)
            arrived.clear()
            try:
                await wait_within(arrived.wait(), max(0.01, end - time.monotonic()))
            except asyncio.TimeoutError:
                break
        return None
    finally:
        await conn.shutdown()


def _run(coro: Any) -> Any:
    try:
        return asyncio.run(coro)
    except asyncio.TimeoutError:
        err.print(
            "loopact: no e-stop state from the robot (is it running, with the same agent name, "
            "ROS_DOMAIN_ID or broker?)",
            markup=False,
        )
        raise typer.Exit(EXIT_ERROR) from None
    except LoopactError as exc:
        err.print(f"loopact: {exc}", markup=False)
        raise typer.Exit(EXIT_ERROR) from None


_TRANSPORT = typer.Option("ros2", "--transport", help="ros2 (loopact base) or mqtt.")
_BROKER = typer.Option(None, "--broker", help="MQTT broker URL (--transport mqtt).")
_AGENT = typer.Option("loopact", "--agent-name", help="The robot's agent name.")
_CONFIG = typer.Option(None, "--config", help="Config file (robot.estop, mqtt.*).")


@estop_app.command("stop")
def stop(
    agent_name: str = _AGENT,
    transport: str = _TRANSPORT,
    broker: str | None = _BROKER,
    fleet: bool = typer.Option(False, "--fleet", help="Every robot on the broker (mqtt)."),
    by: str = typer.Option(os.environ.get("USER", "operator"), "--by", help="Who stops."),
    config: Path | None = _CONFIG,
) -> None:
    """Latch the emergency stop of a robot (or of the whole fleet on an MQTT broker)."""
    check_agent_name(agent_name)
    if fleet and transport != "mqtt":
        err.print("loopact estop stop: --fleet needs --transport mqtt", markup=False)
        raise typer.Exit(EXIT_USAGE)

    async def send(conn: Any, topics: dict[str, str], _state: dict[str, Any]) -> None:
        message = json.dumps({"command": "stop", "by": by, "reason": f"loopact estop by {by}"})
        await conn.publish(topics["fleet" if fleet else "estop"], message)

    state = _run(
        _exchange(transport, broker, config, agent_name, send, lambda s: bool(s.get("latched")))
    )
    if state is None:
        err.print("loopact: the robot did not confirm the stop in time", markup=False)
        raise typer.Exit(EXIT_ERROR)
    typer.echo(f"emergency stop latched ({state.get('source')}); nonce {state.get('nonce')}")
    raise typer.Exit(EXIT_OK)


@estop_app.command("reset")
def reset(
    agent_name: str = _AGENT,
    transport: str = _TRANSPORT,
    broker: str | None = _BROKER,
    by: str = typer.Option(os.environ.get("USER", "operator"), "--by", help="Who resets."),
    config: Path | None = _CONFIG,
) -> None:
    """Release a robot's emergency stop with a proof of the operator's secret."""
    from loopact.robot.estop import estop_proof

    check_agent_name(agent_name)
    secret = _secret(config)
    sent: dict[str, str] = {}

    async def send(conn: Any, topics: dict[str, str], state: dict[str, Any]) -> None:
        nonce = str(state.get("nonce") or "")
        sent["nonce"] = nonce
        sent["refused"] = str(state.get("resets_refused") or 0)
        proof = estop_proof(secret, nonce)
        message = {"command": "reset", "nonce": nonce, "proof": proof, "by": by}
        await conn.publish(topics["estop"], json.dumps(message))

    def answered(state: dict[str, Any]) -> bool:
        if transport == "mqtt":  # the state after the reset: a new nonce, or a refusal more
            refused = str(state.get("resets_refused") or 0) != sent.get("refused")
            return state.get("nonce") != sent.get("nonce") or refused
        return state.get("event") in ("estop_reset", "estop_reset_refused")

    state = _run(_exchange(transport, broker, config, agent_name, send, answered))
    if state is None:
        err.print("loopact: the robot did not answer the reset in time", markup=False)
        raise typer.Exit(EXIT_ERROR)
    if state.get("latched"):
        refused = state.get("last_reset_refused") or {}
        err.print(f"loopact: reset refused: {refused.get('reason', 'unknown')}", markup=False)
        raise typer.Exit(EXIT_ERROR)
    typer.echo("emergency stop released")
    raise typer.Exit(EXIT_OK)
