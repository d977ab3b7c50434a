#!/usr/bin/env bash
# apt-install.sh [--no-install-recommends] PKG...: the one way loopact's scripts install Debian
# packages (system-deps.sh, install-browser.sh, build-ros2-interfaces.sh).
#
# A fresh cloud VM often has apt busy for its first minutes (unattended-upgrades, cloud-init),
# and two of our own installs may run at once (`make run` in one terminal, `make test` in
# another). apt then fails at once with "Could not get lock /var/lib/dpkg/lock-frontend"
# (exit 100). This waits for the lock instead (up to LOOPACT_APT_LOCK_WAIT_S seconds, default
# 600, printing that it waits), retries downloads, and names what failed when it fails.
# Uses sudo when not root; exits 1 with the command to run when neither is possible.
set -euo pipefail
flags=()
if [ "${1:-}" = "--no-install-recommends" ]; then flags+=(--no-install-recommends); shift; fi
[ $# -gt 0 ] || { echo "apt-install.sh: no packages given" >&2; exit 2; }
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"
  else echo "loopact: please install as root: apt-get install -y $*" >&2; exit 1; fi
fi
wait_s="${LOOPACT_APT_LOCK_WAIT_S:-600}"
opts=(-o "DPkg::Lock::Timeout=$wait_s" -o Acquire::Retries=3)

fail() {  # fail RC WHAT...
  local rc="$1"; shift
  echo "loopact: 'apt-get $*' failed (exit $rc); see its message above. If another apt or" \
    "dpkg is running, wait for it (or raise LOOPACT_APT_LOCK_WAIT_S) and run the command again." >&2
  exit "$rc"
}

# apt-get update does not wait for the lists lock (DPkg::Lock::Timeout covers only dpkg's, as
# measured on apt 2.6): retry it while another process holds that lock.
update() {
  local out rc waited=0
  while :; do
    rc=0; out="$($SUDO apt-get "${opts[@]}" update -qq 2>&1)" || rc=$?
    if [ "$rc" -eq 0 ]; then [ -z "$out" ] || echo "$out"; return 0; fi
    if grep -q "Could not get lock" <<<"$out" && [ "$waited" -lt "$wait_s" ]; then
      [ "$waited" -eq 0 ] && echo "loopact: apt is busy (another install or unattended-upgrades); waiting up to ${wait_s} s"
      sleep 3; waited=$((waited + 3)); continue
    fi
    echo "$out" >&2; fail "$rc" update
  done
}
update
rc=0
DEBIAN_FRONTEND=noninteractive $SUDO apt-get "${opts[@]}" install -y -qq "${flags[@]}" "$@" >/dev/null || rc=$?
[ "$rc" -eq 0 ] || fail "$rc" install "$@"
