#!/usr/bin/env bash
# Installs the few system packages loopact needs that pip cannot bring: Mesa's EGL for
# headless MuJoCo rendering on the CPU, a CJK font (WenQuanYi Micro Hei, Apache-2.0 / GPL-3
# with font exception) so that write_document's PDFs show Chinese, and poppler-utils
# (pdftotext, which the document tests read PDFs back with). Does nothing when they are there.
set -euo pipefail
need=()
ldconfig -p | grep -q 'libEGL.so.1' || need+=(libegl1)
ldconfig -p | grep -q 'libEGL_mesa.so.0' || need+=(libegl-mesa0)
ldconfig -p | grep -q 'libGL.so.1' || need+=(libgl1)
[ -e /usr/share/fonts/truetype/wqy/wqy-microhei.ttc ] || need+=(fonts-wqy-microhei)
command -v pdftotext >/dev/null || need+=(poppler-utils)
[ -e /usr/lib/x86_64-linux-gnu/dri/swrast_dri.so ] || [ -e /usr/lib/aarch64-linux-gnu/dri/swrast_dri.so ] || need+=(libgl1-mesa-dri)
if [ ${#need[@]} -eq 0 ]; then exit 0; fi
echo "loopact: installing system packages (rendering, fonts, pdftotext): ${need[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null; then SUDO=sudo; else
    echo "loopact: please install as root: apt-get install -y ${need[*]}" >&2; exit 1; fi
fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
