"""Git-backed long-term memory (SPEC E2, E4): rule files, diaries, snapshots, facts."""

from loopact.memory.items import MemoryItem
from loopact.memory.store import GitMemory, default_memory_dir
from loopact.memory.sync import SyncResult
from loopact.memory.syncer import MemorySyncer
from loopact.memory.tools import make_memory_tools, make_sync_tool

__all__ = [
    "GitMemory",
    "MemoryItem",
    "MemorySyncer",
    "SyncResult",
    "default_memory_dir",
    "make_memory_tools",
    "make_sync_tool",
]
