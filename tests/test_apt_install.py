"""scripts/apt-install.sh waits for a busy apt instead of failing at once.

A stand-in ``apt-get`` first in ``PATH`` answers the way apt 2.6 does while another process
holds a lock (measured: ``apt-get update`` exits 100 with "Could not get lock
/var/lib/apt/lists/lock" and does not honour ``DPkg::Lock::Timeout``), then succeeds; the
script must retry it, pass the dpkg lock timeout to ``install``, and name the command that
failed when apt keeps failing.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "apt-install.sh"

FAKE_APT = """#!/usr/bin/env bash
echo "$*" >> "$APT_LOG"
n=$(grep -c update "$APT_LOG" || true)
want="-o DPkg::Lock::Timeout=$LOOPACT_APT_LOCK_WAIT_S -o Acquire::Retries=3"
if [ "$1 $2 $3 $4" != "$want" ]; then
  echo "E: unexpected options: $*" >&2; exit 99
fi
case "$5" in
  update) if [ "$n" -le "$BUSY_UPDATES" ]; then
      echo "E: Could not get lock /var/lib/apt/lists/lock. It is held by process 42 (apt-get)" >&2
      exit 100; fi ;;
  install) [ -z "$FAIL_INSTALL" ] || { echo "E: Unable to locate package $9" >&2; exit 100; } ;;
esac
"""


def _run(
    tmp_path: Path, busy: int, wait_s: int, fail_install: bool = False
) -> tuple[int, str, str]:
    """Run the script with the stand-in apt; (exit code, its output, the apt calls)."""
    if os.geteuid() != 0:
        pytest.skip("the script needs root or sudo; the stand-in apt-get does not")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    fake = bin_dir / "apt-get"
    fake.write_text(FAKE_APT)
    fake.chmod(0o755)
    (bin_dir / "sleep").write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "sleep").chmod(0o755)
    log = tmp_path / "apt.log"
    log.write_text("")
    env = dict(
        os.environ,
        PATH=f"{bin_dir}:{os.environ['PATH']}",
        APT_LOG=str(log),
        BUSY_UPDATES=str(busy),
        LOOPACT_APT_LOCK_WAIT_S=str(wait_s),
        FAIL_INSTALL="1" if fail_install else "",
    )
    p = subprocess.run(
        ["bash", str(SCRIPT), "--no-install-recommends", "chromium"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return p.returncode, p.stdout + p.stderr, log.read_text()


def test_waits_while_the_lists_lock_is_held(tmp_path: Path) -> None:
    rc, out, calls = _run(tmp_path, busy=2, wait_s=600)
    assert rc == 0, out
    assert "apt is busy" in out and out.count("apt is busy") == 1
    lines = calls.splitlines()
    assert [line.split()[4] for line in lines] == ["update", "update", "update", "install"]
    assert lines[-1].endswith("install -y -qq --no-install-recommends chromium")


def test_gives_up_after_the_wait_and_names_the_command(tmp_path: Path) -> None:
    rc, out, calls = _run(tmp_path, busy=100, wait_s=6)
    assert rc == 100
    assert "Could not get lock" in out and "'apt-get update' failed (exit 100)" in out
    assert "install" not in calls  # nothing installed from stale lists


def test_a_failed_install_names_the_packages(tmp_path: Path) -> None:
    rc, out, _ = _run(tmp_path, busy=0, wait_s=600, fail_install=True)
    assert rc == 100
    assert "'apt-get install chromium' failed (exit 100)" in out
