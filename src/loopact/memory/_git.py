"""Blocking Git operations on the memory repository (dulwich), run in worker threads.

:class:`~loopact.memory.store.GitMemory` calls these through ``asyncio.to_thread`` and
serialises them with its own locks; nothing here is thread-safe on its own.
"""

from __future__ import annotations

import io
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, cast

from dulwich import porcelain
from dulwich.file import FileLocked
from dulwich.graph import find_merge_base
from dulwich.repo import Repo

from loopact.errors import PushRejected
from loopact.memory._fs import atomic_write, remove_file
from loopact.memory.merge import merge_file

if TYPE_CHECKING:
    from dulwich.objects import ObjectID
    from dulwich.refs import Ref

log = logging.getLogger(__name__)

BRANCH = cast("Ref", b"refs/heads/main")


@dataclass(frozen=True)
class Integration:
    """What integrating the remote's history did.

    Attributes:
        kind: ``"none"`` (nothing new), ``"fast_forward"`` or ``"merged"``.
        paths: Repository paths whose working-tree content changed.
        conflicts: Conflict copies written beside files both sides changed.
    """

    kind: str
    paths: tuple[str, ...] = ()
    conflicts: tuple[str, ...] = ()


def open_repo(path: Path) -> Repo:
    """Open the repository at ``path``, creating it (branch ``main``) if there is none."""
    if (path / ".git").exists():
        return Repo(str(path))
    path.mkdir(parents=True, exist_ok=True)
    return Repo.init(str(path), default_branch=b"main")


def head(repo: Repo) -> bytes | None:
    """The commit id of ``main``, None before the first commit."""
    try:
        return repo.refs[BRANCH]
    except KeyError:
        return None


def tree_files(repo: Repo, commit_id: bytes | None) -> dict[str, bytes]:
    """``{path: blob id}`` of every file in a commit's tree (empty for None)."""
    if commit_id is None:
        return {}
    tree_id = repo[commit_id].tree  # type: ignore[attr-defined]
    return {
        e.path.decode("utf-8", "surrogateescape"): e.sha
        for e in repo.object_store.iter_tree_contents(tree_id)
        if e.path is not None and e.sha is not None
    }


def blob_data(repo: Repo, blob_id: bytes | None) -> bytes | None:
    """The bytes of a blob, None for None."""
    if blob_id is None:
        return None
    data: bytes = repo[blob_id].as_raw_string()
    return data


def commit_paths(
    repo: Repo,
    paths: list[str],
    message: str,
    author: bytes,
    merge_heads: list[bytes] | None = None,
) -> bytes | None:
    """Stage ``paths`` (deleted files are unstaged) and commit if anything changed.

    Args:
        repo: The repository.
        paths: Repository paths (``/``-separated) that were written or deleted.
        message: Commit message.
        author: ``b"name <email>"``, used as author and committer.
        merge_heads: Extra parents (a merge commit is always made when given).

    Returns:
        The new commit id, or None when the tree did not change.
    """
    wt = repo.get_worktree()
    if paths:
        wt.stage(sorted(set(paths)))
    current = head(repo)
    if not merge_heads and current is not None:
        tree = repo.open_index().commit(repo.object_store)
        if tree == repo[current].tree:  # type: ignore[attr-defined]
            return None
    commit_id: bytes = wt.commit(
        message=message.encode(),
        author=author,
        committer=author,
        ref=BRANCH,
        merge_heads=_ids(merge_heads) if merge_heads else None,
    )
    return commit_id


def fetch(repo: Repo, remote: str) -> bytes | None:
    """Fetch the remote's objects; return its ``main`` commit id (None if it has none)."""
    result = porcelain.fetch(
        repo, remote, outstream=io.StringIO(), errstream=io.BytesIO(), quiet=True
    )
    refs = result.refs or {}
    found = refs.get(BRANCH)
    return bytes(found) if found is not None else None


