"""Git-backed long-term memory (SPEC E2, E4).

The memory folder is a Git repository (dulwich, no ``git`` binary needed)::

    RULE.md  MASTER.md  METHOD.md  WORLD.md   rule files for the system prompt
    diaries/YYYYMMDD.md                       one diary per UTC day, append-only
    facts.md  preferences.md                  what the user told the agent (remember/recall)
    snapshots/<machine_id>/<ts>-rNNNNN.json   per-round context snapshots, pruned
    skills/*.md                               the user's skills (SPEC E3)

Every write is atomic (temp file in the same folder, fsync, rename) and returns as soon as the
file is in place; a background worker commits the changed paths shortly after, off the
caller's critical path. :meth:`GitMemory.flush` waits for pending commits and
:meth:`GitMemory.close` flushes. With a remote, :meth:`GitMemory.sync` fetches, merges (see
:mod:`loopact.memory.merge`: diaries are unioned, nothing is lost) and pushes.

Example::

    mem = GitMemory(Path("~/.local/share/loopact/memory").expanduser(), machine_id="robot-1")
    await mem.open()
    system_prompt += mem.rules_text()
    await mem.append_diary("Patrolled the lab; the door was open.")
    await mem.close()
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import re
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TypeVar

import platformdirs
from dulwich.repo import Repo

from loopact.errors import MemoryRepoError
from loopact.llm.messages import Message
from loopact.memory import _git
from loopact.memory._commits import CommitQueue
from loopact.memory._faults import Health, describe, read_only_text
from loopact.memory._fs import TEMP_MARKER, atomic_write, remove_file
from loopact.memory._lock import repo_lock
from loopact.memory.items import (
    FACT_FILES,
    MAX_PROMPT_PREFS,
    Kind,
    MemoryItem,
    add_item,
    one_line,
    parse_items,
    rank,
)
from loopact.memory.rules import RULE_FILES, rules_prompt_text
from loopact.memory.snapshot import (
    SNAPSHOT_DIR,
    build_snapshot,
    names_to_prune,
    snapshot_name,
)
from loopact.memory.sync import SyncResult, fetch_merge_push, remote_url
from loopact.redact import Redactor
from loopact.tools.blocking import BlockingExecutor

log = logging.getLogger(__name__)

_MACHINE_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_SURROGATE_RE = re.compile("[\ud800-\udfff]")
_T = TypeVar("_T")

__all__ = ["RULE_FILES", "GitMemory", "MemoryItem", "SyncResult", "default_memory_dir"]


def default_memory_dir() -> Path:
    """The default memory folder: ``<user data folder>/loopact/memory`` (platformdirs)."""
    return Path(platformdirs.user_data_path("loopact")) / "memory"


class GitMemory:
    """A memory folder that is a Git repository, shared through an optional remote.

    Args:
        path: The memory folder (created if missing).
        machine_id: This robot's id (``[A-Za-z0-9_.-]``, at most 64 chars); prefixes diary
            entries, names the snapshot subfolder and the commit author.
        remote: A Git URL or the path of a (bare) repository to sync with, or None.
        snapshot_retention: How many snapshots of this machine to keep (newest).
        snapshot_max_bytes: Size cap of one snapshot, in bytes.
        sync_timeout_s: Time limit of one fetch or push, in seconds.
        redactor: Masks known secrets (API keys, tokens) in everything written: facts,
            diary entries, snapshots and commit messages (SPEC H6); None masks nothing.

    Raises:
        ValueError: ``machine_id`` is not usable as a folder name.
    """

    def __init__(
        self,
        path: Path,
        machine_id: str,
        remote: str | None = None,
        snapshot_retention: int = 200,
        snapshot_max_bytes: int = 2_000_000,
        sync_timeout_s: float = 60.0,
        redactor: Redactor | None = None,
    ) -> None:
        if not _MACHINE_RE.match(machine_id):
            raise ValueError(
                f"machine_id {machine_id!r} must be 1-64 characters of letters, digits, "
                "'_', '.' or '-'"
            )
        self.path = Path(path).expanduser()
        self.machine_id = machine_id
        self.remote = remote
        self.snapshot_retention = snapshot_retention
        self.snapshot_max_bytes = snapshot_max_bytes
        self.sync_timeout_s = sync_timeout_s
        # Git and file work on daemon threads: a fetch or push that hangs past its timeout is
        # abandoned there; on asyncio's default pool it blocked exit for good (issue 22).
        self._blocking = BlockingExecutor(max_workers=4, max_stuck=16, name="loopact-memory")
        self.redactor = redactor or Redactor()
        self._health = Health(self.path)
        self._sync_error: str | None = None
        self._author = f"loopact {machine_id} <{machine_id}@loopact.invalid>".encode()
        self._repo: Repo | None = None
        self._commits: CommitQueue | None = None
        self._fs_lock = asyncio.Lock()
        self._rules = ""
        self._preferences = ""
        self._preference_items: list[MemoryItem] = []

    # ----------------------------------------------------------------- life cycle

    async def open(self) -> None:
        """Create or open the repository, pull from the remote, add missing rule files.

        What an earlier run wrote but did not commit is committed first (a folder that lost
        its ``.git`` gets a new history holding its files). A remote that cannot be reached
        is logged and skipped (the memory works offline). A read-only folder is said once
        (a warning); it is still read, so rules and preferences apply.

        Raises:
            MemoryRepoError: The repository cannot be opened or created, or it is damaged
                (the message names the folder and the fix); nothing in it is changed.
        """
        if self._repo is not None:
            return
        try:
            had_files, repo = await self._blocking.run(_git.open_or_create, self.path)
        except OSError as exc:
            raise MemoryRepoError(
                f"cannot open or create the memory repository in {self.path}: "
                f"{describe(exc, self.path)}"
            ) from None
        self._repo = repo
        self._commits = CommitQueue(
            repo, self.path, self._blocking, self.machine_id, self._author, self._health
        )
        writable = await self._blocking.run(_writable, self.path)
        if not writable:
            self._health.failed(read_only_text(self.path))
        else:
            await self._recover(had_files)
        if self.remote is not None:
            result = await self.sync()
            if not result.ok:
                log.warning("memory remote not synced at open: %s", result.error)
        if writable:
            await self._create_missing_files()
        await self._reload_prompt_texts()

    async def _recover(self, had_files: bool) -> None:
        """Commit what an earlier run left uncommitted; a failure is said, never raised."""
        assert self._commits is not None
        try:
            paths = await self._commits.recover()
        except Exception as exc:
            self._health.failed(exc)
            return
        if had_files:
            log.warning(
                "memory folder %s had no Git repository: started a new one holding its %d files",
                self.path,
                len(paths),
            )
        elif paths:
            log.info("memory: committed %d file(s) left uncommitted: %s", len(paths), paths[:5])

    async def _create_missing_files(self) -> None:
        files = {**RULE_FILES, ".gitignore": f"*{TEMP_MARKER}*\n"}

        def create(name: str) -> Callable[[str | None], str | None]:
            return lambda old: files[name] if old is None else None

        async with self._fs_lock:
            for name in files:
                if not (self.path / name).exists():
                    try:
                        await self._update(name, create(name), f"create {name}")
                    except MemoryRepoError:
                        return  # said by _update; the memory is read as it is

    async def _reload_prompt_texts(self) -> None:
        self._rules = await self._blocking.run(rules_prompt_text, self._read)
        prefs = parse_items(
            await self._blocking.run(self._read, FACT_FILES["preference"]), "preference"
        )
        self._preference_items = prefs[-MAX_PROMPT_PREFS:]
        self._preferences = "\n".join(f"- {i.text}" for i in self._preference_items)

    async def close(self) -> None:
        """Flush pending commits, stop the worker and close the repository."""
        if self._repo is None:
            return
        try:
            await self.flush()
        finally:
            if self._commits is not None:
                await self._commits.stop()
                self._commits = None
            self._repo.close()
            self._repo = None

    async def __aenter__(self) -> GitMemory:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _need_repo(self) -> Repo:
        if self._repo is None:
            raise RuntimeError("GitMemory is not open: await mem.open() first")
        return self._repo

    def _queue(self) -> CommitQueue:
        self._need_repo()
        assert self._commits is not None
        return self._commits

    def _enqueue(self, relpath: str, message: str) -> None:
        self._queue().enqueue(relpath, message)

    @property
    def last_error(self) -> str | None:
        """The memory's current problem (a failed write or commit, a failed sync), or None.

        A write or commit problem is forgotten once a commit goes through again.
        """
        return self._health.last_error or self._sync_error

    async def flush(self, timeout_s: float = 30.0) -> None:
        """Wait until every write made before this call is committed.

        Raises:
            asyncio.TimeoutError: The commits did not finish within ``timeout_s`` seconds.
        """
        await self._queue().flush(timeout_s)

    # ----------------------------------------------------------------- writes

    async def _update(
        self, relpath: str, change: Callable[[str | None], str | None], message: str
    ) -> bool:
        """Read ``relpath`` (None when missing), write ``change(old)`` unless it is None, and
        queue its commit; under the folder's cross-process lock, so another agent's write in
        between is never lost (:mod:`loopact.memory._lock`). Returns whether it wrote.

        Raises:
            MemoryRepoError: The file cannot be read or written (the message says why and
                names the folder); the problem is also said once as a warning.
        """
        target = self.path / relpath

        def work() -> bool:
            try:
                old: str | None = target.read_text(encoding="utf-8")
            except FileNotFoundError:
                old = None
            except UnicodeDecodeError:
                raise MemoryRepoError(
                    f"memory file {target} is not UTF-8 text, so nothing was added to it; "
                    "fix or remove the bad bytes"
                ) from None
            new = change(old)
            if new is None:
                return False
            atomic_write(target, new.encode("utf-8"))
            return True

        wrote = await self._locked(work)
        if wrote:
            self._enqueue(relpath, self._mask(message))
        return wrote

    async def _write(self, relpath: str, data: bytes, message: str) -> None:
        """Write ``relpath`` whole (atomic, under the folder's lock) and queue its commit."""
        await self._locked(lambda: atomic_write(self.path / relpath, data))
        self._enqueue(relpath, self._mask(message))

    async def _locked(self, work: Callable[[], _T]) -> _T:
        """Run ``work`` on a worker thread holding the folder's cross-process lock.

        Raises:
            MemoryRepoError: It failed on the file system (the message says why, naming the
                folder; the problem is also said once as a warning).
        """

        def locked() -> _T:
            with repo_lock(self.path):
                return work()

        try:
            return await self._blocking.run(locked)
        except (OSError, MemoryRepoError) as exc:
            raise MemoryRepoError(self._health.failed(exc)) from None

    def _mask(self, text: str) -> str:
        """``text`` with known secrets masked and lone surrogates replaced (U+FFFD)."""
        return self.redactor.text(_valid_unicode(text))

    async def append_diary(self, text: str, when: datetime | None = None) -> str:
        """Append an entry to today's diary ``diaries/YYYYMMDD.md`` (SPEC E2).

        The entry is ``- [machine-id HH:MM:SS] text`` (UTC); further lines of ``text`` are
        indented under it.

        Args:
            text: What happened (non-empty).
            when: The entry's time; default now. Naive datetimes are taken as UTC.

        Returns:
            The repository path of the diary written.

        Raises:
            ValueError: ``text`` is empty.
            MemoryRepoError: The diary cannot be written (read-only, busy, full).
        """
        self._need_repo()
        if not text.strip():
            raise ValueError("diary text must not be empty")
        when = _utc(when)
        rel = f"diaries/{when:%Y%m%d}.md"
        lines = [ln.rstrip() for ln in self._mask(text).strip().splitlines() if ln.strip()]
        entry = f"- [{self.machine_id} {when:%H:%M:%S}] {lines[0]}\n"
        entry += "".join(f"  {ln.strip()}\n" for ln in lines[1:])

        def append(old: str | None) -> str:
            if not old:
                old = f"# Diary {when:%Y-%m-%d} (UTC)\n\n"
            elif not old.endswith("\n"):
                old += "\n"
            return old + entry

        async with self._fs_lock:
            await self._update(rel, append, f"diary: {lines[0][:60]}")
        return rel

    async def snapshot(
        self, round_no: int, messages: Sequence[Message], when: datetime | None = None
    ) -> str:
        """Write this round's context as ``snapshots/<machine>/<ts>-rNNNNN.json`` (SPEC E2).

        Images are replaced by their hash; the document is capped at ``snapshot_max_bytes``
        (see :mod:`loopact.memory.snapshot`); this machine's snapshots beyond
        ``snapshot_retention`` are deleted, oldest first.

        Returns:
            The repository path written.

        Raises:
            MemoryRepoError: The snapshot cannot be written (read-only, busy, full).
        """
        self._need_repo()
        when = _utc(when)
        folder = f"{SNAPSHOT_DIR}/{self.machine_id}"
        rel = f"{folder}/{snapshot_name(when, round_no)}"
        data = await self._blocking.run(
            build_snapshot,
            round_no,
            list(messages),
            self.machine_id,
            when,
            self.snapshot_max_bytes,
            self.redactor.value,
        )
        target = self.path / folder

        def work() -> list[str]:
            atomic_write(self.path / rel, data)
            pruned = names_to_prune(_list_names(target), self.snapshot_retention)
            for name in pruned:
                remove_file(target / name)
            return pruned

        async with self._fs_lock:
            pruned = await self._locked(work)
        for path in [rel, *(f"{folder}/{name}" for name in pruned)]:
            self._enqueue(path, f"snapshot round {round_no}")
        return rel

    async def remember(self, text: str, kind: Kind = "fact") -> bool:
        """Store a fact or a preference the user stated (SPEC E4).

        Written as ``- [YYYY-MM-DD machine] text`` to ``facts.md`` or ``preferences.md``.
        Remembering the same text again changes nothing. Known secrets in ``text`` are
        stored as ``***`` (:attr:`redactor`).

        Args:
            text: The fact, one line (newlines are joined with spaces).
            kind: ``"fact"`` or ``"preference"``.

        Returns:
            True if it was added, False if it was already there.

        Raises:
            ValueError: Empty text or an unknown kind.
            MemoryRepoError: The file cannot be written (read-only, busy, full).
        """
        self._need_repo()
        if kind not in FACT_FILES:
            raise ValueError(f"kind must be one of {sorted(FACT_FILES)}, not {kind!r}")
        line = one_line(self._mask(text))
        if not line:
            raise ValueError("nothing to remember: the text is empty")
        rel = FACT_FILES[kind]
        today = datetime.now(timezone.utc).strftime("%Y-%m-%d")

        def add(old: str | None) -> str | None:
            return add_item(old or "", kind, line, today, self.machine_id)

        async with self._fs_lock:
            if not await self._update(rel, add, f"remember {kind}: {line[:60]}"):
                return False
        if kind == "preference":
            await self._reload_prompt_texts()
        return True

    # ----------------------------------------------------------------- reads

    def _read(self, relpath: str) -> str:
        """A memory file's text ("" when missing; bytes that are not UTF-8 read as U+FFFD)."""
        try:
            return (self.path / relpath).read_text(encoding="utf-8", errors="replace")
        except (FileNotFoundError, NotADirectoryError):
            return ""

    def rules_text(self) -> str:
        """The rule files' contents for the system prompt, each under a ``## NAME`` heading.

        Files holding only their template are skipped; comments are removed. Read at
        :meth:`open` (and after a sync that changed them).
        """
        return self._rules

    def preference_items(self) -> list[MemoryItem]:
        """The remembered preferences for the system prompt (newest 30, oldest first; E4).

        Kept current by :meth:`remember` and :meth:`sync`. The prompt labels them as what the
        user said, not as instructions (:func:`loopact.agent.prompt.preferences_section`).
        """
        return list(self._preference_items)

    def preferences_text(self) -> str:
        """The remembered preferences (newest 30) as ``- text`` lines for the system prompt.

        Empty when there are none. Kept current by :meth:`remember` and :meth:`sync` (E4).
        """
        return self._preferences

    async def items(self) -> list[MemoryItem]:
        """Every remembered preference and fact, preferences first, oldest first."""
        out: list[MemoryItem] = []
        for kind in ("preference", "fact"):
            text = await self._blocking.run(self._read, FACT_FILES[kind])
            out.extend(parse_items(text, kind))
        return out

    async def recall(self, query: str, limit: int = 5) -> list[MemoryItem]:
        """Find remembered items that match ``query`` (SPEC E4).

        Matching is by shared words (case-insensitive, plural ``s`` ignored, CJK by
        character) plus a bonus when the whole query occurs in the item. An empty query
        returns the newest items.

        Args:
            query: Words to look for.
            limit: At most this many items, best first (newest first among equals).
        """
        return rank(await self.items(), query, limit)

    # ----------------------------------------------------------------- remote

    async def unsynced_commits(self) -> int:
        """Local commits the remote did not have at the last successful sync (SPEC E2): what
        waits to be pushed while the remote cannot be reached (all, before a first sync)."""
        return await self._blocking.run(_git.unsynced_count, self._need_repo())

    async def sync(self) -> SyncResult:
        """Pull from the remote, merge, and push (SPEC E2); never raises.

        Pending writes are committed first. If the remote moved between our fetch and our
        push (another robot pushed), the fetch-merge-push is retried up to 5 times
        (:func:`loopact.memory.sync.fetch_merge_push`).
        """
        if self.remote is None:
            return SyncResult(ok=False, error="no remote configured")
        repo = self._need_repo()
        commits = self._queue()
        changed = False

        async def integrate(remote_head: bytes | None) -> _git.Integration:
            nonlocal changed
            async with self._fs_lock:
                await commits.commit_pending()
                result = await self._locked(
                    functools.partial(_git.integrate, repo, self.path, remote_head, self._author)
                )
            changed = changed or result.kind != "none"
            return result

        async with commits.git_lock:
            try:
                result = await fetch_merge_push(
                    repo, remote_url(self.remote), self._blocking, integrate, self.sync_timeout_s
                )
            except Exception as exc:
                self._sync_error = f"sync failed: {exc!r}"
                log.warning("memory sync with %s failed: %r", self.remote, exc)
                result = SyncResult(False, error=self._sync_error)
            else:
                self._sync_error = result.error
        if changed:
            await self._reload_prompt_texts()
        return result


def _utc(when: datetime | None) -> datetime:
    if when is None:
        return datetime.now(timezone.utc)
    if when.tzinfo is None:
        return when.replace(tzinfo=timezone.utc)
    return when.astimezone(timezone.utc)


def _list_names(folder: Path) -> list[str]:
    try:
        return [p.name for p in folder.iterdir() if p.is_file() and TEMP_MARKER not in p.name]
    except FileNotFoundError:
        return []


def _writable(folder: Path) -> bool:
    """Whether the memory folder and its ``.git`` can be written (a read-only disk cannot)."""
    return all(os.access(p, os.W_OK) for p in (folder, folder / ".git"))


def _valid_unicode(text: str) -> str:
    """``text`` with lone surrogates (from broken JSON escapes) replaced by U+FFFD."""
    return _SURROGATE_RE.sub("\ufffd", text)
