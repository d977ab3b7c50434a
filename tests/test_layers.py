"""The layering check (`make lint` runs `lint-imports`) fails on an upward import or a cycle.

Each test copies the package to a temporary folder, changes one import, and runs the real
check with its real contracts (``[tool.importlinter]`` in pyproject.toml) on the copy.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")

pytestmark = pytest.mark.skipif(
    not LINT_IMPORTS.exists(), reason="import-linter is missing: pip install -e '.[dev]'"
)


def _copy(tmp_path: Path) -> Path:
    shutil.copytree(
        ROOT / "src" / "loopact",
        tmp_path / "src" / "loopact",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
    )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path / "src" / "loopact"


def _check(tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "src")}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "pyproject.toml"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _add_line(path: Path, after: str, line: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert after in text, f"{after!r} not in {path}"
    path.write_text(text.replace(after, after + line, 1), encoding="utf-8")


def test_the_tree_as_it_is_keeps_every_contract(tmp_path: Path) -> None:
    _copy(tmp_path)
    proc = _check(tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    contracts = (
        (ROOT / "pyproject.toml")
        .read_text(encoding="utf-8")
        .count("[[tool.importlinter.contracts]]")
    )
    assert contracts == 4
    assert f"Contracts: {contracts} kept, 0 broken." in proc.stdout


def test_an_upward_import_inside_a_function_breaks_the_layers(tmp_path: Path) -> None:
    pkg = _copy(tmp_path)
    # tools is below agent: a tool module reaching up to the agent, lazily, as the old
    # robot -> sim import did.
    _add_line(
        pkg / "tools" / "registry.py",
        "\ndef _describe(tool: Tool) -> str:\n",
        "    from loopact.agent.runtime import Agent  # noqa: F401\n",
    )
    proc = _check(tmp_path)
    assert proc.returncode != 0
    assert "Every import points down the layers BROKEN" in proc.stdout
    assert "loopact.tools is not allowed to import loopact.agent" in proc.stdout
    assert "loopact.tools.registry -> loopact.agent.runtime" in proc.stdout


def test_an_import_between_independent_packages_breaks_the_layers(tmp_path: Path) -> None:
    pkg = _copy(tmp_path)
    # the agent and the node transports sit side by side and must not know each other
    _add_line(
        pkg / "agent" / "state.py",
        "from __future__ import annotations\n",
        "from loopact.nodes.connector import Connector  # noqa: F401\n",
    )
    proc = _check(tmp_path)
    assert proc.returncode != 0
    assert "loopact.agent is not allowed to import loopact.nodes" in proc.stdout


def test_one_transport_importing_the_other_breaks_the_nodes_contract(tmp_path: Path) -> None:
    pkg = _copy(tmp_path)
    # nodes/ros2 and nodes/mqtt both build on the node protocol and never know each other
    _add_line(
        pkg / "nodes" / "ros2" / "spin.py",
        "from loopact.nodes.ros2.interfaces import ros_module\n",
        "from loopact.nodes.mqtt import link  # noqa: F401\n",
    )
    proc = _check(tmp_path)
    assert proc.returncode != 0
    assert "nodes: ROS 2 and MQTT build on the node protocol" in proc.stdout
    assert "loopact.nodes.ros2 is not allowed to import loopact.nodes.mqtt" in proc.stdout


def test_a_wire_protocol_importing_the_offline_brain_breaks_the_llm_contract(
    tmp_path: Path,
) -> None:
    pkg = _copy(tmp_path)
    _add_line(
        pkg / "llm" / "openai_chat.py",
        "from __future__ import annotations\n",
        "from loopact.llm.local import brain  # noqa: F401\n",
    )
    proc = _check(tmp_path)
    assert proc.returncode != 0
    assert "llm: the offline brain builds on the wire protocols, which never import it BROKEN" in (
        proc.stdout
    )


def test_a_cycle_between_modules_of_a_package_is_found(tmp_path: Path) -> None:
    pkg = _copy(tmp_path)
    # state is what runtime builds on; runtime importing state and state importing
    # runtime (even only for type checking) closes a circle
    _add_line(
        pkg / "agent" / "state.py",
        "from __future__ import annotations\n",
        "from loopact.agent import runtime  # noqa: F401\n",
    )
    proc = _check(tmp_path)
    assert proc.returncode != 0
    assert "No import cycles between the modules of a package BROKEN" in proc.stdout
    assert "No cycles are allowed in loopact.agent." in proc.stdout


def test_no_module_imports_the_public_namespace() -> None:
    """``loopact/__init__.py`` sits above every package (it exports from all of them), so a
    module inside must not import ``loopact`` itself; import-linter's layers start below it."""
    offenders = []
    for path in sorted((ROOT / "src" / "loopact").rglob("*.py")):
        if path == ROOT / "src" / "loopact" / "__init__.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            if "loopact" in names:
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []
