"""Pure merge rules for shared memory files (SPEC E2)."""

from __future__ import annotations

from loopact.memory.merge import (
    conflict_path,
    is_template_only,
    merge_diary,
    merge_file,
    merge_line_set,
)

HEAD = "# Diary 2026-11-30 (UTC)\n\n"


def test_diary_union_orders_by_time_and_keeps_multiline_entries() -> None:
    base = HEAD + "- [a 08:00:00] start\n"
    local = base + "- [a 09:00:00] local one\n  second line\n- [a 11:00:00] local two\n"
    remote = base + "- [b 10:00:00] remote one\n"
    merged = merge_diary(local, remote)
    assert merged == (
        HEAD + "- [a 08:00:00] start\n"
        "- [a 09:00:00] local one\n  second line\n"
        "- [b 10:00:00] remote one\n"
        "- [a 11:00:00] local two\n"
    )
    # Merging again with either side changes nothing (idempotent, no duplicates).
    assert merge_diary(merged, remote) == merged
    assert merge_diary(merged, local) == merged


def test_diary_union_keeps_repeated_identical_entries() -> None:
    local = HEAD + "- [a 09:00:00] beep\n- [a 09:00:00] beep\n"
    remote = HEAD + "- [a 09:00:00] beep\n- [b 09:00:00] boop\n"
    merged = merge_diary(local, remote)
    assert merged.count("] beep") == 2 and merged.count("] boop") == 1


def test_line_set_three_way_keeps_additions_and_deletions() -> None:
    base = "# Facts\n\n- one\n- two\n"
    local = "# Facts\n\n- one\n- three\n"  # deleted two, added three
    remote = "# Facts\n\n- one\n- two\n- four\n"  # added four
    assert merge_line_set(local, remote, base) == "# Facts\n\n- one\n- three\n- four\n"


def test_other_files_keep_local_and_remote_copy_beside() -> None:
    out = merge_file("RULE.md", b"# Rules\nlocal\n", b"# Rules\nremote\n", b"# Rules\n")
    side = conflict_path("RULE.md", b"# Rules\nremote\n")
    assert out == {"RULE.md": b"# Rules\nlocal\n", side: b"# Rules\nremote\n"}
    assert side.startswith("RULE.conflict-") and side.endswith(".md")
    # A side that holds only the template loses to real content.
    template = b"# Rules\n\n<!-- one per line -->\n"
    assert is_template_only(template.decode())
    assert merge_file("RULE.md", template, b"# Rules\nreal\n", None) == {
        "RULE.md": b"# Rules\nreal\n"
    }
    # Deleted on one side, changed on the other: the changed version survives.
    assert merge_file("WORLD.md", None, b"x\n", b"y\n") == {"WORLD.md": b"x\n"}
