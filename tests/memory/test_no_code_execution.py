"""Memory commits never run what the repository configures (issue 21 item 1, SPEC E2).

The files an attacker would plant (a ``.gitattributes`` naming a filter, a ``filter`` section
with a ``clean`` command in ``.git/config``, hooks, ``commit.gpgSign``) are written straight
into a real memory repository; the next memory commits must succeed, run nothing, and store
the files byte for byte.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from dulwich.repo import Repo

from loopact.memory import GitMemory


def _plant_filter(mem: Path, marker: Path) -> None:
    """The issue's attack: two writes, a ``.gitattributes`` and a filter with a clean command."""
    clean = mem.parent / "clean.sh"
    clean.write_text(f"#!/bin/sh\necho filter >> {marker}\ncat\n", encoding="utf-8")
    clean.chmod(0o755)
    (mem / ".gitattributes").write_text("* filter=x\n*.md text eol=crlf\n", encoding="utf-8")
    with (mem / ".git" / "config").open("a", encoding="utf-8") as f:
        f.write(f'[filter "x"]\n\tclean = {clean}\n\tsmudge = cat\n\trequired = true\n')


def _plant_hooks_and_signing(mem: Path, marker: Path) -> None:
    with (mem / ".git" / "config").open("a", encoding="utf-8") as f:
        f.write(f"[commit]\n\tgpgSign = true\n[gpg]\n\tprogram = {_script(mem, marker)}\n")
    hooks = mem / ".git" / "hooks"
    hooks.mkdir(exist_ok=True)
    for name in ("pre-commit", "commit-msg", "post-commit"):
        hook = hooks / name
        hook.write_text(f"#!/bin/sh\necho {name} >> {marker}\nexit 1\n", encoding="utf-8")
        hook.chmod(hook.stat().st_mode | stat.S_IXUSR)


def _plant_core_programs(mem: Path, marker: Path) -> None:
    """Git's other config-named programs: a hooks folder elsewhere (``core.hooksPath``), a
    file-system monitor (``core.fsmonitor``), an editor, a credential helper, an external
    diff and a merge driver; none may run on a memory commit (git runs some of them)."""
    elsewhere = mem.parent / "hooks-elsewhere"
    elsewhere.mkdir()
    for name in ("pre-commit", "commit-msg", "post-commit"):
        hook = elsewhere / name
        hook.write_text(f"#!/bin/sh\necho {name} >> {marker}\nexit 1\n", encoding="utf-8")
        hook.chmod(0o755)
    script = _script(mem, marker)
    with (mem / ".git" / "config").open("a", encoding="utf-8") as f:
        f.write(
            f"[core]\n\thooksPath = {elsewhere}\n\tfsmonitor = {script}\n\teditor = {script}\n"
            f"[credential]\n\thelper = !{script}\n[diff]\n\texternal = {script}\n"
            f'[merge "x"]\n\tdriver = {script} %O %A %B\n'
        )
    (mem / ".gitattributes").write_text("* merge=x diff=x\n", encoding="utf-8")


def _script(mem: Path, marker: Path) -> Path:
    script = mem.parent / "ran.sh"
    script.write_text(f"#!/bin/sh\necho ran >> {marker}\nexit 1\n", encoding="utf-8")
    script.chmod(0o755)
    return script


def _committed(mem: Path, relpath: str) -> bytes | None:
    repo = Repo(str(mem))
    try:
        tree = repo[repo.refs[b"refs/heads/main"]].tree
        for e in repo.object_store.iter_tree_contents(tree):
            if e.path.decode() == relpath:
                data: bytes = repo[e.sha].as_raw_string()
                return data
        return None
    finally:
        repo.close()


@pytest.mark.parametrize("plant", [_plant_filter, _plant_hooks_and_signing, _plant_core_programs])
async def test_planted_filters_hooks_and_signing_never_run(
    tmp_path: Path, plant: Callable[[Path, Path], None]
) -> None:
    mem_dir = tmp_path / "mem"
    marker = tmp_path / "pwned.txt"
    async with GitMemory(mem_dir, machine_id="robot-1") as mem:
        await mem.flush()
    plant(mem_dir, marker)

    # A later run: reopened, and every kind of write commits.
    async with GitMemory(mem_dir, machine_id="robot-1") as mem:
        assert await mem.remember("The charger is in room 2.")
        await mem.append_diary("Patrolled the lab.")
        await mem.flush()
        error = mem.last_error
    assert not marker.exists(), marker.read_text()
    assert error is None
    facts = _committed(mem_dir, "facts.md")
    assert facts is not None
    # Stored byte for byte: no filter output, no CRLF conversion from the planted attributes.
    assert facts == (mem_dir / "facts.md").read_bytes()
    assert b"\r\n" not in facts and b"The charger is in room 2." in facts
    assert any(p.startswith("diaries/") for p in _tree_paths(mem_dir))


def _tree_paths(mem: Path) -> list[str]:
    repo = Repo(str(mem))
    try:
        tree = repo[repo.refs[b"refs/heads/main"]].tree
        return [e.path.decode() for e in repo.object_store.iter_tree_contents(tree)]
    finally:
        repo.close()


async def test_planted_ssh_command_is_not_used_for_sync(tmp_path: Path) -> None:
    """``core.sshCommand`` in the memory repo's own config is never read (a sync over ssh)."""
    mem_dir = tmp_path / "mem"
    marker = tmp_path / "ssh-ran.txt"
    fake_ssh = tmp_path / "fake-ssh.sh"
    fake_ssh.write_text(f"#!/bin/sh\necho ran >> {marker}\nexit 1\n", encoding="utf-8")
    fake_ssh.chmod(0o755)
    async with GitMemory(mem_dir, machine_id="robot-1") as mem:
        await mem.flush()
    with (mem_dir / ".git" / "config").open("a", encoding="utf-8") as f:
        f.write(f"[core]\n\tsshCommand = {fake_ssh}\n")
    env_before = {k: os.environ.get(k) for k in ("GIT_SSH", "GIT_SSH_COMMAND")}
    assert env_before == {"GIT_SSH": None, "GIT_SSH_COMMAND": None}
    async with GitMemory(
        mem_dir, machine_id="robot-1", remote="ssh://git@127.0.0.1:1/none.git", sync_timeout_s=20
    ) as mem:
        result = await mem.sync()
    assert not result.ok  # nothing listens there; what matters is what ran
    assert not marker.exists()
