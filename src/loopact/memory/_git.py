"""Blocking Git operations on the memory repository (dulwich), run in worker threads.

:class:`~loopact.memory.store.GitMemory` calls these on its
:class:`~loopact.tools.blocking.BlockingExecutor` (daemon threads: a fetch that hangs past its
timeout is abandoned, never blocking exit) and serialises them with its own locks; nothing here
is thread-safe on its own.

Nothing in the repository can make a memory commit run a program (issue 21): dulwich would
run ``.git/hooks/pre-commit``, ``commit-msg`` and ``post-commit``, the ``clean`` command of a
filter that ``.gitattributes`` names and ``.git/config`` defines, ``gpg`` when
``commit.gpgSign`` is set, and ``core.sshCommand`` on a sync. :class:`MemoryRepo` drops every
hook, stores files byte for byte (no filters, no attributes, no line-ending conversion),
commits with an empty configuration, and reads only the user's and the system's Git
configuration (never the repository's own ``.git/config``) for fetch and push.
"""

from __future__ import annotations

import io
import logging
import os
import stat
from collections.abc import Callable, Iterator
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from dulwich import porcelain
from dulwich.client import get_transport_and_path
from dulwich.config import ConfigFile, StackedConfig
from dulwich.errors import NotGitRepository
from dulwich.file import FileLocked
from dulwich.filters import FilterBlobNormalizer
from dulwich.graph import find_merge_base
from dulwich.objects import ZERO_SHA, Blob
from dulwich.repo import Repo

from loopact.errors import MemoryRepoError, PushRejected
from loopact.memory._faults import damaged_text
from loopact.memory._fs import TEMP_MARKER, atomic_write, remove_file
from loopact.memory._lock import creation_lock
from loopact.memory.merge import merge_file

if TYPE_CHECKING:
    from dulwich.objects import ObjectID
    from dulwich.pack import UnpackedObject
    from dulwich.refs import Ref

log = logging.getLogger(__name__)

BRANCH = cast("Ref", b"refs/heads/main")
#: The commit the remote held after the last successful sync (SPEC E2: what is still to push).
SYNCED = cast("Ref", b"refs/loopact/synced")
_FETCH_TRIES = 3


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


class _Verbatim(FilterBlobNormalizer):
    """A blob normaliser that changes nothing: no filter, attribute or line-ending rule."""

    def __init__(self) -> None:  # no config, no attributes, no filter processes
        self._owns_context = False

    def checkin_normalize(self, blob: Blob, path: bytes) -> Blob:
        return blob

    def checkout_normalize(self, blob: Blob, path: bytes) -> Blob:
        return blob

    def close(self) -> None:
        return None


class MemoryRepo(Repo):
    """The memory repository, unable to run anything the repository configures (issue 21).

    No hooks (dulwich skips a hook it does not know), no clean/smudge filters, no
    ``.gitattributes`` processing, and a configuration stack without the repository's own
    ``.git/config``: a file written into the repository can never become a command.
    """

    def __init__(self, root: str, **kwargs: Any) -> None:
        super().__init__(root, **kwargs)
        self.hooks.clear()

    def get_config_stack(self) -> StackedConfig:
        """The user's and system's Git configuration only (transport settings for a sync)."""
        return StackedConfig(StackedConfig.default_backends())

    def get_blob_normalizer(
        self, config: Any = None, tree: bytes | None = None
    ) -> FilterBlobNormalizer:
        """Files are stored and checked out byte for byte."""
        return _Verbatim()


def _commit_config() -> ConfigFile:
    """The configuration memory commits are made with: empty (no signing, no sign-off)."""
    return ConfigFile()


def open_repo(path: Path) -> MemoryRepo:
    """Open the repository at ``path``, creating it (branch ``main``) if there is none.

    Raises:
        MemoryRepoError: ``path/.git`` exists but is no repository, or ``main`` points to a
            commit (or tree) that is missing: the message names the folder and the fix.
    """
    if (path / ".git").exists():
        try:
            opened = MemoryRepo(str(path))
        except NotGitRepository as exc:
            raise MemoryRepoError(
                f"the memory folder {path} is not a Git repository: its .git is empty or "
                f"incomplete ({exc}); move {path / '.git'} away to start a new history that "
                "keeps the files, or use another memory folder"
            ) from None
        try:
            check(opened, path)
        except BaseException:
            opened.close()
            raise
        return opened
    path.mkdir(parents=True, exist_ok=True)
    repo = MemoryRepo.init(str(path), default_branch=b"main")
    assert isinstance(repo, MemoryRepo)
    return repo


