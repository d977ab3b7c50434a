#!/usr/bin/env bash
# Installs the few system packages loopact needs that pip cannot bring: Mesa's EGL for
# headless MuJoCo rendering on the CPU, a CJK font (WenQuanYi Micro Hei, Apache-2.0 / GPL-3
# with font exception) so that write_document's PDFs show Chinese, poppler-utils
# (pdftotext, which the document tests read PDFs back with), espeak-ng (offline speech, GPL-3,
# run as a separate process; issue 16), PortAudio for sound cards, and the mosquitto MQTT
# broker that the MQTT tests and benchmarks start on a free loopback port (never as a service).
# Does nothing when they are there.
set -euo pipefail
need=()
ldconfig -p | grep -q 'libEGL.so.1' || need+=(libegl1)
ldconfig -p | grep -q 'libEGL_mesa.so.0' || need+=(libegl-mesa0)
ldconfig -p | grep -q 'libGL.so.1' || need+=(libgl1)
[ -e /usr/share/fonts/truetype/wqy/wqy-microhei.ttc ] || need+=(fonts-wqy-microhei)
command -v pdftotext >/dev/null || need+=(poppler-utils)
command -v espeak-ng >/dev/null || need+=(espeak-ng)          # offline TTS, run as a process (issue 16)
ldconfig -p | grep -q 'libportaudio.so.2' || need+=(libportaudio2)  # sounddevice (issue 16)
[ -e /usr/lib/x86_64-linux-gnu/dri/swrast_dri.so ] || [ -e /usr/lib/aarch64-linux-gnu/dri/swrast_dri.so ] || need+=(libgl1-mesa-dri)
optional=()  # without it the MQTT tests run against the pure-Python amqtt broker
command -v mosquitto >/dev/null || [ -x /usr/sbin/mosquitto ] || optional+=(mosquitto)
if [ $(( ${#need[@]} + ${#optional[@]} )) -eq 0 ]; then exit 0; fi
all=("${need[@]}" "${optional[@]}")
if [ "$(id -u)" -ne 0 ] && ! command -v sudo >/dev/null && [ ${#need[@]} -eq 0 ]; then
  echo "loopact: mosquitto is not installed (apt-get install mosquitto as root); the MQTT" \
    "tests use the amqtt broker instead" >&2; exit 0
fi
echo "loopact: installing system packages (rendering, fonts, pdftotext, speech, MQTT broker): ${all[*]}"
exec bash "$(dirname "$0")/apt-install.sh" "${all[@]}"
