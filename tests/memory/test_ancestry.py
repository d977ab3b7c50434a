"""Ancestry and push decisions of the memory sync with commits made within one second (E2).

dulwich orders its merge-base search by commit time and breaks ties by object id, so with
equal commit times it sometimes misses that the remote's head is a parent of our merge
commit; the sync then gave up with "remote kept moving" (seen in test_sync under load).
"""

from __future__ import annotations

from pathlib import Path

from dulwich.objects import Commit, Tree
from dulwich.repo import Repo

from loopact.memory import _git


def _commit(repo: Repo, tree: bytes, parents: list[bytes], msg: str) -> bytes:
    c = Commit()
    c.tree = tree
    c.parents = parents
    c.author = c.committer = b"loopact a <a@loopact.invalid>"
    c.commit_time = c.author_time = 1_800_000_000  # all in the same second
    c.commit_timezone = c.author_timezone = 0
    c.message = msg.encode()
    repo.object_store.add_object(c)
    return bytes(c.id)


def _histories(repo: Repo, n: int) -> list[tuple[bytes, bytes]]:
    """``n`` (remote head, our merge of it) pairs: base -> a1 -> a2 and base -> b1 -> b2."""
    tree = Tree()
    repo.object_store.add_object(tree)
    out = []
    for i in range(n):
        base = _commit(repo, tree.id, [], f"base {i}")
        a2 = _commit(repo, tree.id, [_commit(repo, tree.id, [base], f"a1 {i}")], f"a2 {i}")
        b2 = _commit(repo, tree.id, [_commit(repo, tree.id, [base], f"b1 {i}")], f"b2 {i}")
        out.append((b2, _commit(repo, tree.id, [a2, b2], f"merge {i}")))
    return out


def test_parent_with_the_same_commit_time_is_an_ancestor(tmp_path: Path) -> None:
    repo = _git.open_repo(tmp_path / "mem")
    try:
        for remote_head, merge in _histories(repo, 40):
            assert _git.is_ancestor(repo, remote_head, merge)
            assert not _git.is_ancestor(repo, merge, remote_head)
    finally:
        repo.close()


def test_push_of_a_merge_made_in_the_same_second_is_accepted(tmp_path: Path) -> None:
    bare = Repo.init_bare(str(tmp_path / "remote.git"), mkdir=True)
    repo = _git.open_repo(tmp_path / "mem")
    try:
        for remote_head, merge in _histories(repo, 40):
            _copy_history(repo, bare, remote_head)  # the remote has its head; we push a merge
            bare.refs[_git.BRANCH] = remote_head
            repo.refs[_git.BRANCH] = merge
            _git.push(repo, str(tmp_path / "remote.git"))
            assert bare.refs[_git.BRANCH] == merge
    finally:
        repo.close()
        bare.close()


def _copy_history(src: Repo, dst: Repo, sha: bytes) -> None:
    todo = [sha]
    while todo:
        obj = src.object_store[todo.pop()]
        dst.object_store.add_object(obj)
        todo.extend(getattr(obj, "parents", []))
        tree = getattr(obj, "tree", None)
        if tree is not None:
            dst.object_store.add_object(src.object_store[tree])