def open_or_create(path: Path) -> tuple[bool, MemoryRepo]:
    """Open or create the repository at ``path`` while holding the folder's creation lock.

    Two processes started together on a new folder get one repository, made by the first
    (:func:`loopact.memory._lock.creation_lock`).

    Returns:
        Whether the folder held files but no ``.git`` (see :func:`has_files_but_no_repo`),
        and the repository.

    Raises:
        MemoryRepoError: See :func:`open_repo`; or another process held the lock too long.
        OSError: The folder cannot be created or read.
    """
    with creation_lock(path):
        had_files = has_files_but_no_repo(path)
        return had_files, open_repo(path)


def has_files_but_no_repo(path: Path) -> bool:
    """Whether ``path`` holds files but no ``.git`` (deleted, or never made): the new
    repository :func:`open_repo` makes there gets them in its first commit (SPEC E2)."""
    return not (path / ".git").exists() and path.is_dir() and any(path.iterdir())


def check(repo: Repo, folder: Path) -> None:
    """Check that ``main`` and the commit and tree it points to can be read.

    Raises:
        MemoryRepoError: They cannot (the message says which object is missing).
    """
    current = head(repo)
    if current is None:
        return
    try:
        commit = repo[current]
        tree = getattr(commit, "tree", None)
        if tree is None:
            raise MemoryRepoError(
                damaged_text(folder, f"main points to {current.decode()[:7]}, not a commit")
            )
        repo[tree]
    except KeyError as exc:
        missing = exc.args[0] if exc.args else current
        name = missing.decode("ascii", "replace") if isinstance(missing, bytes) else str(missing)
        raise MemoryRepoError(
            damaged_text(
                folder,
                f"main points to commit {current.decode()[:7]}, but object {name[:7]} is missing",
            )
        ) from None


def uncommitted_paths(repo: Repo, workdir: Path) -> list[str]:
    """The paths whose working-tree file differs from the index or is not in it.

    Files are compared by size and modification time, as ``git status`` does, so only
    changed files are read; temporary files of :func:`~loopact.memory._fs.atomic_write`,
    anything that is not a file or a link, and the ``.git`` folder are skipped. Index entries
    whose file is gone are included (to be unstaged). Used at open to commit what an earlier
    run wrote but could not commit (a lock, a crash), and the files of a folder that lost its
    ``.git``.
    """
    index = repo.open_index()
    known: dict[str, Any] = {p.decode("utf-8", "surrogateescape"): index[p] for p in index}
    out: list[str] = []
    seen: set[str] = set()
    for root, dirs, files in os.walk(workdir):
        dirs[:] = sorted(d for d in dirs if not (root == str(workdir) and d == ".git"))
        for name in sorted(files):
            if TEMP_MARKER in name:
                continue
            full = Path(root) / name
            rel = full.relative_to(workdir).as_posix()
            seen.add(rel)
            entry = known.get(rel)
            try:
                st = full.lstat()
            except OSError:
                continue
            if not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
                continue  # a FIFO or socket: Git does not store it (and opening may block)
            if entry is None or entry.size != st.st_size or _mtime(entry) != _mtime_of(st):
                out.append(rel)
    out += [p for p in known if p not in seen]
    return out


def _mtime(entry: Any) -> tuple[int, int]:
    mtime = entry.mtime
    if isinstance(mtime, tuple):
        return int(mtime[0]), int(mtime[1])
    return int(mtime), 0


