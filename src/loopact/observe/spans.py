"""OpenTelemetry spans built from the agent's events (SPEC A8, H3; issue 44).

The loop is not instrumented twice: a :class:`SpanBuilder` subscribes to the event bus and
turns each event the mapping of :mod:`loopact.observe.topics` names into a span boundary, with
the event's own time. One trace per task:

- ``invoke_agent <agent>``: the task (``task_start`` .. ``task_end``), the root;
- ``chat <model>``: each model request (``model_request`` .. ``model_response``), kind
  CLIENT, with the OpenTelemetry GenAI semantic conventions: ``gen_ai.operation.name``
  (``chat``), ``gen_ai.provider.name``, ``gen_ai.request.model``,
  ``gen_ai.usage.input_tokens``, ``gen_ai.usage.output_tokens``,
  ``gen_ai.response.finish_reasons``, ``server.address`` / ``server.port``; retries are span
  events;
- ``execute_tool <name>``: each tool call (``tool_call`` .. ``tool_result``) with
  ``gen_ai.tool.name``, ``gen_ai.tool.call.id``, ``gen_ai.tool.type``; a failed call has
  status ERROR and ``error.type``;
- ``governor <decision>``: each decision of the safety governor, a child of the motion's tool
  span (``loopact.governor.*``).

Attributes never hold message text, tool arguments or results (the conventions make those
opt-in, and they may be private), and events reach the builder already masked by the bus
(:class:`~loopact.redact.Redactor`): no secret can reach an attribute.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer

from loopact.events import Event, EventType
from loopact.observe.topics import SPAN_ROLES

log = logging.getLogger(__name__)


@dataclass
class _Task:
    span: Span
    context: Any
    model: Span | None = None
    tools: dict[str, tuple[str, Span]] = field(default_factory=dict)  # call id -> (name, span)


def _ns(ts: Any) -> int | None:
    return int(float(ts) * 1e9) if isinstance(ts, (int, float)) else None


class SpanBuilder:
    """Turns events into spans (see the module docstring); an event bus subscriber.

    Args:
        tracer: Where the spans go.
        provider: ``gen_ai.provider.name`` (``openai``, ``anthropic``, ``dify``, ...).
        model: ``gen_ai.request.model``.
        agent_name: ``gen_ai.agent.name``.
        server: ``(host, port)`` of the model endpoint for ``server.address`` /
            ``server.port``, or None.
    """

    def __init__(
        self,
        tracer: Tracer,
        provider: str,
        model: str,
        agent_name: str = "loopact",
        server: tuple[str, int | None] | None = None,
    ) -> None:
        self.tracer = tracer
        self.provider = provider
        self.model = model
        self.agent_name = agent_name
        self.server = server
        self._tasks: dict[str, _Task] = {}
        self._last_task: str | None = None

    def __call__(self, event: Event) -> None:
        """Handle one event (unknown types do nothing)."""
        role = SPAN_ROLES.get(str(event.type))
        if role is None:
            return
        ev = event.to_json()
        handler = getattr(self, f"_{role}")
        handler(ev, event.task_id)

    # ---- the task --------------------------------------------------------------------------

    def _task_begin(self, ev: dict[str, Any], task_id: str | None) -> None:
        if task_id is None:
            return
        span = self.tracer.start_span(
            f"invoke_agent {self.agent_name}",
            kind=SpanKind.INTERNAL,
            start_time=_ns(ev.get("ts")),
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": self.agent_name,
                "gen_ai.provider.name": self.provider,
                "gen_ai.request.model": self.model,
                "loopact.task.id": task_id,
                "loopact.task.source": str(ev.get("source") or ""),
            },
        )
        self._tasks[task_id] = _Task(span, trace.set_span_in_context(span))
        self._last_task = task_id

    def _task_end(self, ev: dict[str, Any], task_id: str | None) -> None:
        task = self._tasks.pop(task_id or "", None)
        if task is None:
            return
        end = _ns(ev.get("ts"))
        if task.model is not None:
            task.model.set_status(Status(StatusCode.ERROR, "the task ended during the request"))
            task.model.end(end_time=end)
        for _name, span in task.tools.values():
            span.set_status(Status(StatusCode.ERROR, "the task ended during the call"))
            span.set_attribute("error.type", "cancelled")
            span.end(end_time=end)
        status = str(ev.get("status") or "")
        task.span.set_attribute("loopact.task.status", status)
        if isinstance(ev.get("rounds"), int):
            task.span.set_attribute("loopact.task.rounds", ev["rounds"])
        if status == "failed":
            task.span.set_status(Status(StatusCode.ERROR, "the task failed"))
            task.span.set_attribute("error.type", "task_failed")
        task.span.end(end_time=end)

    def _failure(self, ev: dict[str, Any], task_id: str | None) -> None:
        task = self._tasks.get(task_id or "")
        if task is None:
            return
        if ev.get("type") == EventType.BOUND:
            task.span.add_event(
                "loopact.bound",
                {
                    "loopact.bound.name": str(ev.get("name")),
                    "loopact.bound.limit": str(ev.get("limit")),
                },
                timestamp=_ns(ev.get("ts")),
            )
        else:
            task.span.add_event(
                "exception",
                {"exception.message": str(ev.get("message", ""))[:500]},
                timestamp=_ns(ev.get("ts")),
            )

    def _provider(self, ev: dict[str, Any], task_id: str | None) -> None:
        del task_id
        self.provider = str(ev.get("provider") or self.provider)
        self.model = str(ev.get("model") or self.model)

    # ---- model requests --------------------------------------------------------------------

    def _model_begin(self, ev: dict[str, Any], task_id: str | None) -> None:
        task = self._tasks.get(task_id or "")
        if task is None:
            return
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": self.provider,
            "gen_ai.request.model": self.model,
        }
        if isinstance(ev.get("round"), int):
            attributes["loopact.round"] = ev["round"]
        if self.server is not None:
            attributes["server.address"] = self.server[0]
            if self.server[1] is not None:
                attributes["server.port"] = self.server[1]
        task.model = self.tracer.start_span(
            f"chat {self.model}",
            context=task.context,
            kind=SpanKind.CLIENT,
            start_time=_ns(ev.get("ts")),
            attributes=attributes,
        )

    def _model_end(self, ev: dict[str, Any], task_id: str | None) -> None:
        task = self._tasks.get(task_id or "")
        if task is None or task.model is None:
            return
        span, task.model = task.model, None
        usage = ev.get("usage") or {}
        for key, name in (
            ("input_tokens", "gen_ai.usage.input_tokens"),
            ("output_tokens", "gen_ai.usage.output_tokens"),
        ):
            if isinstance(usage.get(key), int):
                span.set_attribute(name, usage[key])
        if isinstance(ev.get("finish_reason"), str):
            span.set_attribute("gen_ai.response.finish_reasons", [ev["finish_reason"]])
        span.end(end_time=_ns(ev.get("ts")))

    def _model_retry(self, ev: dict[str, Any], task_id: str | None) -> None:
        task = self._tasks.get(task_id or "")
        if task is None or task.model is None:
            return
        task.model.add_event(
            "loopact.retry",
            {
                "loopact.retry.attempt": int(ev.get("attempt") or 0),
                "loopact.retry.delay_s": float(ev.get("delay_s") or 0.0),
                "loopact.retry.error": str(ev.get("error", ""))[:300],
            },
            timestamp=_ns(ev.get("ts")),
        )

    # ---- tools and the governor ------------------------------------------------------------

    def _tool_begin(self, ev: dict[str, Any], task_id: str | None) -> None:
        task = self._tasks.get(task_id or "")
        call_id, name = ev.get("id"), str(ev.get("name") or "?")
        if task is None or not isinstance(call_id, str):
            return
        span = self.tracer.start_span(
            f"execute_tool {name}",
            context=task.context,
            kind=SpanKind.INTERNAL,
            start_time=_ns(ev.get("ts")),
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": name,
                "gen_ai.tool.call.id": call_id,
                "gen_ai.tool.type": "function",
            },
        )
        task.tools[call_id] = (name, span)

    def _tool_end(self, ev: dict[str, Any], task_id: str | None) -> None:
        task = self._tasks.get(task_id or "")
        if task is None or not isinstance(ev.get("id"), str):
            return
        found = task.tools.pop(ev["id"], None)
        if found is None:
            return
        span = found[1]
        achieved = (ev.get("metadata") or {}).get("achieved") or {}
        if isinstance(achieved, dict) and isinstance(achieved.get("stopped_by"), str):
            span.set_attribute("loopact.tool.stopped_by", achieved["stopped_by"])
        if not ev.get("ok", True):
            span.set_status(Status(StatusCode.ERROR, "the tool call failed"))
            span.set_attribute("error.type", "tool_error")
        span.end(end_time=_ns(ev.get("ts")))

    def _governor(self, ev: dict[str, Any], task_id: str | None) -> None:
        task = self._tasks.get(task_id or self._last_task or "")
        decision = str(ev.get("decision") or "?")
        context = None
        if task is not None:
            motion = ev.get("motion")
            spans = [span for name, span in task.tools.values() if name == motion]
            context = trace.set_span_in_context(spans[-1]) if spans else task.context
        ts = _ns(ev.get("ts"))
        span = self.tracer.start_span(
            f"governor {decision}",
            context=context,
            kind=SpanKind.INTERNAL,
            start_time=ts,
            attributes={
                "loopact.governor.decision": decision,
                "loopact.governor.reason": str(ev.get("reason") or ""),
                "loopact.governor.motion": str(ev.get("motion") or ""),
                "loopact.governor.detail": str(ev.get("detail") or "")[:300],
            },
        )
        span.end(end_time=ts)

    def close(self, ts: float | None = None) -> None:
        """End every span still open (the run stops mid-task)."""
        for task_id in list(self._tasks):
            self._task_end({"ts": ts, "status": "stopped"}, task_id)
