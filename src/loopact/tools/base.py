"""Tool definition (SPEC C1): name, description and JSON Schema from a typed Python callable.

A tool is built from a function with type hints and a Google-style docstring::

    @tool(safety="motion", timeout_s=60)
    async def move_forward(distance_m: float, speed_mps: float = 0.2) -> ToolResult:
        '''Drive straight ahead.

        Args:
            distance_m: How far to drive, in metres (> 0).
            speed_mps: Speed in metres per second.
        '''

The first line and body of the docstring become the description; each ``Args:`` entry becomes
the description of its parameter in the schema. A parameter annotated :class:`ToolContext` is
not part of the schema: the loop passes the per-call context there.

A tool returns a :class:`ToolResult` or any JSON-able value (wrapped as ``ok=True, data=value``).
Raising :class:`~loopact.errors.ToolError` (or any exception) produces a failed result that goes
back to the model as an observation (SPEC A1); the loop never crashes because a tool did.
"""

from __future__ import annotations

import enum
import inspect
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, TypeVar, get_type_hints, overload

import docstring_parser
import pydantic

from loopact.errors import ToolArgumentError
from loopact.i18n import Phrase
from loopact.llm.base import ToolSpec
from loopact.llm.messages import Image
from loopact.tools.blocking import BlockingExecutor
from loopact.tools.directions import check_directions

_NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")

MODEL_LANG = "en"
"""The language of the result texts the model reads (``data.result``, ``error``): English,
as the system prompt and the tool descriptions are, whatever ``agent.lang`` says; people read
an outcome in their own language (:attr:`ToolResult.outcome`)."""


class SafetyClass(str, enum.Enum):
    """How a tool may affect the world (SPEC C5).

    ``read_only`` tools only observe; ``idempotent`` ones change state but repeating them is
    harmless; ``write`` tools need the user's confirmation; ``motion`` tools move the robot
    and go through the safety governor (X3).
    """

    READ_ONLY = "read_only"
    IDEMPOTENT = "idempotent"
    WRITE = "write"
    MOTION = "motion"

    @property
    def changes_state(self) -> bool:
        """True for ``write`` and ``motion``: these break the repeat guard's chain (SPEC A3)."""
        return self in (SafetyClass.WRITE, SafetyClass.MOTION)


@dataclass(frozen=True)
class ToolResult:
    """The result of one tool call (the seeds' ToolOutput, SPEC C1).

    Attributes:
        ok: True when the tool did what was asked.
        data: The main output (JSON-able), passed to later plan steps as ``outputs.data``.
        metadata: Extra JSON-able facts (``achieved``, ``clamped``, file paths, ...).
        error: What went wrong, for the model, when ``ok`` is False.
        images: Images for the model (already through the image gate, SPEC G1).
        outcome: What happened as a typed phrase (issue 38; robot tools): rendered in each
            reader's language where a result is shown, kept in traces as its id and
            parameters. When set, the model reads this phrase in :data:`MODEL_LANG`: as
            ``error`` of a failed result, and as ``data["result"]`` when the data has that
            key (replaced where it stands) or a successful result has no data; other data
            (a box, a list) stays as it is, and the outcome is for people and traces. A
            :class:`Phrase` given as ``data["result"]`` is the outcome.
    """

    ok: bool = True
    data: Any = None
    metadata: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    images: tuple[Image, ...] = ()
    outcome: Phrase | None = None

    def __post_init__(self) -> None:
        data, outcome = self.data, self.outcome
        if isinstance(data, dict) and isinstance(data.get("result"), Phrase):
            outcome = outcome or data["result"]
            object.__setattr__(self, "outcome", outcome)
        if outcome is None:
            return
        text = outcome.text(MODEL_LANG)
        if isinstance(data, dict) and "result" in data:
            object.__setattr__(self, "data", {**data, "result": text})
        elif data is None and self.ok:
            object.__setattr__(self, "data", {"result": text})
        if not self.ok:
            object.__setattr__(self, "error", text)

    @classmethod
    def success(
        cls, data: Any = None, images: tuple[Image, ...] | list[Image] = (), **metadata: Any
    ) -> ToolResult:
        """A successful result with ``data`` and ``metadata`` keywords.

        Raises:
            TypeError: A phrase given as ``outcome=`` (that is :meth:`said`).
        """
        if isinstance(metadata.get("outcome"), Phrase):
            raise TypeError("a typed outcome goes to ToolResult.said(), not into metadata")
        return cls(ok=True, data=data, metadata=metadata, images=tuple(images))

    @classmethod
    def said(
        cls,
        outcome: Phrase,
        data: dict[str, Any] | None = None,
        images: tuple[Image, ...] | list[Image] = (),
        **metadata: Any,
    ) -> ToolResult:
        """A successful result that says what happened as a typed ``outcome`` (its English
        text becomes ``data["result"]``, added last; see :attr:`outcome`)."""
        said = {**(data or {}), "result": outcome}
        return cls(ok=True, data=said, metadata=metadata, images=tuple(images), outcome=outcome)

    @classmethod
    def failure(cls, error: str | Phrase, data: Any = None, **metadata: Any) -> ToolResult:
        """A failed result that tells the model ``error`` (a phrase: the :attr:`outcome`)."""
        if isinstance(error, Phrase):
            return cls(ok=False, data=data, metadata=metadata, outcome=error)
        return cls(ok=False, data=data, metadata=metadata, error=error)

    def to_dict(self, with_images: bool = False) -> dict[str, Any]:
        """JSON-able form ``{ok, data, metadata, error}`` (+ ``n_images`` or image summaries)."""
        d: dict[str, Any] = {
            "ok": self.ok,
            "data": self.data,
            "metadata": self.metadata,
            "error": self.error,
        }
        if with_images:
            d["images"] = [i.summary() for i in self.images]
        else:
            d["n_images"] = len(self.images)
        return d


