"""``mcp.servers`` and ``--mcp-config FILE`` (issue 18): the desktop assistants' shape."""

from __future__ import annotations

import json
from pathlib import Path

import mcp.types as mt
import pytest

from loopact.config import load_config, read_mcp_servers
from loopact.errors import ConfigError
from loopact.mcp.convert import clean_name, offered_name, safety_of, to_tool_result
from loopact.tools.base import SafetyClass

DESKTOP = {
    "mcpServers": {
        "files": {"command": "npx", "args": ["-y", "some-server"], "env": {"KEY": "value"}},
        "lab": {"url": "http://127.0.0.1:9000/mcp", "headers": {"Authorization": "Bearer x"}},
    },
    "globalShortcut": "Ctrl+Space",
}


def _load(tmp_path: Path, name: str, text: str, env: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    cfg, _ = load_config(None, mcp_config=path, env=env or {}, cwd=tmp_path)
    return cfg.mcp.servers


def test_json_file_in_the_desktop_assistants_shape(tmp_path: Path) -> None:
    servers = _load(tmp_path, "claude_desktop_config.json", json.dumps(DESKTOP))
    files, lab = servers["files"], servers["lab"]
    assert (files.transport, files.command, files.args, files.env) == (
        "stdio",
        "npx",
        ["-y", "some-server"],
        {"KEY": "value"},
    )
    assert lab.transport == "http" and lab.headers == {"Authorization": "Bearer x"}


def test_yaml_file_with_a_servers_mapping_and_env_references(tmp_path: Path) -> None:
    text = (
        "servers:\n"
        "  lab:\n"
        "    url: http://127.0.0.1:9000/mcp\n"
        '    headers: {Authorization: "Bearer ${LAB_TOKEN}"}\n'
        "  files: {command: npx, args: [-y, '${PKG:-some-server}']}\n"
    )
    servers = _load(tmp_path, "mcp.yaml", text, env={"LAB_TOKEN": "s3cret"})
    assert servers["lab"].headers["Authorization"] == "Bearer s3cret"
    assert servers["files"].args == ["-y", "some-server"]


def test_the_file_adds_to_and_replaces_the_config_files_servers(tmp_path: Path) -> None:
    (tmp_path / "loopact.yaml").write_text(
        "mcp:\n  servers:\n    lab: {url: 'http://old/mcp'}\n    keep: {command: keep-me}\n"
    )
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"servers": {"lab": {"command": "new-lab"}}}))
    cfg, _ = load_config(None, mcp_config=path, env={}, cwd=tmp_path)
    assert cfg.mcp.servers["lab"].command == "new-lab" and cfg.mcp.servers["lab"].url is None
    assert cfg.mcp.servers["keep"].command == "keep-me"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"servers": {"x": {"command": "a", "url": "http://h/mcp"}}}', "either command"),
        ('{"servers": {"x": {"args": ["a"]}}}', "either command"),
        ('{"servers": {"x": {"command": "a", "type": "http"}}}', "does not fit"),
        ('{"servers": {"x": {"url": "ftp://h"}}}', "mcp.servers.x.url"),
        (
            '{"servers": {"x": {"command": "a", "comand": "b"}}}',
            "unknown key 'mcp.servers.x.comand'",
        ),
        ('{"servers": {"x": {"command": "a", "safety": {"t": "motion"}}}}', "mcp.servers.x.safety"),
        ('{"servers": {"x": {"command": "${NOPE}"}}}', "NOPE is not set"),
        ('{"tools": []}', 'needs a "servers" mapping'),
        ("{not json", "not valid JSON or YAML"),
    ],
)
def test_bad_mcp_config_is_a_clear_error(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "m.json"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(None, mcp_config=path, env={}, cwd=tmp_path)
    assert message in str(info.value)


def test_a_missing_file_names_the_flag(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--mcp-config") as info:
        read_mcp_servers(tmp_path / "nope.json")
    assert info.value.key == "--mcp-config"


# ---------------------------------------------------------------------- pure conversions
def _tool(name: str = "t", **hints: bool) -> mt.Tool:
    ann = mt.ToolAnnotations(**hints) if hints else None
    return mt.Tool(name=name, input_schema={"type": "object"}, annotations=ann)


def test_safety_mapping() -> None:
    ro = _tool(read_only_hint=True)
    assert safety_of(ro, trusted=True) is SafetyClass.READ_ONLY
    assert safety_of(ro, trusted=False) is SafetyClass.WRITE
    assert safety_of(_tool(destructive_hint=True), trusted=True) is SafetyClass.WRITE
    assert safety_of(_tool(), trusted=True) is SafetyClass.WRITE
    assert safety_of(_tool(), trusted=False, grants={"t": "read_only"}) is SafetyClass.READ_ONLY
    patterns = {"t*": "idempotent", "t": "read_only"}
    assert safety_of(_tool(), trusted=False, grants=patterns) is SafetyClass.READ_ONLY
    assert safety_of(_tool("tx"), trusted=False, grants=patterns) is SafetyClass.IDEMPOTENT


def test_names_are_made_provider_safe_and_prefixed_on_conflict() -> None:
    taken = {"search", "web_search"}
    assert offered_name("web", "fetch", taken.__contains__) == "fetch"
    assert offered_name("web", "search", taken.__contains__) == "web_search_2"
    assert offered_name("my lab", "search", taken.__contains__) == "my_lab_search"
    assert clean_name("files/read.text") == "files_read_text"
    assert len(clean_name("x" * 200)) == 64


def test_a_result_block_of_an_unknown_type_is_named_not_dropped_silently() -> None:
    class Hologram:
        type = "hologram"

    result = mt.CallToolResult.model_construct(
        content=[mt.TextContent(type="text", text="hi"), Hologram()],
        structured_content=None,
        is_error=False,
    )
    out = to_tool_result(result, server="s", gate=lambda b: "no")
    assert out.ok and out.data == "hi"
    assert "unknown type 'hologram'" in out.metadata["notes"][0]
