# Two commands on a fresh machine (Python 3.11+, pip, make): `make run` and `make test`.
# Another interpreter: `make test PYTHON=python3.13` (its own venv, .venv-3.13).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
# The interpreter's real path; a pyenv shim for a version that is installed but not
# selected is asked for by name (PYENV_VERSION), so PYTHON=python3.13 works under pyenv.
PYTHON_EXE := $(shell $(PYTHON) -c 'import sys; print(sys.executable)' 2>/dev/null || \
	PYENV_VERSION=$$(pyenv whence $(PYTHON) 2>/dev/null | tail -1) \
	$(PYTHON) -c 'import sys; print(sys.executable)' 2>/dev/null)
PY_VERSION := $(shell $(PYTHON_EXE) -c 'import sys; print("%d.%d" % sys.version_info[:2])' \
	2>/dev/null)
# One venv per interpreter, so 3.11 and 3.13 installs never clash: .venv for 3.11.
VENV   := $(if $(filter 3.11,$(PY_VERSION)),.venv,.venv-$(PY_VERSION))
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: run test test-fast install lint bench clean-data browser pushpin

$(STAMP): pyproject.toml
	@test -n "$(PYTHON_EXE)" || { echo "need $(PYTHON) on PATH"; exit 1; }
	test -x $(PY) || $(PYTHON_EXE) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[embedded,test]'
	touch $(STAMP)

install: $(STAMP)

## Install everything, then start web + worker (+ embedded Postgres/Redis when no URLs are set).
## EDGE=pushpin: Pushpin in front of WEB_PROCESSES (2) web processes (docs/scaling.md).
run: $(STAMP)
	$(PY) -m agentsite.launch

## Install everything, then run the whole test suite against real services.
## Chromium for the browser tests: Debian's package as root, else Playwright's own build.
browser: $(STAMP)
	@if [ -x /usr/bin/chromium ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  apt-get install -y chromium || { apt-get update && apt-get install -y chromium; }; \
	else $(PY) -m playwright install chromium; fi

## Pushpin for the edge tests (tests/edge) and EDGE=pushpin: Debian's package as root
## (it brings zurl and condure); elsewhere those tests skip.
pushpin:
	@if [ -x /usr/bin/pushpin ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  apt-get install -y pushpin || { apt-get update && apt-get install -y pushpin; }; \
	else echo "pushpin not installed: tests/edge will skip (apt-get install pushpin)"; fi

# The suite runs in TEST_PROCESSES parallel pytest processes (pytest-xdist); each has its
# own test database, Redis, Celery worker, server and beat (docs/testing.md).
TEST_PROCESSES ?= 3

test: $(STAMP) browser pushpin
	$(VENV)/bin/ruff check .
	$(PY) -m pytest -n $(TEST_PROCESSES) --dist loadgroup $(PYTEST_ARGS)

## The rules without worker, browser or server: unit tests and the database tests of the
## services and policies (embedded Postgres only), in under 2 minutes.
test-fast: $(STAMP)
	$(PY) -m pytest tests/unit tests/rules -q $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check .

BENCH_STAMP := $(VENV)/.installed-bench

$(BENCH_STAMP): $(STAMP) pyproject.toml
	$(PY) -m pip install --quiet -e '.[embedded,test,bench]'
	touch $(BENCH_STAMP)

bench: $(STAMP) $(BENCH_STAMP)
	$(PY) bench/cycle.py
	$(PY) bench/agui_peer.py
	$(PY) bench/events.py
	$(PY) bench/throughput.py
	$(PY) bench/inprocess.py

clean-data:
	$(PY) -m agentsite.embedded stop
	rm -rf .data
