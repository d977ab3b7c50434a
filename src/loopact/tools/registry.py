"""The tool registry: lookup, argument validation and guarded execution (SPEC A1, B7, C1, C2).

The registry holds the tools offered to the model, keyed by name. For each call it

1. finds the tool (an unknown name becomes an error that lists the available tools),
2. rejects arguments the stream parser could not repair (``ToolCall.error``, SPEC B7),
3. applies a small schema-driven normalisation (numeric strings for number fields, ``2.0`` for
   integer fields, ``"true"``/``"false"`` for boolean fields, JSON text for object and array
   fields: the values of calls written in markup are text, :mod:`loopact.llm.markup`) and
   validates against the tool's JSON Schema with a Draft 2020-12 validator
   compiled once per tool,
4. runs the tool under a timeout that cancels it, one call at a time unless the tool is
   re-entrant (SPEC C2),

Validation happens once per call: :meth:`ToolRegistry.check` returns a :class:`ValidCall`
(the call with its normalised arguments and its tool) that :meth:`ToolRegistry.run` executes
without checking again; :meth:`ToolRegistry.execute` is the two in one. (A function tool then
only converts the valid JSON into its Python types.) The registry always answers with a
:class:`ToolResult`: every ``tool_call_id`` gets exactly one result,
errors included (SPEC A1). Only :class:`asyncio.CancelledError` escapes :meth:`execute`, so that
cancelling the caller cancels the tool.

Failed results carry ``metadata["error_kind"]``, one of ``unknown_tool``, ``arguments``,
``tool_error``, ``timeout``, ``robot``, ``safety`` or ``exception`` (the loop's dispatcher
adds ``units`` and ``cancelled``), so the loop can count invalid rounds (SPEC A3) or react
to a safety stop without parsing text.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import math
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import jsonschema
import jsonschema.exceptions
import referencing.exceptions
from referencing import Registry
from referencing.jsonschema import DRAFT202012

from loopact._compat import wait_within
from loopact.errors import RobotError, SafetyError, ToolArgumentError, ToolError
from loopact.llm.arguments import MAX_ARGUMENT_DEPTH, nesting_depth
from loopact.llm.base import ToolSpec
from loopact.llm.messages import ToolCall
from loopact.tools.base import Tool, ToolContext, ToolResult, as_result
from loopact.tools.blocking import BlockingExecutor

log = logging.getLogger(__name__)

_NUMERIC_RE = re.compile(r"^\s*[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?\s*$")
_INT_RE = re.compile(r"^\s*[-+]?\d+\s*$")
_HEX_RE = re.compile(r"^\s*[-+]?0[xX][0-9a-fA-F]{1,16}\s*$")
"""A hexadecimal integer as models write I2C addresses and registers (``"0x50"``)."""
_MAX_REPORTED_ERRORS = 8
_MAX_NORMALISE_DEPTH = 8
# wait_for's timer may fire a hair before our own deadline; an exception this close to it is
# the timeout, anything earlier is a TimeoutError the tool raised itself.
_DEADLINE_SLACK_S = 0.005
_EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


@dataclass(frozen=True)
class ValidCall:
    """A tool call whose arguments passed its tool's schema; made by :meth:`ToolRegistry.check`.

    Attributes:
        call: The call, its ``arguments`` normalised (numeric strings made numbers).
        tool: The tool it calls.
    """

    call: ToolCall
    tool: Tool


class ToolRegistry:
    """The tools offered to the model, by unique name (SPEC A1, C1).

    Args:
        tools: Tools to add, in the order the model should see them.

    Raises:
        ValueError: Two tools share a name, or a tool's parameter schema is not valid JSON
            Schema.
    """

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        self._validators: dict[str, jsonschema.protocols.Validator] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self.blocking = BlockingExecutor()
        """Where the tools' blocking work runs (:class:`ToolContext.executor`, issue 22)."""
        for t in tools:
            self.add(t)

    # ------------------------------------------------------------------ collection
    def add(self, tool: Tool) -> None:
        """Add ``tool`` and compile its argument validator.

        Raises:
            ValueError: A tool with the same name is already registered (the message names
                both), or the tool's ``parameters`` is not a valid JSON Schema.
        """
        existing = self._tools.get(tool.name)
        if existing is not None:
            raise ValueError(
                f"duplicate tool name {tool.name!r}: {_describe(tool)} clashes with the "
                f"registered {_describe(existing)}"
            )
        schema = tool.parameters or _EMPTY_SCHEMA
        try:
            jsonschema.Draft202012Validator.check_schema(schema)
        except jsonschema.exceptions.SchemaError as exc:
            raise ValueError(
                f"tool {tool.name!r} has an invalid parameter schema: {exc.message}"
            ) from None
        dangling = unresolvable_ref(schema)
        if dangling is not None:
            raise ValueError(
                f"tool {tool.name!r} has an invalid parameter schema: its $ref {dangling!r} "
                "points outside the schema or to nothing in it (loopact fetches no schemas)"
            )
        self._validators[tool.name] = jsonschema.Draft202012Validator(schema)
        self._tools[tool.name] = tool

    def remove(self, name: str) -> None:
        """Remove the tool called ``name`` (SPEC C2: a node whose heartbeat stopped).

        Raises:
            KeyError: No tool has that name.
        """
        if name not in self._tools:
            raise KeyError(f"no tool named {name!r}")
        del self._tools[name]
        del self._validators[name]
        self._locks.pop(name, None)

    def get(self, name: str) -> Tool | None:
        """The tool called ``name``, or None."""
        return self._tools.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def __iter__(self) -> Iterator[Tool]:
        return iter(list(self._tools.values()))

    @property
    def names(self) -> list[str]:
        """The registered tool names, sorted."""
        return sorted(self._tools)

    def specs(self) -> tuple[ToolSpec, ...]:
        """The :class:`ToolSpec` of every tool, in insertion order (stable for prompt caching)."""
        return tuple(t.spec() for t in self._tools.values())

    # ------------------------------------------------------------------ validation
    def validate(self, call: ToolCall, *, strict: bool = False) -> dict[str, Any]:
        """The normalised, schema-valid arguments of ``call`` (see :meth:`check`).

        Raises:
            ToolError: The tool is unknown (the message lists the available tools).
            ToolArgumentError: The arguments could not be parsed or fail the tool's schema.
        """
        return self.check(call, strict=strict).call.arguments

    def check(self, call: ToolCall, *, strict: bool = False) -> ValidCall:
        """Check a call once: its tool exists and its arguments fit the schema (SPEC A1, B7).

        Numeric strings (``"1.5"``) given for ``number``/``integer`` fields become numbers,
        hexadecimal strings (``"0x50"``, as models write I2C addresses) given for ``integer``
        fields become ints, ``"true"``/``"false"`` given for ``boolean`` fields become
        booleans, JSON text given for ``object``/``array`` fields becomes that object or array
        (only for fields that do not also take a string), and integer-valued floats
        (``2.0``) given for ``integer`` fields become ints; nothing else is changed.
        ``call`` itself is never modified.

        Args:
            call: The model's tool call.
            strict: Validate the arguments exactly as sent, with no normalisation: for
                programs calling tools (the MCP server, SPEC C8), where ``"1"`` for a number
                is a mistake to report, not a model's habit to forgive.

        Returns:
            The call with the arguments to pass to :meth:`Tool.invoke`, and its tool.

        Raises:
            ToolError: The tool is unknown (the message lists the available tools).
            ToolArgumentError: The arguments could not be parsed (``call.error``) or fail the
                tool's schema (the message names every failing path).
        """
        tool = self._tools.get(call.name)
        if tool is None:
            available = ", ".join(self.names) or "(none)"
            if call.error and not call.name.strip():  # the call could not be read: say so
                raise ToolArgumentError(f"{call.error}. Available tools: {available}")
            raise ToolError(f"unknown tool {call.name!r}; available tools: {available}")
        if call.error:
            raise ToolArgumentError(
                f"{call.error.rstrip('. ')}. Call {call.name} again with its arguments as one "
                f"JSON object{_param_hint(tool)}"
            )
        arguments: Any = call.arguments
        if not isinstance(arguments, Mapping):
            raise ToolArgumentError(
                f"invalid arguments for {call.name}: expected a JSON object, got "
                f"{type(arguments).__name__}{_param_hint(tool)}"
            )
        schema = tool.parameters or _EMPTY_SCHEMA
        args = _normalise(dict(arguments), schema, schema, 0, strings=not strict)
        validator = self._validators[call.name]
        try:
            errors = list(validator.iter_errors(args))
        except referencing.exceptions.Unresolvable as exc:  # a $ref add() could not judge
            raise ToolError(
                f"tool {call.name!r} cannot be called: its parameter schema refers to "
                f"{exc.ref!r}, which is not part of it (loopact fetches no schemas)"
            ) from None
        if errors:
            raise ToolArgumentError(_format_errors(tool, errors))
        # Always the normalised copy: 2.0 == 2, but an integer field must get the int.
        return ValidCall(dataclasses.replace(call, arguments=args), tool)

    @staticmethod
    def refusal(exc: ToolError) -> ToolResult:
        """The failed result for a call :meth:`check` refused (``error_kind`` ``arguments``
        or ``unknown_tool``)."""
        kind = "arguments" if isinstance(exc, ToolArgumentError) else "unknown_tool"
        return ToolResult.failure(str(exc), error_kind=kind)

    # ------------------------------------------------------------------ execution
    async def execute(self, call: ToolCall, ctx: ToolContext, timeout_s: float) -> ToolResult:
        """Check and run one call: :meth:`check`, then :meth:`run` (SPEC A1, A2, C2).

        Returns:
            The tool's result, or a failed result (see :meth:`run` and :meth:`refusal`).

        Raises:
            asyncio.CancelledError: The caller was cancelled; the tool was cancelled too.
        """
        try:
            valid = self.check(call)
        except ToolError as exc:
            return self.refusal(exc)
        return await self.run(valid, ctx, timeout_s)

    async def run(self, valid: ValidCall, ctx: ToolContext, timeout_s: float) -> ToolResult:
        """Run a checked call; every failure becomes a failed result (SPEC A1, A2, C2).

        Calls to a non-reentrant tool run one at a time, in arrival order; time spent waiting
        for the previous call counts toward the timeout.

        Args:
            valid: The call as :meth:`check` returned it (its arguments are not checked again).
            ctx: The per-call context passed to the tool.
            timeout_s: Default timeout in seconds, used when the tool sets no ``timeout_s``.

        Returns:
            The tool's result, or a failed result whose ``error`` tells the model what went
            wrong (tool error, timeout, exception) and whose ``metadata["error_kind"]`` names
            the kind.

        Raises:
            asyncio.CancelledError: The caller was cancelled; the tool was cancelled too.
        """
        tool, args = valid.tool, valid.call.arguments
        timeout = tool.timeout_s if tool.timeout_s is not None else timeout_s
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        try:
            value = await wait_within(self._run(tool, args, ctx), timeout)
        except asyncio.CancelledError:
            raise
        except ToolError as exc:
            return ToolResult.failure(str(exc) or type(exc).__name__, error_kind="tool_error")
        except asyncio.TimeoutError as exc:
            if loop.time() >= deadline - _DEADLINE_SLACK_S:
                return ToolResult.failure(
                    f"tool {tool.name} timed out after {_fmt_s(timeout)} s and was cancelled",
                    error_kind="timeout",
                )
            return self._exception_result(tool, exc)
        except Exception as exc:
            return self._exception_result(tool, exc)
        return value

    async def _run(self, tool: Tool, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        if tool.reentrant:
            return as_result(await tool.invoke(args, ctx))
        lock = self._locks.get(tool.name)
        if lock is None:
            lock = self._locks[tool.name] = asyncio.Lock()
        async with lock:
            return as_result(await tool.invoke(args, ctx))

    def _exception_result(self, tool: Tool, exc: Exception) -> ToolResult:
        log.warning(
            "tool %s raised %s: %s",
            tool.name,
            type(exc).__name__,
            exc,
            exc_info=log.isEnabledFor(logging.DEBUG),
        )
        kind = "safety" if isinstance(exc, SafetyError) else "exception"
        if kind == "exception" and isinstance(exc, RobotError):
            kind = "robot"
        return ToolResult.failure(
            f"tool {tool.name} raised {type(exc).__name__}: {exc}", error_kind=kind
        )


# ---------------------------------------------------------------------- helpers
_NOT_SCHEMAS = frozenset({"enum", "const", "default", "examples"})


def unresolvable_ref(schema: Any) -> str | None:
    """The first ``$ref`` of ``schema`` that does not resolve within it, or None.

    Tool schemas come from other programs (ROS 2 and MQTT nodes, MCP servers, issue 18): a
    ``$ref`` to another document or to a part that does not exist would only fail when the
    model calls the tool, so it is found when the tool is added. Nothing is fetched. ``$id``
    changes the base of the refs below it, as in JSON Schema 2020-12.
    """
    if not isinstance(schema, dict):
        return None
    root = DRAFT202012.create_resource(schema)
    resolver = Registry().resolver_with_root(root)  # type: ignore[var-annotated]
    return _first_dangling(schema, resolver, top=True)


def _first_dangling(node: Any, resolver: Any, *, top: bool = False, depth: int = 0) -> str | None:
    if depth > 64:
        return None
    if isinstance(node, list):
        for item in node:
            found = _first_dangling(item, resolver, depth=depth + 1)
            if found is not None:
                return found
        return None
    if not isinstance(node, dict):
        return None
    if not top and isinstance(node.get("$id"), str):
        resolver = resolver.in_subresource(DRAFT202012.create_resource(node))
    ref = node.get("$ref")
    if isinstance(ref, str):
        try:
            resolver.lookup(ref)
        except referencing.exceptions.Unresolvable:
            return ref
    for key, value in node.items():
        if key in _NOT_SCHEMAS:
            continue
        found = _first_dangling(value, resolver, depth=depth + 1)
        if found is not None:
            return found
    return None


def _describe(tool: Tool) -> str:
    return f"{type(tool).__module__}.{type(tool).__qualname__}(name={tool.name!r})"


def _fmt_s(seconds: float) -> str:
    return f"{seconds:g}"


def _param_hint(tool: Tool) -> str:
    props = (tool.parameters or {}).get("properties") or {}
    if not isinstance(props, Mapping) or not props:
        return " (this tool takes no arguments: send {})"
    return " with keys: " + ", ".join(str(k) for k in props)


def _resolve(schema: Any, root: Mapping[str, Any]) -> Any:
    """Follow a local ``$ref`` (``#/$defs/X``) once; anything else is returned unchanged."""
    if isinstance(schema, Mapping):
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/"):
            target: Any = root
            for part in ref[2:].split("/"):
                if not isinstance(target, Mapping) or part not in target:
                    return schema
                target = target[part]
            return target
    return schema


def _from_text(value: str, types: set[str]) -> Any:
    """``value`` as the boolean, object or array a field of ``types`` (without ``string``)
    takes, when it is that written as text; else ``value`` itself."""
    text = value.strip()
    if "boolean" in types and text.lower() in ("true", "false"):
        return text.lower() == "true"
    if not types & {"object", "array"} or text[:1] not in ("{", "[") or len(text) > 1_000_000:
        return value
    if nesting_depth(text) > MAX_ARGUMENT_DEPTH:
        return value
    try:
        parsed = json.loads(text)
    except ValueError:
        return value
    kinds = tuple(kind for name, kind in (("object", dict), ("array", list)) if name in types)
    return parsed if isinstance(parsed, kinds) else value


def _branches(schema: Mapping[str, Any], root: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The schema itself plus its ``anyOf``/``oneOf`` alternatives, ``$ref``s followed."""
    out = [schema]
    for key in ("anyOf", "oneOf"):
        alts = schema.get(key)
        if isinstance(alts, list):
            for alt in alts:
                resolved = _resolve(alt, root)
                if isinstance(resolved, Mapping):
                    out.append(resolved)
    return out


def _types(branches: list[Mapping[str, Any]]) -> set[str]:
    types: set[str] = set()
    for b in branches:
        t = b.get("type")
        if isinstance(t, str):
            types.add(t)
        elif isinstance(t, list):
            types.update(x for x in t if isinstance(x, str))
    return types


def _normalise(
    value: Any, schema: Any, root: Mapping[str, Any], depth: int, strings: bool = True
) -> Any:
    """Schema-driven, conservative coercion for small models (see :meth:`ToolRegistry.check`).

    Returns ``value`` itself when nothing changes; containers are copied only when a member
    changes. Hexadecimal strings (``"0x50"``) become ints for integer fields. Without
    ``strings`` (strict), numeric strings stay strings (and then fail a
    number field); ``2.0`` still becomes ``2`` for an integer field, which JSON Schema
    counts as the same value.
    """
    schema = _resolve(schema, root)
    if not isinstance(schema, Mapping) or depth > _MAX_NORMALISE_DEPTH:
        return value
    branches = _branches(schema, root)
    types = _types(branches)
    if isinstance(value, str):
        if not strings or "string" in types:
            return value
        if not types & {"number", "integer"}:
            return _from_text(value, types)
        if "integer" in types and _HEX_RE.match(value):
            return int(value, 16)
        if not _NUMERIC_RE.match(value):
            return value
        if _INT_RE.match(value):
            return int(value)
        number = float(value)
        if not math.isfinite(number):
            return value
        if "integer" in types and "number" not in types and number.is_integer():
            return int(number)
        return number
    if isinstance(value, float):
        if "integer" in types and "number" not in types and value.is_integer():
            return int(value)
        return value
    if isinstance(value, dict):
        changed = False
        out = dict(value)
        for b in branches:
            props = b.get("properties")
            if not isinstance(props, Mapping):
                continue
            for key, sub in props.items():
                if key in out:
                    new = _normalise(out[key], sub, root, depth + 1, strings)
                    if new is not out[key]:
                        out[key] = new
                        changed = True
        return out if changed else value
    if isinstance(value, list):
        item_schemas = [b.get("items") for b in branches if isinstance(b.get("items"), Mapping)]
        if not item_schemas:
            return value
        new_items = [_normalise(v, item_schemas[0], root, depth + 1, strings) for v in value]
        if any(n is not o for n, o in zip(new_items, value, strict=True)):
            return new_items
        return value
    return value


def _leaves(
    err: jsonschema.exceptions.ValidationError,
) -> Iterator[jsonschema.exceptions.ValidationError]:
    """Look inside ``anyOf``/``oneOf`` when only one non-null alternative failed.

    pydantic writes ``Optional[X]`` as ``anyOf: [X, {type: null}]``; for a non-null value the
    useful errors are X's, at their own paths (``waypoints.1: 'y_m' is a required property``),
    not "is not valid under any of the given schemas".
    """
    if err.validator in ("anyOf", "oneOf") and err.context and not _only_type_errors(err):
        non_null = [
            c
            for c in err.context
            if not (c.validator == "type" and c.validator_value == "null" and not c.relative_path)
        ]
        branches = {c.relative_schema_path[0] for c in non_null if c.relative_schema_path}
        if non_null and len(branches) == 1:
            for c in non_null:
                yield from _leaves(c)
            return
    yield err


def _only_type_errors(err: jsonschema.exceptions.ValidationError) -> bool:
    return all(c.validator == "type" and not c.relative_path for c in err.context)


def _format_errors(tool: Tool, raw: list[jsonschema.exceptions.ValidationError]) -> str:
    errors = [leaf for err in raw for leaf in _leaves(err)]
    errors.sort(key=lambda e: (list(map(str, e.absolute_path)), e.message))
    parts: list[str] = []
    for err in errors[:_MAX_REPORTED_ERRORS]:
        path = ".".join(str(p) for p in err.absolute_path)
        message = _error_message(err)
        if err.validator == "additionalProperties":
            message += _param_hint(tool).replace(" with keys:", "; allowed keys:")
        parts.append(f"{path}: {message}" if path else message)
    if len(errors) > _MAX_REPORTED_ERRORS:
        parts.append(f"and {len(errors) - _MAX_REPORTED_ERRORS} more")
    return f"invalid arguments for {tool.name}: " + "; ".join(parts)


def _error_message(err: jsonschema.exceptions.ValidationError) -> str:
    """jsonschema's message, made concrete for ``anyOf`` made only of type alternatives."""
    if err.validator in ("anyOf", "oneOf") and err.context and _only_type_errors(err):
        wanted: list[str] = []
        for c in err.context:
            v = c.validator_value
            for t in v if isinstance(v, list) else [v]:
                if str(t) not in wanted:
                    wanted.append(str(t))
        return f"{err.instance!r} is not of type " + " or ".join(repr(t) for t in wanted)
    return err.message
