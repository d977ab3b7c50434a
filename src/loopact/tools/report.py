"""How a tool result is reported: one builder per form (SPEC C1, A8; issue 38 item 4).

A finished call is told twice, and each form is built here only:

- :func:`result_json`: the result as the model reads it in its tool message
  (:func:`loopact.agent.stream.result_text`) and as an MCP client reads it from ``loopact mcp``
  (:func:`loopact.mcp.convert.to_call_result`): ``{ok, data, error, metadata, images}`` with
  what is empty left out (``images`` is how many were attached; they travel as images).
- :func:`tool_result_event`: the fields of the ``tool_result`` event (``docs/trace.md``), as the
  agent's dispatcher and ``loopact mcp`` emit it: every field always present, images as their
  hash and size, a robot tool's typed outcome as its phrase and as text in the reader's language.
"""

from __future__ import annotations

from typing import Any

from loopact.events.payloads import ToolResultPayload
from loopact.tools.base import ToolResult, outcome_fields


def result_json(result: ToolResult) -> dict[str, Any]:
    """The JSON object of ``result`` for the model and MCP clients.

    Args:
        result: A finished call's result.

    Returns:
        ``{"ok": bool}`` plus ``data`` when not None, ``error`` and ``metadata`` when not
        empty, and ``images`` (a count) when there are any. Values are as the tool gave them;
        the caller serialises (``default=str`` for what JSON lacks).
    """
    body: dict[str, Any] = {"ok": result.ok}
    if result.data is not None:
        body["data"] = result.data
    if result.error:
        body["error"] = result.error
    if result.metadata:
        body["metadata"] = result.metadata
    if result.images:
        body["images"] = len(result.images)
    return body


def tool_result_event(call_id: str, name: str, result: ToolResult, lang: str) -> ToolResultPayload:
    """The ``tool_result`` event's fields for the call ``call_id`` of tool ``name``.

    Args:
        call_id: The call's id (the ``tool_call`` event's ``id``).
        name: The tool's name as it ran.
        result: What the call returned.
        lang: The language of the people reading it (``agent.lang``): a robot tool's typed
            outcome is also given as text in it (:func:`~loopact.tools.base.outcome_fields`).
    """
    said = outcome_fields(result, lang)
    return {
        "id": call_id,
        "name": name,
        "ok": result.ok,
        "data": result.data,
        "metadata": result.metadata,
        "error": result.error,
        "n_images": len(result.images),
        "images": [image.summary() for image in result.images],
        "outcome": said["outcome"],
        "outcome_text": said["outcome_text"],
    }
