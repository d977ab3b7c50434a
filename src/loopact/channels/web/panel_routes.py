"""The web console's emergency stop and drive pad (issue 41; SPEC X3, F2).

The console issue draws the latched E-stop button (distinct from Stop) and the drive pad on
these endpoints; they answer whether or not the page exists::

    GET  /api/estop          the latch: {latched, reason, source, since, nonce, reset_needs,
                             resets_refused, last_reset, last_reset_refused, operator}
    POST /api/estop          {"reason"?} -> latch it (source "web"); the state
    POST /api/estop/reset    {"nonce", "proof", "by"?} -> 200 {released: true, state} when the
                             proof (HMAC-SHA256 of the nonce, keyed with the operator's
                             secret; docs/security.md) is right, else 403 {released: false,
                             reason, nonce}: wrong, replayed, for an old nonce, or a secret
                             sent in clear ({"token": ...}) — every refusal counted and logged
    POST /api/teleop         {"linear_mps", "angular_dps", "by"?} -> the operator drives: the
                             first command takes the base over from the agent, each one holds
                             it for 0.5 s (the deadman: send at least every 0.25 s while the
                             pad is held); clamped and obstacle-limited; 409 while the e-stop
                             is latched; {sent: {linear_mps, angular_dps}, operator}
    POST /api/teleop/release hand the base back now (else the deadman does it)

Without a robot every one of them is ``404``. The token and origin rules of every other
endpoint apply (:mod:`loopact.channels.web.auth`).
"""

from __future__ import annotations

import math
from typing import Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import JSONResponse

from loopact.errors import EmergencyStopError, SafetyError
from loopact.robot.interface import Twist
from loopact.robot.panel import LocalPanel, OperatorPanel

MAX_BY_CHARS = 64


def panel_routes(state: Any, json_body: Any) -> APIRouter:
    """The routes above for the console ``state`` (its ``robot_session``); ``json_body`` reads
    a request's JSON object with the console's limits."""
    router = APIRouter()

    def panel() -> OperatorPanel:
        session = state.robot_session
        found = getattr(session, "panel", None)
        if found is None:
            raise HTTPException(404, "no robot: there is no emergency stop or drive pad")
        return found  # type: ignore[no-any-return]

    def who(body: dict[str, Any]) -> str:
        by = body.get("by")
        return f"web ({str(by)[:MAX_BY_CHARS]})" if isinstance(by, str) and by else "web"

    @router.get("/api/estop")
    async def estop_state() -> dict[str, Any]:
        return panel().state()

    @router.post("/api/estop")
    async def estop_latch(request: Request) -> dict[str, Any]:
        body = await json_body(request) if await request.body() else {}
        reason = body.get("reason")
        said = str(reason)[:200] if isinstance(reason, str) else ""
        return await panel().latch(who(body), said)

    @router.post("/api/estop/reset")
    async def estop_reset(request: Request) -> JSONResponse:
        body = await json_body(request)
        nonce, proof, token = body.get("nonce"), body.get("proof"), body.get("token")
        for name, value in (("nonce", nonce), ("proof", proof), ("token", token)):
            if value is not None and not isinstance(value, str):
                raise HTTPException(400, f"{name}: expected a string")
        result = await panel().reset(nonce, proof, who(body), "web", token)
        if result.released:
            return JSONResponse({"released": True, "state": panel().state()})
        refused = {"released": False, "reason": result.reason, "nonce": result.nonce}
        return JSONResponse(refused, status_code=403)

    @router.post("/api/teleop")
    async def teleop(request: Request) -> dict[str, Any]:
        body = await json_body(request)
        try:
            lin = float(body.get("linear_mps", 0.0))
            ang = float(body.get("angular_dps", 0.0))
        except (TypeError, ValueError) as exc:
            raise HTTPException(400, "linear_mps, angular_dps: expected numbers") from exc
        if not (math.isfinite(lin) and math.isfinite(ang)):
            raise HTTPException(400, "linear_mps, angular_dps: must be finite numbers")
        try:
            sent = await panel().teleop(Twist(lin, math.radians(ang)), who(body), "web")
        except EmergencyStopError as exc:
            raise HTTPException(409, str(exc)) from exc
        except SafetyError as exc:
            raise HTTPException(400, str(exc)) from exc
        return {
            "sent": {
                "linear_mps": sent.linear_mps,
                "angular_dps": math.degrees(sent.angular_radps),
            },
            "operator": panel().state().get("operator", {}),
        }

    @router.post("/api/teleop/release")
    async def teleop_release() -> dict[str, Any]:
        found = panel()
        released = False
        if isinstance(found, LocalPanel):
            released = await found.governor.hand_back("base", "released")
        return {"released": released, "operator": found.state().get("operator", {})}

    return router
