# loopact: two commands for a newcomer (see README.md).
#   make run   - create .venv if needed, install, start the agent on the simulated robot
#   make test  - create .venv if needed, install the dev extra, run ruff, mypy and the tests
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP_RUN  := $(VENV)/.installed-run
STAMP_DEV  := $(VENV)/.installed-dev
ARGS ?=

.PHONY: run test lint typecheck pytest bench clean system-deps

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

system-deps:
	@bash scripts/system-deps.sh

$(STAMP_RUN): pyproject.toml | $(PY)
	@$(MAKE) --no-print-directory system-deps
	$(PY) -m pip install --quiet -e '.[sim]'
	@touch $@

$(STAMP_DEV): pyproject.toml | $(PY)
	@$(MAKE) --no-print-directory system-deps
	$(PY) -m pip install --quiet -e '.[dev]'
	@touch $@ $(STAMP_RUN)

run: $(STAMP_RUN)
	$(VENV)/bin/loopact run $(ARGS)

lint: $(STAMP_DEV)
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/ruff format --check src tests bench

typecheck: $(STAMP_DEV)
	$(VENV)/bin/mypy

pytest: $(STAMP_DEV)
	$(VENV)/bin/pytest -q $(ARGS)

test: lint typecheck pytest

bench: $(STAMP_DEV)
	$(PY) bench/overhead.py
	$(PY) bench/first_action.py

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info
