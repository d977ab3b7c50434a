"""The emergency stop's reset proof (issue 41, SPEC X3, H6): anyone latches; only a proof of the
operator's secret over the latch's fresh nonce releases it, never the secret itself, and a
proof seen once never works again. Refusals are counted and logged, and every decision is a
``governor`` decision with its source."""

from __future__ import annotations

import hashlib
import hmac
import logging
import subprocess
from typing import Any

import pytest

from loopact.errors import EmergencyStopError
from loopact.robot.estop import EstopLatch, estop_proof

SECRET = "operator-secret-0123456789"


def test_the_proof_is_hmac_sha256_of_the_nonce_as_openssl_prints_it() -> None:
    nonce = EstopLatch(SECRET).nonce
    want = hmac.new(SECRET.encode(), nonce.encode(), hashlib.sha256).hexdigest()
    assert estop_proof(SECRET, nonce) == want
    # the one-line command docs/security.md gives the operator
    out = subprocess.run(
        ["sh", "-c", f'printf %s "{nonce}" | openssl dgst -sha256 -hmac "{SECRET}"'],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.strip().split()[-1] == want


def test_a_right_proof_releases_and_spends_the_nonce() -> None:
    latch = EstopLatch(SECRET)
    assert latch.latch("ros2 /bumper_node", "bumper hit")
    assert not latch.latch("terminal")  # latched already: not a new latch
    nonce = latch.nonce
    proof = estop_proof(SECRET, nonce)
    result = latch.reset(nonce, proof, "alice", "web")
    assert result.released and not latch.latched
    assert result.nonce == latch.nonce != nonce  # a fresh nonce to prove against next time
    assert latch.last_reset is not None and latch.last_reset["by"] == "alice"
    # the same proof again (seen on the wire) never works: replayed
    latch.latch("terminal")
    again = latch.reset(nonce, proof, "mallory", "ros2")
    assert not again.released and again.reason == "replayed proof" and latch.latched
    assert latch.resets_refused == 1 and latch.last_reset_refused is not None
    assert latch.last_reset_refused["by"] == "mallory"


@pytest.mark.parametrize(
    ("nonce", "proof", "reason"),
    [
        (None, None, "no proof"),
        ("", "abc", "no proof"),
        ("0" * 32, "abc", "unknown nonce"),
        ("CURRENT", "0" * 64, "wrong proof"),
        ("CURRENT", estop_proof("not-the-secret-000000", "x"), "wrong proof"),
    ],
)
def test_a_wrong_proof_is_refused_and_counted(
    nonce: str | None, proof: str | None, reason: str
) -> None:
    latch = EstopLatch(SECRET)
    latch.latch("fleet")
    result = latch.reset(latch.nonce if nonce == "CURRENT" else nonce, proof, "x", "mqtt")
    assert (result.released, result.reason) == (False, reason)
    assert latch.latched and latch.resets_refused == 1


def test_without_a_secret_no_proof_releases() -> None:
    latch = EstopLatch(None)
    latch.latch("web")
    result = latch.reset(latch.nonce, estop_proof("anything-at-all-0000", latch.nonce), "a", "b")
    assert (result.released, result.reason) == (False, "no reset secret configured")
    assert latch.state()["reset_needs"] == "restart"


async def test_the_governor_tells_source_reset_and_refusal(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from tests.robot.rig import make_rig

    rig = await make_rig()
    gov = rig.governor
    gov.estop = EstopLatch(SECRET)
    said: list[dict[str, Any]] = []
    gov.on_decision = said.append
    try:
        await gov.emergency_stop("bumper hit", source="ros2 /bumper_node")
        with pytest.raises(EmergencyStopError):
            await gov.begin_motion("move_forward", 1.0)
        with caplog.at_level(logging.WARNING, logger="loopact.robot.governor"):
            refused = gov.reset_with_proof(gov.estop.nonce, "0" * 64, "mallory\nFAKE", "web")
        assert not refused.released and gov.emergency_stopped
        line = next(r.getMessage() for r in caplog.records if "refused" in r.getMessage())
        assert "wrong proof" in line and "'mallory\\nFAKE'" in line and "\n" not in line
        nonce = gov.estop.nonce
        assert gov.reset_with_proof(nonce, estop_proof(SECRET, nonce), "alice", "web").released
        lease = await gov.begin_motion("turn_left", 1.0)
        await gov.end_motion(lease)
    finally:
        await gov.close()
        await rig.robot.close()
    decisions = [(d["decision"], d.get("source"), d.get("by"), d.get("count")) for d in said]
    assert ("emergency_stop", "ros2 /bumper_node", None, None) in decisions
    assert ("estop_reset_refused", None, "mallory\nFAKE", 1) in decisions
    assert ("estop_reset", None, "alice", None) in decisions
    assert gov.status()["estop"]["resets_refused"] == 1
