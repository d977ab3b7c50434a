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
import logging
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import platformdirs
from dulwich.repo import Repo

from loopact._compat import wait_within
from loopact.errors import PushRejected
from loopact.llm.messages import Message
from loopact.memory import _git
from loopact.memory._commits import CommitQueue
from loopact.memory._fs import TEMP_MARKER, atomic_write, remove_file
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
from loopact.memory.merge import is_template_only
from loopact.memory.snapshot import (
    SNAPSHOT_DIR,
    build_snapshot,
    names_to_prune,
    snapshot_name,
)
from loopact.tools.blocking import BlockingExecutor

log = logging.getLogger(__name__)

_MACHINE_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_COMMENT_RE = re.compile(r"<!--.*?-->", re.DOTALL)

#: The rule files, in system-prompt order, with their templates (SPEC E2).
RULE_FILES: dict[str, str] = {
    "RULE.md": "# Rules\n\n<!-- Rules the agent always follows (safety, etiquette), "
    "one per line. -->\n",
    "MASTER.md": "# Master\n\n<!-- Who the agent serves: names, roles, how to address them. -->\n",
    "METHOD.md": "# Methods\n\n<!-- How to do recurring jobs well: methods that worked, "
    "mistakes to avoid. -->\n",
    "WORLD.md": "# World\n\n<!-- Facts about the site: rooms, waypoints, where things are "
    "kept. -->\n",
}

__all__ = ["RULE_FILES", "GitMemory", "MemoryItem", "SyncResult", "default_memory_dir"]