def push(repo: Repo, remote: str) -> None:
    """Push ``main`` to the remote's ``main``.

    Raises:
        PushRejected: The remote's ``main`` is not an ancestor of ours any more.
    """
    err = io.BytesIO()
    try:
        result = porcelain.push(
            repo,
            remote,
            b"refs/heads/main:refs/heads/main",
            outstream=io.BytesIO(),
            errstream=err,
        )
    except porcelain.DivergedBranches as exc:
        raise PushRejected(str(exc)) from None
    except FileLocked as exc:  # another robot is updating the same ref right now
        raise PushRejected(f"remote ref locked: {exc}") from None
    for ref, error in (result.ref_status or {}).items():
        if error is not None:
            raise PushRejected(f"{ref!r}: {error}")


def is_ancestor(repo: Repo, ancestor: bytes, descendant: bytes) -> bool:
    """True when ``ancestor`` is ``descendant`` or one of its ancestors."""
    return ancestor == descendant or ancestor in find_merge_base(repo, _ids([ancestor, descendant]))


def integrate(repo: Repo, workdir: Path, remote_head: bytes | None, author: bytes) -> Integration:
    """Bring the fetched remote history into ``main`` and the working tree.

    Fast-forwards when we have nothing new, otherwise makes a merge commit whose content is
    decided file by file by :func:`loopact.memory.merge.merge_file` (nothing is lost). The
    working tree must hold no uncommitted changes (the caller commits pending writes first).

    Args:
        repo: The repository.
        workdir: Its working tree.
        remote_head: The remote's ``main`` after :func:`fetch`.
        author: Author of a merge commit.

    Returns:
        What was done.
    """
    local = head(repo)
    if remote_head is None or remote_head == local:
        return Integration("none")
    if local is not None and is_ancestor(repo, remote_head, local):
        return Integration("none")
    mine = tree_files(repo, local)
    theirs = tree_files(repo, remote_head)
    if local is None or is_ancestor(repo, local, remote_head):
        changed = _apply(repo, workdir, mine, theirs)
        # Move main, then stage exactly the changed paths so the index matches the new tree.
        repo.refs[BRANCH] = cast("ObjectID", remote_head)
        if changed:
            repo.get_worktree().stage(changed)
        return Integration("fast_forward", tuple(changed))
    bases = find_merge_base(repo, _ids([local, remote_head]))
    base = tree_files(repo, bases[0]) if bases else {}
    writes: dict[str, bytes | None] = {}
    conflicts: list[str] = []
    for path in sorted(set(mine) | set(theirs) | set(base)):
        m, t, b = mine.get(path), theirs.get(path), base.get(path)
        if m == t or t == b:
            continue
        if m == b:
            writes[path] = blob_data(repo, t)
            continue
        merged = merge_file(path, blob_data(repo, m), blob_data(repo, t), blob_data(repo, b))
        for p, data in merged.items():
            writes[p] = data
            if p != path:
                conflicts.append(p)
    for p, data in writes.items():
        _write(workdir, p, data)
    commit_paths(
        repo,
        list(writes),
        f"Merge remote memory {remote_head.decode()[:7]}",
        author,
        merge_heads=[remote_head],
    )
    return Integration("merged", tuple(writes), tuple(conflicts))


def _ids(ids: list[bytes]) -> list[ObjectID]:
    return [cast("ObjectID", i) for i in ids]


def _apply(
    repo: Repo, workdir: Path, mine: dict[str, bytes], theirs: dict[str, bytes]
) -> list[str]:
    changed: list[str] = []
    for path in sorted(set(mine) | set(theirs)):
        if mine.get(path) == theirs.get(path):
            continue
        _write(workdir, path, blob_data(repo, theirs.get(path)))
        changed.append(path)
    return changed


def _write(workdir: Path, path: str, data: bytes | None) -> None:
    target = workdir.joinpath(*path.split("/"))
    if not os.path.abspath(target).startswith(os.path.abspath(workdir) + os.sep):
        log.warning("ignoring remote path outside the memory folder: %s", path)
        return
    if data is None:
        remove_file(target)
    else:
        atomic_write(target, data)