@dataclass
class ToolContext:
    """Per-call context handed to a tool that declares a ``ToolContext`` parameter.

    Attributes:
        task_id: The command id of the task making the call (= the trace's ``task_id``).
        call_id: The ``tool_call_id``.
        workspace: The folder file tools are confined to.
        progress: Report progress (``tool_progress`` event); cheap, call freely.
        show_image: Show people an image the tool used, e.g. a camera frame with the
            detected box drawn (``tool_image`` event: trace and web console, SPEC F6); it is
            not sent to the model. Arguments: the gated image and a one-line caption.
        executor: Where blocking work runs (a sync tool's function, file-system calls): on
            daemon threads that a timeout abandons without leaking a pool thread or blocking
            exit (:class:`~loopact.tools.blocking.BlockingExecutor`, issue 22). The
            registry's, shared by all calls of an agent.
    """

    task_id: str
    call_id: str
    workspace: Path
    progress: Callable[[str], None] = lambda _text: None
    show_image: Callable[[Image, str], None] = lambda _image, _caption: None
    executor: BlockingExecutor = field(default_factory=BlockingExecutor)


@dataclass(frozen=True)
class UntrustedSource:
    """Why a remote tool needs a person's yes: its source is not trusted (issue 21).

    A tool of an MCP server or of a ROS 2 / MQTT node is a ``write`` tool unless the operator
    trusts its source or grants it a class; a refusal says so and names the setting,
    instead of saying the tool changes files.

    Attributes:
        kind: ``"mcp"`` (an MCP server's tool) or ``"node"`` (a remote node's).
        source: The MCP server's name, or the node's (tool) name.
        remote_name: The tool's name at its source: the key of the server's ``safety``
            mapping, or of ``nodes.safety``.
    """

    kind: Literal["mcp", "node"]
    source: str
    remote_name: str


