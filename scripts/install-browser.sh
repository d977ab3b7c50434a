#!/usr/bin/env bash
# Install the browser the web console tests drive (SPEC F2): Debian's chromium at
# /usr/bin/chromium. Idempotent: does nothing when it is already there. Playwright's Python
# package (the dev extra) drives it; `playwright install` is never needed.
set -euo pipefail

if [ -x /usr/bin/chromium ]; then
  echo "chromium: already installed ($(/usr/bin/chromium --version 2>/dev/null || echo unknown version))"
  exit 0
fi

bash "$(dirname "$0")/apt-install.sh" --no-install-recommends chromium fonts-liberation
if [ ! -x /usr/bin/chromium ]; then
  echo "install-browser.sh: chromium was installed but /usr/bin/chromium is missing" >&2
  exit 1
fi
echo "chromium: installed ($(/usr/bin/chromium --version 2>/dev/null || echo unknown version))"
