"""The operator's panel in words, for the channels that speak or print (issue 41; SPEC F5).

- :func:`panel_line`: a line for the governor decisions people must see on every channel (the
  emergency stop latched and by whom, released, a reset refused, an operator's takeover and
  hand-back) and for a confirmation answer that did not count, or None;
- :func:`estop_command`: the terminal's ``/estop`` (latch), ``/estop status`` (the state and
  the nonce to prove against) and ``/estop reset PROOF`` (release with the operator's proof).
"""

from __future__ import annotations

from typing import Any

from loopact.events import Event, EventType
from loopact.i18n import t
from loopact.robot.panel import OperatorPanel


def panel_line(ev: Event, lang: str) -> str | None:
    """What a ``governor`` or ``confirm_refused`` event says to people, or None."""
    d = ev.data
    if ev.type == EventType.CONFIRM_REFUSED:
        why = str(d.get("reason"))
        if why == "answered":
            said = t("confirm.refused_answered", lang, by=str(d.get("answered_by")))
        else:
            said = t(f"confirm.refused_{why if why == 'channel' else 'unknown'}", lang)
        return t("confirm.refused", lang, id=str(d.get("id")), why=said)
    if ev.type != EventType.GOVERNOR:
        return None
    decision = d.get("decision")
    if decision == "emergency_stop":
        return t("estop.latched", lang, source=str(d.get("source") or "?"))
    if decision == "estop_reset":
        return t("estop.released", lang, by=str(d.get("by") or "?"))
    if decision == "estop_reset_refused":
        return t("estop.refused", lang, reason=str(d.get("reason")))
    if decision == "takeover":
        return t("operator.taken_over", lang, who=str(d.get("who") or "?"))
    if decision == "handback":
        return t("stop.operator_released", lang, why=str(d.get("reason")))
    return None


async def estop_command(panel: OperatorPanel | None, args: list[str], who: str, lang: str) -> str:
    """``/estop`` (latch), ``/estop status``, ``/estop reset PROOF``: what to print.

    Args:
        panel: The robot's panel, or None without a robot.
        args: The words after ``/estop``.
        who: Who typed it (the terminal's user), for the record.
        lang: The language of the answer.
    """
    if panel is None:
        return t("estop.none", lang)
    if args[:1] == ["reset"] and len(args) == 2:
        nonce = str(panel.state().get("nonce") or "")
        result = await panel.reset(nonce, args[1], who, "terminal")
        if result.released:
            return t("estop.released", lang, by=who)
        return t("estop.refused", lang, reason=result.reason)
    if args and args[0] != "status":
        return "/estop | /estop status | /estop reset PROOF"
    state: dict[str, Any] = panel.state() if args else await panel.latch("terminal", "")
    shown = t("estop.word_latched" if state.get("latched") else "estop.word_released", lang)
    if state.get("latched") and state.get("source"):
        shown += f" ({state['source']})"
    return t("estop.state", lang, state=shown, nonce=str(state.get("nonce")))