class Tool:
    """A tool the model can call.

    Subclasses implement :meth:`invoke`. Most tools are built with :func:`tool` instead.

    Attributes:
        name: Unique name the model calls.
        description: What it does, for the model.
        parameters: JSON Schema of the arguments (``type: object``).
        safety: Safety class (SPEC C5).
        reentrant: True if calls may overlap; otherwise a tool's calls queue (SPEC C2, X1).
        timeout_s: Per-call timeout in seconds, None for the loop's default (SPEC A2).
        examples: ``(instruction, arguments)`` pairs for models that write calls as text
            (:attr:`loopact.llm.base.ToolSpec.examples`).
        directions: Sign conventions of signed arguments, argument name -> (direction of
            positive values, of negative values), e.g. ``{"pan_deg": ("left", "right")}``;
            the loop flips a sign that contradicts the user's one direction word
            (:mod:`loopact.tools.directions`). Not shown to the model.
        names: The names string arguments take, argument -> {a word people use -> the
            value}, e.g. ``{"waypoint": {"卫生间": "bathroom"}}``; the loop replaces a value
            that is none of them by the one the instruction names (:mod:`loopact.tools.names`).
            Not shown to the model.
        untrusted_source: Set when the tool is ``write`` only because the operator does
            not trust where it comes from (:class:`UntrustedSource`); None for others.
        allow_entry: The ``confirm.allow`` entry that allows it without asking when its
            name does not: ``mcp:SERVER/TOOL`` for an MCP server's tool, whose offered name
            another server may have taken first (issue 39 item 13); None: its name.
        constant: True when a read-only tool's answer depends only on its arguments and on
            what this agent's own state-changing calls change (a skill's text): an identical
            repeat is then answered from the earlier result (SPEC A3). False (the default)
            for anything that reads the world — a clock, a sensor, a camera, a file, any
            remote tool — which always runs again.
    """

    name: str
    description: str
    parameters: dict[str, Any]
    safety: SafetyClass = SafetyClass.READ_ONLY
    reentrant: bool = False
    timeout_s: float | None = None
    examples: tuple[tuple[str, dict[str, Any]], ...] = ()
    directions: Mapping[str, tuple[str, str]] = MappingProxyType({})
    names: Mapping[str, Mapping[str, str]] = MappingProxyType({})
    untrusted_source: UntrustedSource | None = None
    allow_entry: str | None = None
    constant: bool = False

    def needs_confirmation(self, arguments: Mapping[str, Any], said: str) -> bool:
        """Whether this call waits for a person's yes before it runs (SPEC C5).

        Args:
            arguments: The call's validated arguments.
            said: What the user wrote in their own message for this task (the instruction
                typed into a channel; never tool results or files), "" when unknown.

        Returns:
            True for ``write`` tools. A tool may decide by its arguments: ``remember``
            asks for a preference the user did not say themselves (issue 21).
        """
        return self.safety is SafetyClass.WRITE

    def spec(self) -> ToolSpec:
        """The :class:`ToolSpec` offered to the model."""
        return ToolSpec(self.name, self.description, self.parameters, self.examples)

    async def invoke(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Run the tool with schema-valid ``arguments``.

        Raises:
            ToolError: The tool failed (the caller turns it into a failed result).
        """
        raise NotImplementedError


def _strip_titles(schema: Any) -> Any:
    """Remove pydantic's ``title`` keys: they cost tokens and tell the model nothing."""
    if isinstance(schema, dict):
        return {
            k: _strip_titles(v)
            for k, v in schema.items()
            if not (k == "title" and isinstance(v, str))
        }
    if isinstance(schema, list):
        return [_strip_titles(v) for v in schema]
    return schema


class FunctionTool(Tool):
    """A tool built from a typed function (sync or async) by :func:`tool`.

    Args:
        fn: The function. Sync functions run on a daemon thread of the context's
            :class:`~loopact.tools.blocking.BlockingExecutor`: they cannot be interrupted
            there, but a timeout abandons them without blocking other tools or exit (prefer
            ``async def`` for anything that must stop on cancel).
        name: Tool name, default ``fn.__name__``.
        description: Default: the docstring's description.
        safety: Safety class, a :class:`SafetyClass` or its value.
        reentrant: Whether calls may overlap.
        timeout_s: Per-call timeout in seconds.
        examples: ``(instruction, arguments)`` pairs, e.g.
            ``[("what is in front of you?", {})]``; shown to models that write calls as text.
        directions: Sign conventions, e.g. ``{"pan_deg": ("left", "right")}`` (see
            :attr:`Tool.directions`).
        constant: The answer depends only on the arguments (see :attr:`Tool.constant`).

    Raises:
        ValueError: Bad name, missing type hint, a parameter type pydantic cannot describe,
            or ``directions`` naming an unknown argument or not a pair of opposite
            directions.
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        safety: SafetyClass | str = SafetyClass.READ_ONLY,
        reentrant: bool = False,
        timeout_s: float | None = None,
        examples: Sequence[tuple[str, dict[str, Any]]] = (),
        directions: Mapping[str, tuple[str, str]] | None = None,
        constant: bool = False,
    ) -> None:
        self.fn = fn
        self.constant = constant
        self.examples = tuple((str(text), dict(args)) for text, args in examples)
        self.directions = MappingProxyType(dict(directions or {}))
        check_directions(self.directions)
        self.name = name or fn.__name__
        if not _NAME_RE.match(self.name):
            raise ValueError(f"tool name {self.name!r} must match {_NAME_RE.pattern}")
        self.safety = SafetyClass(safety)
        self.reentrant = reentrant
        self.timeout_s = timeout_s
        doc = docstring_parser.parse(inspect.getdoc(fn) or "")
        arg_docs = {p.arg_name: (p.description or "") for p in doc.params}
        desc_parts = [doc.short_description or "", doc.long_description or ""]
        self.description = description or "\n\n".join(p for p in desc_parts if p).strip()
        if not self.description:
            self.description = self.name.replace("_", " ")

        hints = get_type_hints(fn, include_extras=True)
        fields: dict[str, Any] = {}
        self._ctx_param: str | None = None
        for pname, param in inspect.signature(fn).parameters.items():
            if pname in ("self", "cls"):
                continue
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise ValueError(f"tool {self.name}: *args/**kwargs are not supported")
            hint = hints.get(pname)
            if hint is ToolContext:
                self._ctx_param = pname
                continue
            if hint is None:
                raise ValueError(f"tool {self.name}: parameter {pname!r} needs a type hint")
            default = ... if param.default is param.empty else param.default
            fields[pname] = (
                hint,
                pydantic.Field(default=default, description=arg_docs.get(pname) or None),
            )
        self._model: type[pydantic.BaseModel] = pydantic.create_model(
            f"{self.name}_args",
            __config__=pydantic.ConfigDict(extra="forbid"),
            **fields,
        )
        schema = _strip_titles(self._model.model_json_schema())
        schema.setdefault("properties", {})
        self.parameters = schema
        unknown = set(self.directions) - set(schema.get("properties") or {})
        if unknown:
            raise ValueError(
                f"tool {self.name}: directions name unknown arguments {sorted(unknown)}"
            )
        self._is_async = inspect.iscoroutinefunction(fn)

    def parse_arguments(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Convert schema-valid JSON arguments to the function's Python types.

        Raises:
            ToolArgumentError: The arguments do not fit the function's types.
        """
        try:
            model = self._model.model_validate(arguments)
        except pydantic.ValidationError as exc:
            raise ToolArgumentError(_format_validation_error(exc)) from None
        return {k: getattr(model, k) for k in type(model).model_fields}

    async def invoke(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Run the function; see :meth:`Tool.invoke`."""
        kwargs = self.parse_arguments(arguments)
        if self._ctx_param is not None:
            kwargs[self._ctx_param] = ctx
        if self._is_async:
            value = await self.fn(**kwargs)
        else:
            value = await ctx.executor.run(self.fn, **kwargs)
        return as_result(value)

    async def __call__(self, **kwargs: Any) -> ToolResult:
        """Call the tool directly (tests, scripts) with a throw-away context."""
        ctx = ToolContext(task_id="direct", call_id="direct", workspace=Path.cwd())
        return await self.invoke(kwargs, ctx)


def _format_validation_error(exc: pydantic.ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(x) for x in err["loc"]) or "(arguments)"
        parts.append(f"{loc}: {err['msg']}")
    return "invalid arguments: " + "; ".join(parts)


def outcome_fields(result: ToolResult, lang: str) -> dict[str, Any]:
    """The ``tool_result`` event's fields of a result's typed outcome (docs/trace.md):
    ``outcome`` (``{"id", "params"}``, :meth:`Phrase.to_json`, or None) and ``outcome_text``
    (the outcome in ``lang``, the language of the people reading the terminal and the web
    console, or None).

    Args:
        result: The tool's result.
        lang: ``en`` or ``zh`` (``agent.lang``).
    """
    said = result.outcome
    return {
        "outcome": None if said is None else said.to_json(),
        "outcome_text": None if said is None else said.text(lang),
    }


def as_result(value: Any) -> ToolResult:
    """Wrap a tool's return value: a :class:`ToolResult` stays, anything else is ``data``."""
    if isinstance(value, ToolResult):
        return value
    return ToolResult(ok=True, data=value)


F = TypeVar("F", bound=Callable[..., Any])


@overload
def tool(fn: F, /) -> FunctionTool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    safety: SafetyClass | str = SafetyClass.READ_ONLY,
    reentrant: bool = False,
    timeout_s: float | None = None,
    examples: Sequence[tuple[str, dict[str, Any]]] = (),
    directions: Mapping[str, tuple[str, str]] | None = None,
    constant: bool = False,
) -> Callable[[F], FunctionTool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    safety: SafetyClass | str = SafetyClass.READ_ONLY,
    reentrant: bool = False,
    timeout_s: float | None = None,
    examples: Sequence[tuple[str, dict[str, Any]]] = (),
    directions: Mapping[str, tuple[str, str]] | None = None,
    constant: bool = False,
) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """Make a :class:`FunctionTool` from a typed function (SPEC C1); exported as ``loopact.tool``.

    Use bare (``@tool``) or with options (``@tool(safety="write")``). See :class:`FunctionTool`
    for the arguments.
    """

    def wrap(f: Callable[..., Any]) -> FunctionTool:
        return FunctionTool(
            f,
            name=name,
            description=description,
            safety=safety,
            reentrant=reentrant,
            timeout_s=timeout_s,
            examples=examples,
            directions=directions,
            constant=constant,
        )

    if fn is not None:
        return wrap(fn)
    return wrap


ToolFunction = Callable[..., Awaitable[ToolResult]]
