"""The loopact node protocol: topic names, heartbeats, call results (SPEC C2, C3, C4).

Public: third-party nodes code against it (see ``docs/ros2-nodes.md``). ``<agent>`` is the agent
name (``--agent-name``, default ``loopact``).

Output node ``<name>`` (a tool):
    - heartbeat every :data:`HEARTBEAT_PERIOD_S` on ``/<agent>/output/<name>/info``
      (``std_msgs/String``; reliable, transient local, depth 1) carrying the OpenAI tool object
      ``{"type": "function", "function": {name, description, parameters}}`` plus
      ``"x-loopact": {"safety", "reentrant", "timeout_s"}`` (loopact's own nodes also send an
      ``"instance"`` id that changes when the node restarts);
    - execute interface ``/<agent>/output/<name>``: action ``loopact_interfaces/action/ExecuteTool``
      (goal ``input_json``, ``timeout_sec``; result ``output_json``, ``exit_code``; feedback
      ``progress``). ``output_json`` is ``{ok, data, metadata, error, images: [base64 JPEG]}``;
      ``exit_code`` 0 is success; when ``exit_code`` and ``ok`` disagree the call failed.

Input node ``<name>`` (a sensor):
    - heartbeat on ``/<agent>/input/<name>/info``: ``{description, mode: accumulate|latest,
      kind: text|image|json, inject: bool}``;
    - data on ``/<agent>/input/<name>``: ``std_msgs/String`` (text, JSON) or
      ``sensor_msgs/Image`` (image).

The agent drops a node whose heartbeat has been silent for :data:`DROP_AFTER_S`.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import math
import re
from dataclasses import dataclass
from typing import Any, Literal

from loopact.errors import ProtocolError
from loopact.llm.messages import Image
from loopact.tools.base import SafetyClass, Tool, ToolResult
from loopact.tools.directions import check_directions

HEARTBEAT_PERIOD_S = 0.5
"""Seconds between two heartbeats."""

DROP_AFTER_S = 3.0
"""A node silent this long (seconds) is dropped."""

DEFAULT_AGENT_NAME = "loopact"

SHARED_AGENT = "_shared"
"""The agent segment of nodes shared by every agent of a fleet (``/_shared/output/<name>``;
agent names start with a letter, so it is nobody's name). Agents discover these beside their
own nodes (``nodes.shared``, SPEC X4)."""

MAX_OUTPUT_JSON_CHARS = 8_000_000
"""A call result longer than this is refused (memory bound)."""

_NAME_RE = re.compile(r"^[a-zA-Z][a-zA-Z0-9_]{0,63}$")

InputMode = Literal["accumulate", "latest"]
InputKind = Literal["text", "image", "json"]


def check_name(name: str, what: str = "node name") -> str:
    """Validate a node/agent name usable in a ROS 2 topic.

    Raises:
        ProtocolError: Not a letter followed by up to 63 letters, digits or underscores.
    """
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise ProtocolError(
            f"{what} {name!r} must start with a letter and contain only letters, digits and "
            "underscores (at most 64 characters), so that it is a valid topic segment on ROS 2 "
            "and MQTT"
        )
    return name


def check_agent_name(name: str) -> str:
    """An agent name (:func:`check_name`) or :data:`SHARED_AGENT`.

    Raises:
        ProtocolError: Neither.
    """
    return name if name == SHARED_AGENT else check_name(name, "agent name")


def output_info_topic(agent: str, name: str) -> str:
    """``/<agent>/output/<name>/info``."""
    return f"/{agent}/output/{name}/info"


def output_endpoint(agent: str, name: str) -> str:
    """``/<agent>/output/<name>`` (the ExecuteTool action)."""
    return f"/{agent}/output/{name}"


def input_info_topic(agent: str, name: str) -> str:
    """``/<agent>/input/<name>/info``."""
    return f"/{agent}/input/{name}/info"


def input_data_topic(agent: str, name: str) -> str:
    """``/<agent>/input/<name>``."""
    return f"/{agent}/input/{name}"


def name_from_topic(topic: str, prefix: str, suffix: str) -> str:
    """The ``<name>`` segment of ``prefix + name + suffix``."""
    return topic[len(prefix) : len(topic) - len(suffix)] if suffix else topic[len(prefix) :]


# --------------------------------------------------------------------------- output nodes


@dataclass(frozen=True)
class OutputInfo:
    """An output node's heartbeat (SPEC C2).

    Attributes:
        name: Tool name.
        description: What it does, for the model.
        parameters: JSON Schema of the arguments (``type: object``).
        safety: Safety class.
        reentrant: Whether calls may overlap.
        timeout_s: Per-call timeout in seconds.
        instance: Id of the running node process ("" when the node does not send one).
        examples: ``(instruction, arguments)`` pairs for text-call models (optional).
        directions: Sign conventions of signed arguments, ``{arg: (positive, negative)}``
            (optional; :mod:`loopact.tools.directions`).
    """

    name: str
    description: str
    parameters: dict[str, Any]
    safety: SafetyClass = SafetyClass.READ_ONLY
    reentrant: bool = False
    timeout_s: float = 30.0
    instance: str = ""
    examples: tuple[tuple[str, dict[str, Any]], ...] = ()
    directions: tuple[tuple[str, tuple[str, str]], ...] = ()

    @classmethod
    def from_tool(
        cls, tool: Tool, instance: str = "", default_timeout_s: float = 30.0
    ) -> OutputInfo:
        """The heartbeat of a node serving ``tool``."""
        return cls(
            name=tool.name,
            description=tool.description,
            parameters=tool.parameters,
            safety=tool.safety,
            reentrant=tool.reentrant,
            timeout_s=tool.timeout_s or default_timeout_s,
            instance=instance,
            examples=tuple(tool.examples),
            directions=tuple(sorted(tool.directions.items())),
        )

    def to_json(self) -> str:
        """The heartbeat JSON text."""
        return json.dumps(
            {
                "type": "function",
                "function": {
                    "name": self.name,
                    "description": self.description,
                    "parameters": self.parameters,
                },
                "x-loopact": {
                    "safety": self.safety.value,
                    "reentrant": self.reentrant,
                    "timeout_s": self.timeout_s,
                    "instance": self.instance,
                    **({"examples": [list(e) for e in self.examples]} if self.examples else {}),
                    **(
                        {"directions": {k: list(v) for k, v in self.directions}}
                        if self.directions
                        else {}
                    ),
                },
            },
            ensure_ascii=False,
        )

    @classmethod
    def parse(cls, text: str, expected_name: str | None = None) -> OutputInfo:
        """Parse and check a heartbeat.

        Args:
            text: The heartbeat JSON.
            expected_name: The ``<name>`` of the topic it came on; must match the function name.

        Raises:
            ProtocolError: Not JSON, wrong shape, bad name, bad schema type, bad safety class,
                non-positive timeout (the message names the field).
        """
        try:
            obj = json.loads(text)
        except (json.JSONDecodeError, TypeError) as exc:
            raise ProtocolError(f"heartbeat is not JSON: {exc}") from None
        if not isinstance(obj, dict) or obj.get("type") != "function":
            raise ProtocolError('heartbeat must be an object with "type": "function"')
        fn = obj.get("function")
        if not isinstance(fn, dict):
            raise ProtocolError('heartbeat needs a "function" object')
        name = check_name(fn.get("name"), "function.name")  # type: ignore[arg-type]
        if expected_name is not None and name != expected_name:
            raise ProtocolError(
                f"function.name {name!r} does not match the topic's node name {expected_name!r}"
            )
        desc = fn.get("description", "")
        if not isinstance(desc, str):
            raise ProtocolError("function.description must be a string")
        params = fn.get("parameters", {"type": "object", "properties": {}})
        if not isinstance(params, dict) or params.get("type", "object") != "object":
            raise ProtocolError('function.parameters must be a JSON Schema with "type": "object"')
        ext = obj.get("x-loopact", {})
        if not isinstance(ext, dict):
            raise ProtocolError('"x-loopact" must be an object')
        try:
            safety = SafetyClass(ext.get("safety", "read_only"))
        except ValueError:
            raise ProtocolError(
                f"x-loopact.safety {ext.get('safety')!r} must be one of "
                "read_only, idempotent, write, motion"
            ) from None
        reentrant = ext.get("reentrant", False)
        if not isinstance(reentrant, bool):
            raise ProtocolError("x-loopact.reentrant must be true or false")
        timeout = ext.get("timeout_s", 30.0)
        if (
            isinstance(timeout, bool)
            or not isinstance(timeout, (int, float))
            or not math.isfinite(timeout)
            or timeout <= 0
        ):
            raise ProtocolError(f"x-loopact.timeout_s must be a positive number, got {timeout!r}")
        instance = ext.get("instance", "")
        examples, directions = _parse_hints(ext)
        return cls(
            name=name,
            description=desc or name.replace("_", " "),
            parameters=params,
            safety=safety,
            reentrant=reentrant,
            timeout_s=float(timeout),
            instance=str(instance) if instance is not None else "",
            examples=examples,
            directions=directions,
        )


def _parse_hints(
    ext: dict[str, Any],
) -> tuple[tuple[tuple[str, dict[str, Any]], ...], tuple[tuple[str, tuple[str, str]], ...]]:
    """``x-loopact.examples`` and ``x-loopact.directions`` (optional hints).

    Raises:
        ProtocolError: Present but of the wrong shape (named).
    """
    raw_examples = ext.get("examples", [])
    if not isinstance(raw_examples, list) or not all(
        isinstance(e, list) and len(e) == 2 and isinstance(e[0], str) and isinstance(e[1], dict)
        for e in raw_examples
    ):
        raise ProtocolError('x-loopact.examples must be a list of ["instruction", {arguments}]')
    raw_dirs = ext.get("directions", {})
    if not isinstance(raw_dirs, dict):
        raise ProtocolError('x-loopact.directions must be an object {"arg": ["left", "right"]}')
    directions = []
    for arg, pair in sorted(raw_dirs.items()):
        if not (
            isinstance(pair, list) and len(pair) == 2 and all(isinstance(p, str) for p in pair)
        ):
            raise ProtocolError(f"x-loopact.directions.{arg} must be a pair of directions")
        directions.append((str(arg), (pair[0], pair[1])))
    try:
        check_directions(dict(directions))
    except ValueError as exc:
        raise ProtocolError(f"x-loopact.directions: {exc}") from None
    return tuple((e[0], e[1]) for e in raw_examples), tuple(directions)


# --------------------------------------------------------------------------- input nodes


@dataclass(frozen=True)
class InputInfo:
    """An input node's heartbeat (SPEC C3).

    Attributes:
        name: Input name (from the topic).
        description: What it is.
        mode: ``accumulate`` (every message since the last injection) or ``latest``.
        kind: ``text``, ``image`` or ``json``.
        inject: Whether latest-mode data is injected into snapshots (accumulate always is).
        instance: Id of the running node process ("" when not sent).
    """

    name: str
    description: str = ""
    mode: InputMode = "latest"
    kind: InputKind = "text"
    inject: bool = False
    instance: str = ""

    def to_json(self) -> str:
        """The heartbeat JSON text."""
        return json.dumps(
            {
                "description": self.description,
                "mode": self.mode,
                "kind": self.kind,
                "inject": self.inject,
                "instance": self.instance,
            },
            ensure_ascii=False,
        )

    @classmethod
    def parse(cls, text: str, name: str) -> InputInfo:
        """Parse and check an input heartbeat.

        Raises:
            ProtocolError: Not JSON or a field with a wrong value (named).
        """
        check_name(name, "input name")
        try:
            obj = json.loads(text)
        except (json.JSONDecodeError, TypeError) as exc:
            raise ProtocolError(f"input heartbeat is not JSON: {exc}") from None
        if not isinstance(obj, dict):
            raise ProtocolError("input heartbeat must be a JSON object")
        mode = obj.get("mode", "latest")
        if mode not in ("accumulate", "latest"):
            raise ProtocolError(f"mode {mode!r} must be accumulate or latest")
        kind = obj.get("kind", "text")
        if kind not in ("text", "image", "json"):
            raise ProtocolError(f"kind {kind!r} must be text, image or json")
        inject = obj.get("inject", False)
        if not isinstance(inject, bool):
            raise ProtocolError("inject must be true or false")
        desc = obj.get("description", "")
        return cls(
            name=name,
            description=str(desc),
            mode=mode,
            kind=kind,
            inject=inject,
            instance=str(obj.get("instance", "") or ""),
        )


# --------------------------------------------------------------------------- call results


def encode_result(result: ToolResult) -> tuple[str, int]:
    """Serialise a tool result for ``ExecuteTool``: ``(output_json, exit_code)``.

    Images become base64 JPEG (non-JPEG images are re-encoded). Data that is not JSON-able is
    turned into strings.
    """
    images: list[str] = []
    for img in result.images:
        data = img.data
        if img.media_type != "image/jpeg":
            data = _to_jpeg(data)
        images.append(base64.b64encode(data).decode("ascii"))
    body = {
        "ok": result.ok,
        "data": result.data,
        "metadata": result.metadata,
        "error": result.error,
        "images": images,
    }
    return json.dumps(body, ensure_ascii=False, default=str), 0 if result.ok else 1


def _to_jpeg(data: bytes) -> bytes:
    from PIL import Image as PILImage

    with PILImage.open(io.BytesIO(data)) as pil:
        buf = io.BytesIO()
        pil.convert("RGB").save(buf, format="JPEG", quality=85)
    return buf.getvalue()


def decode_result(output_json: str, exit_code: int, node: str = "node") -> ToolResult:
    """Turn an ``ExecuteTool`` result back into a :class:`ToolResult` (never raises).

    ``output_json`` that is not a JSON object, or an ``exit_code`` that disagrees with ``ok``,
    gives a failed result that says so (SPEC C2). Images that do not decode are dropped and
    counted in ``metadata.bad_images``.
    """
    if len(output_json) > MAX_OUTPUT_JSON_CHARS:
        return ToolResult.failure(
            f"{node} returned {len(output_json)} characters of output_json "
            f"(limit {MAX_OUTPUT_JSON_CHARS}); refused",
            exit_code=exit_code,
        )
    try:
        obj = json.loads(output_json)
    except (json.JSONDecodeError, TypeError):
        snippet = output_json[:200]
        return ToolResult.failure(
            f"{node} returned output_json that is not JSON (exit_code {exit_code}): {snippet!r}",
            exit_code=exit_code,
        )
    if not isinstance(obj, dict):
        return ToolResult.failure(
            f"{node} returned output_json that is not an object: {output_json[:200]!r}",
            exit_code=exit_code,
        )
    ok = obj.get("ok", exit_code == 0)
    metadata = obj.get("metadata") or {}
    if not isinstance(metadata, dict):
        metadata = {"metadata": metadata}
    error = obj.get("error")
    images: list[Image] = []
    bad = 0
    raw_images = obj.get("images") or []
    if isinstance(raw_images, list):
        for item in raw_images[:16]:
            img = _decode_image(item)
            if img is None:
                bad += 1
            else:
                images.append(img)
    if bad:
        metadata = {**metadata, "bad_images": bad}
    metadata = {**metadata, "exit_code": exit_code}
    success = bool(ok) and exit_code == 0
    if not success:
        if bool(ok) != (exit_code == 0):
            why = f"exit_code {exit_code} and ok={bool(ok)} disagree: the call counts as failed"
            error = f"{error}; {why}" if error else why
        elif not error:
            error = f"{node} failed with exit_code {exit_code}"
    return ToolResult(
        ok=success,
        data=obj.get("data"),
        metadata=metadata,
        error=None if success else str(error),
        images=tuple(images),
    )


def _decode_image(item: Any) -> Image | None:
    if not isinstance(item, str):
        return None
    try:
        data = base64.b64decode(item, validate=True)
    except (binascii.Error, ValueError):
        return None
    try:
        from PIL import Image as PILImage

        with PILImage.open(io.BytesIO(data)) as pil:
            w, h = pil.size
            fmt = (pil.format or "JPEG").lower()
    except Exception:
        return None
    media = "image/png" if fmt == "png" else "image/jpeg"
    return Image(data=data, media_type=media, width_px=w, height_px=h)