def _mtime_of(st: os.stat_result) -> tuple[int, int]:
    return int(st.st_mtime_ns // 1_000_000_000), int(st.st_mtime_ns % 1_000_000_000)


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
    config = _commit_config()
    if paths:
        wt.stage(sorted(set(paths)), config=config)
    current = head(repo)
    if not merge_heads and current is not None:
        tree = repo.open_index(config=config).commit(repo.object_store)
        if tree == repo[current].tree:  # type: ignore[attr-defined]
            return None
    commit_id: bytes = wt.commit(
        message=message.encode(),
        author=author,
        committer=author,
        ref=BRANCH,
        merge_heads=_ids(merge_heads) if merge_heads else None,
        no_verify=True,
        sign=False,
        signoff=False,
        config=config,
    )
    return commit_id


def fetch(repo: Repo, remote: str) -> bytes | None:
    """Fetch the remote's objects; return its ``main`` commit id (None if it has none).

    dulwich reads a local remote's refs *after* copying its objects, so a push by another
    robot in between reports a ``main`` whose objects did not come along; the fetch is then
    repeated (up to :data:`_FETCH_TRIES` times).

    Raises:
        PushRejected: The remote kept moving during every try (the sync retries).
    """
    for _ in range(_FETCH_TRIES):
        result = porcelain.fetch(
            repo, remote, outstream=io.StringIO(), errstream=io.BytesIO(), quiet=True
        )
        found = (result.refs or {}).get(BRANCH)
        if found is None:
            return None
        if found in repo.object_store:
            return bytes(found)
    raise PushRejected("the remote moved while it was fetched")


def push(repo: Repo, remote: str) -> None:
    """Push ``main`` to the remote's ``main`` if that is a fast-forward.

    The remote's current ``main`` must be an ancestor of ours (checked with
    :func:`is_ancestor`); the remote's ref is then moved with a compare-and-swap, so a push
    that races another robot's is rejected, never lost.

    Raises:
        PushRejected: The remote's ``main`` is not an ancestor of ours any more.
    """
    client, path = get_transport_and_path(remote, config=repo.get_config_stack())
    local = head(repo)
    if local is None:
        return

    def update_refs(refs: dict[Ref, ObjectID]) -> dict[Ref, ObjectID]:
        current = refs.get(BRANCH)
        if (
            current is not None
            and current not in (local, ZERO_SHA)
            and (current not in repo.object_store or not is_ancestor(repo, current, local))
        ):
            raise PushRejected(f"the remote's main {current.decode()[:7]} is not ours")
        return {BRANCH: cast("ObjectID", local)}

    def pack_data(
        have: AbstractSet[ObjectID],
        want: AbstractSet[ObjectID],
        *,
        ofs_delta: bool = False,
        progress: Callable[..., None] | None = None,
    ) -> tuple[int, Iterator[UnpackedObject]]:
        return repo.generate_pack_data(set(have), set(want), progress=progress, ofs_delta=ofs_delta)

    try:
        result = client.send_pack(path.encode(), update_refs, generate_pack_data=pack_data)
    except FileLocked as exc:  # another robot is updating the same ref right now
        raise PushRejected(f"remote ref locked: {exc}") from None
    for ref, error in (result.ref_status or {}).items():
        if error is not None:
            raise PushRejected(f"{ref!r}: {error}")


def mark_synced(repo: Repo, commit_id: bytes | None) -> None:
    """Remember ``commit_id`` as what the remote holds now (:data:`SYNCED`)."""
    if commit_id is not None:
        repo.refs[SYNCED] = cast("ObjectID", commit_id)


def unsynced_count(repo: Repo) -> int:
    """How many commits of ``main`` the remote did not have at the last successful sync
    (all of them when it never synced): what waits to be pushed."""
    local = head(repo)
    if local is None:
        return 0
    synced = repo.refs.as_dict().get(SYNCED)
    exclude = [synced] if synced is not None and synced in repo else []
    return sum(1 for _ in repo.get_walker(include=[cast("ObjectID", local)], exclude=exclude))


def is_ancestor(repo: Repo, ancestor: bytes, descendant: bytes) -> bool:
    """True when ``ancestor`` is ``descendant`` or one of its ancestors.

    Walks the parents of ``descendant``. dulwich's ``can_fast_forward`` and
    ``find_merge_base`` order commits by commit time and break ties by object id, and miss
    an ancestor whose commit time equals its descendants' (seen with memory commits made
    within one second), so they are not used for this decision.
    """
    if ancestor == descendant:
        return True
    seen: set[bytes] = {descendant}
    todo = [descendant]
    while todo:
        commit = repo[todo.pop()]
        for parent in getattr(commit, "parents", ()):
            if parent == ancestor:
                return True
            if parent not in seen:
                seen.add(parent)
                todo.append(parent)
    return False


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
            repo.get_worktree().stage(changed, config=_commit_config())
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
