#!/usr/bin/env bash
# Install the browser the web console tests drive (SPEC F2): Debian's chromium at
# /usr/bin/chromium. Idempotent: does nothing when it is already there. Playwright's Python
# package (the dev extra) drives it; `playwright install` is never needed.
set -euo pipefail

if [ -x /usr/bin/chromium ]; then
  echo "chromium: already installed ($(/usr/bin/chromium --version 2>/dev/null || echo unknown version))"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
  else
    echo "install-browser.sh: need root (or sudo) to apt-get install chromium" >&2
    exit 1
  fi
fi

export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends chromium fonts-liberation >/dev/null
if [ ! -x /usr/bin/chromium ]; then
  echo "install-browser.sh: chromium was installed but /usr/bin/chromium is missing" >&2
  exit 1
fi
echo "chromium: installed ($(/usr/bin/chromium --version 2>/dev/null || echo unknown version))"