@dataclass(frozen=True)
class SyncResult:
    """What :meth:`GitMemory.sync` did.

    Attributes:
        ok: True when the remote now holds our history.
        integration: ``"none"``, ``"fast_forward"`` or ``"merged"``.
        pushed: True when a push was made.
        conflicts: Conflict copies written (remote versions kept beside local files).
        error: Why the sync failed, when ``ok`` is False.
    """

    ok: bool
    integration: str = "none"
    pushed: bool = False
    conflicts: tuple[str, ...] = ()
    error: str | None = None


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
        self._last_error: str | None = None
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

        A remote that cannot be reached is logged and skipped (the memory works offline).
        """
        if self._repo is not None:
            return
        self._repo = await self._blocking.run(_git.open_repo, self.path)
        self._commits = CommitQueue(self._repo, self._blocking, self.machine_id, self._author)
        if self.remote is not None:
            result = await self.sync()
            if not result.ok:
                log.warning("memory remote not synced at open: %s", result.error)
        async with self._fs_lock:
            for name, template in {**RULE_FILES, ".gitignore": f"*{TEMP_MARKER}*\n"}.items():
                if not (self.path / name).exists():
                    await self._blocking.run(atomic_write, self.path / name, template.encode())
                    self._enqueue(name, f"create {name}")
        await self._reload_prompt_texts()

    async def _reload_prompt_texts(self) -> None:
        self._rules = await self._blocking.run(self._read_rules)
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
        """Why the last commit or sync failed, or None."""
        return self._last_error or (self._commits.last_error if self._commits else None)

    async def flush(self, timeout_s: float = 30.0) -> None:
        """Wait until every write made before this call is committed.

        Raises:
            asyncio.TimeoutError: The commits did not finish within ``timeout_s`` seconds.
        """
        await self._queue().flush(timeout_s)

    # ----------------------------------------------------------------- writes

    async def _write(self, relpath: str, data: bytes, message: str) -> None:
        await self._blocking.run(atomic_write, self.path / relpath, data)
        self._enqueue(relpath, message)

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
        """
        self._need_repo()
        if not text.strip():
            raise ValueError("diary text must not be empty")
        when = _utc(when)
        rel = f"diaries/{when:%Y%m%d}.md"
        lines = [ln.rstrip() for ln in text.strip().splitlines() if ln.strip()]
        entry = f"- [{self.machine_id} {when:%H:%M:%S}] {lines[0]}\n"
        entry += "".join(f"  {ln.strip()}\n" for ln in lines[1:])
        async with self._fs_lock:
            old = await self._blocking.run(self._read, rel)
            if not old:
                old = f"# Diary {when:%Y-%m-%d} (UTC)\n\n"
            elif not old.endswith("\n"):
                old += "\n"
            await self._write(rel, (old + entry).encode(), f"diary: {lines[0][:60]}")
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
        )
        async with self._fs_lock:
            await self._write(rel, data, f"snapshot round {round_no}")
            names = await self._blocking.run(_list_names, self.path / folder)
            for name in names_to_prune(names, self.snapshot_retention):
                await self._blocking.run(remove_file, self.path / folder / name)
                self._enqueue(f"{folder}/{name}", f"snapshot round {round_no}")
        return rel

    async def remember(self, text: str, kind: Kind = "fact") -> bool:
        """Store a fact or a preference the user stated (SPEC E4).

        Written as ``- [YYYY-MM-DD machine] text`` to ``facts.md`` or ``preferences.md``.
        Remembering the same text again changes nothing.

        Args:
            text: The fact, one line (newlines are joined with spaces).
            kind: ``"fact"`` or ``"preference"``.

        Returns:
            True if it was added, False if it was already there.

        Raises:
            ValueError: Empty text or an unknown kind.
        """
        self._need_repo()
        if kind not in FACT_FILES:
            raise ValueError(f"kind must be one of {sorted(FACT_FILES)}, not {kind!r}")
        line = one_line(text)
        if not line:
            raise ValueError("nothing to remember: the text is empty")
        rel = FACT_FILES[kind]
        async with self._fs_lock:
            old = await self._blocking.run(self._read, rel)
            today = datetime.now(timezone.utc).strftime("%Y-%m-%d")
            new = add_item(old, kind, line, today, self.machine_id)
            if new is None:
                return False
            await self._write(rel, new.encode(), f"remember {kind}: {line[:60]}")
        if kind == "preference":
            await self._reload_prompt_texts()
        return True

    # ----------------------------------------------------------------- reads

    def _read(self, relpath: str) -> str:
        try:
            return (self.path / relpath).read_text(encoding="utf-8")
        except FileNotFoundError:
            return ""

    def _read_rules(self) -> str:
        sections = []
        for name in RULE_FILES:
            text = self._read(name)
            if is_template_only(text):
                continue
            body = _COMMENT_RE.sub("", text).strip()
            lines = body.splitlines()
            if lines and lines[0].startswith("# "):
                body = "\n".join(lines[1:]).strip()
            sections.append(f"## {name}\n{body}")
        return "\n\n".join(sections)

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

    async def sync(self) -> SyncResult:
        """Pull from the remote, merge, and push (SPEC E2); never raises.

        Pending writes are committed first. If the remote moved between our fetch and our
        push (another robot pushed), the fetch-merge-push is retried up to 5 times.
        """
        if self.remote is None:
            return SyncResult(ok=False, error="no remote configured")
        repo = self._need_repo()
        remote = self.remote
        if "://" not in remote and not remote.startswith("git@"):
            remote = str(Path(remote).expanduser().absolute())  # noqa: ASYNC240 (no I/O)
        kind, pushed = "none", False
        conflicts: tuple[str, ...] = ()
        commits = self._queue()
        async with commits.git_lock:
            for attempt in range(5):
                try:
                    remote_head = await wait_within(
                        self._blocking.run(_git.fetch, repo, remote), self.sync_timeout_s
                    )
                    async with self._fs_lock:
                        await commits.commit_pending()
                        result = await self._blocking.run(
                            _git.integrate, repo, self.path, remote_head, self._author
                        )
                    if result.kind != "none":
                        kind, conflicts = result.kind, result.conflicts
                        await self._reload_prompt_texts()
                    local = _git.head(repo)
                    if local is not None and local != remote_head:
                        await wait_within(
                            self._blocking.run(_git.push, repo, remote), self.sync_timeout_s
                        )
                        pushed = True
                    return SyncResult(True, kind, pushed, conflicts)
                except PushRejected as exc:
                    log.info("memory push rejected (attempt %d): %s", attempt + 1, exc)
                    # Back off a little, jittered, so two robots do not collide again.
                    await asyncio.sleep(random.uniform(0.05, 0.2) * (attempt + 1))
                    continue
                except Exception as exc:
                    self._last_error = f"sync failed: {exc!r}"
                    log.warning("memory sync with %s failed: %r", self.remote, exc)
                    return SyncResult(False, kind, pushed, conflicts, self._last_error)
        return SyncResult(False, kind, pushed, conflicts, "remote kept moving; gave up")


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
