#!/usr/bin/env bash
# Build and install the interface packages of ros2/ into a Python venv whose ROS 2 comes from
# the Kilted wheels (the `ros2` extra): loopact_interfaces (ExecuteTool action, docs/ros2.md),
# tf2_msgs and nav2_msgs' NavigateToPose (docs/navigation.md), and control_msgs'
# FollowJointTrajectory and GripperCommand (docs/manipulation.md), which are not on PyPI.
#
#   scripts/build-ros2-interfaces.sh [VENV]      (default: .venv)
#
# The wheels' exported CMake files name the wheel build machine's Python and numpy include
# folders (/opt/python/cp3XX-cp3XX/...); they are rewritten to this venv's own first.
# With a sourced ROS 2 installation use colcon instead: `colcon build` in a workspace that
# holds ros2/loopact_interfaces (tf2_msgs, nav2_msgs and control_msgs come with that installation).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$(cd "${1:-$ROOT/.venv}" && pwd)"
PY="$VENV/bin/python"

need=()
command -v cmake >/dev/null || need+=(cmake)
{ command -v make >/dev/null && command -v cc >/dev/null && command -v c++ >/dev/null; } || need+=(build-essential)
if [ ${#need[@]} -gt 0 ]; then
  if command -v apt-get >/dev/null; then
    echo "build-ros2-interfaces: installing ${need[*]}"
    bash "$ROOT/scripts/apt-install.sh" "${need[@]}"
  else
    echo "build-ros2-interfaces: please install ${need[*]} (apt-get install -y ${need[*]})" >&2
    exit 1
  fi
fi

PY_INC="$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"
NP_INC="$("$PY" -c 'import numpy; print(numpy.get_include())')"
PY_VER="$("$PY" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')"

# 1. Point the wheels' exported CMake files at this venv's Python and numpy headers.
{ grep -rlZ --include='*.cmake' '/opt/python/cp' "$VENV/share" 2>/dev/null || true; } \
  | xargs -0 -r sed -i -E \
      -e "s#/opt/python/cp[0-9]+-cp[0-9]+/lib/python[0-9.]+/site-packages/numpy/_core/include#${NP_INC}#g" \
      -e "s#/opt/python/cp[0-9]+-cp[0-9]+/lib/python[0-9.]+/site-packages/numpy/core/include#${NP_INC}#g" \
      -e "s#/opt/python/cp[0-9]+-cp[0-9]+/include/python[0-9.]+#${PY_INC}#g"

# 2. Generate, build and install into the venv prefix.
export AMENT_PREFIX_PATH="$VENV${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}"
export CMAKE_PREFIX_PATH="$VENV${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
export PATH="$VENV/bin:$PATH"
for name in loopact_interfaces tf2_msgs nav2_msgs control_msgs; do
  PKG="$ROOT/ros2/$name"
  BUILD="$ROOT/build/ros2/$name"
  mkdir -p "$BUILD"
  cmake -S "$PKG" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF \
    -DCMAKE_INSTALL_PREFIX="$VENV" -DCMAKE_PREFIX_PATH="$VENV" \
    -DPython3_EXECUTABLE="$PY" -DPYTHON_EXECUTABLE="$PY" >"$BUILD.log" 2>&1 \
    || { tail -40 "$BUILD.log" >&2; exit 1; }
  cmake --build "$BUILD" -j2 >>"$BUILD.log" 2>&1 || { tail -40 "$BUILD.log" >&2; exit 1; }
  cmake --install "$BUILD" >>"$BUILD.log" 2>&1 || { tail -40 "$BUILD.log" >&2; exit 1; }
done

# 3. Check that the generated modules import.
"$PY" -c 'from loopact_interfaces.action import ExecuteTool; ExecuteTool.Goal(input_json="{}", timeout_sec=1.0)
from tf2_msgs.msg import TFMessage; TFMessage()
from nav2_msgs.action import NavigateToPose; NavigateToPose.Goal(); NavigateToPose.Result.TIMEOUT
from control_msgs.action import FollowJointTrajectory, GripperCommand
FollowJointTrajectory.Goal(); GripperCommand.Goal(); FollowJointTrajectory.Result.PATH_TOLERANCE_VIOLATED' \
  || { echo "build-ros2-interfaces: the interfaces built but do not import (python $PY_VER)" >&2; exit 1; }
echo "loopact_interfaces, tf2_msgs, nav2_msgs and control_msgs installed into $VENV"
