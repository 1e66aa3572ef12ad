# The two commands a new user needs: `make run` and `make test`. Everything installs from here.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
# Two installs, each with its own stamp: `make run` installs what the service needs and nothing
# else; `make test`, `make lint`, `make bench` (and the rest) add the test and lint tools. The dev
# install is a superset, so it stamps the runtime one too; a runtime-only venv has no dev stamp,
# so a later `make test` upgrades it.
RUNTIME_STAMP := $(VENV)/.runtime-stamp
DEV_STAMP     := $(VENV)/.dev-stamp

.PHONY: install run test test-fast bench soak lint screenshots waterfall reference clean

# pytest-xdist workers for `make test` and `make test-fast`: one a core (auto), a number, or 0
PYTEST_WORKERS ?= auto

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

# `make run OTEL=1` (or DIALECTIC_EXTRAS=otel) adds the OpenTelemetry extra to the runtime install
DIALECTIC_EXTRAS ?= $(if $(OTEL),otel,)
RUNTIME_TARGET := $(if $(DIALECTIC_EXTRAS),'.[$(DIALECTIC_EXTRAS)]',.)

$(RUNTIME_STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install -q -e $(RUNTIME_TARGET)
	touch $(RUNTIME_STAMP)

$(DEV_STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install -q -e '.[dev,otel]'
	touch $(DEV_STAMP) $(RUNTIME_STAMP)

# An editable install leaves our own modules uncompiled, and with PYTHONDONTWRITEBYTECODE (set
# in many containers and CI runners, and in this sandbox) Python never writes their .pyc, so
# every process would compile all of them again (about 0.15 s a start). Compile them here, as
# pip does for an installed wheel; compileall redoes only the modules changed since.
COMPILE := $(PY) -m compileall -q -j 0 engine storage bot

## make install: the development install (the runtime, the test and lint tools)
install: $(DEV_STAMP)
	$(COMPILE)

## make run: install the runtime alone (no test or lint tools), migrate the embedded SQLite
## database, serve the API, console, Slack and workers
run: $(RUNTIME_STAMP)
	$(if $(DIALECTIC_EXTRAS),$(PY) -m pip install -q -e $(RUNTIME_TARGET),)
	$(COMPILE)
	$(VENV)/bin/dialectic serve

## make test: the whole suite on SQLite and on a throwaway PostgreSQL, the console in headless
## Chromium (scripts/with-browser.sh installs chromium, chromium-driver and axe-core if missing),
## on pytest-xdist workers, one a core (PYTEST_WORKERS=3 to choose, 0 for one process), test by
## test (--dist load: the scope schedulers that keep groups together run schemathesis's 38 cases,
## which share one node id, once; tests/support/parallel.py)
test: install
	scripts/with-postgres.sh scripts/with-browser.sh $(PY) -m pytest -n $(PYTEST_WORKERS) --dist load

## make test-fast: the unit tests only (tests/unit: no database, socket, process or browser), for
## the edit loop, on the same workers
test-fast: install
	$(PY) -m pytest -n $(PYTEST_WORKERS) tests/unit

# The cli section times `dialectic` as `make run` installs it: a venv of its own with the runtime
# alone (RUNTIME_TARGET), since the dev tools change a run's start (selenium brings trio, which
# the SDK's HTTP transport imports whenever it is installed)
BENCH_RUNTIME_VENV  ?= .venv-runtime
BENCH_RUNTIME_STAMP := $(BENCH_RUNTIME_VENV)/.runtime-stamp
$(BENCH_RUNTIME_STAMP): pyproject.toml
	$(PYTHON) -m venv $(BENCH_RUNTIME_VENV)
	$(BENCH_RUNTIME_VENV)/bin/python -m pip install -q --upgrade pip
	$(BENCH_RUNTIME_VENV)/bin/python -m pip install -q -e $(RUNTIME_TARGET)
	touch $(BENCH_RUNTIME_STAMP)

## make bench: speed and memory figures (prints them; asserts nothing about time); BENCH_ARGS
## names sections (engine floor cli peer service slack estimates tracing pages); BENCH_PROCESS=serve
## measures `dialectic serve` in the service section, BENCH_PROFILE=FILE writes its cProfile,
## BENCH_FLAME=DIR its py-spy flame graph.
## matplotlib (for the plot) and the peer tool
## install into the harness's own places, never as the product's dependencies
bench: install $(BENCH_RUNTIME_STAMP)
	$(PY) -c "import matplotlib" 2>/dev/null && test -x $(VENV)/bin/py-spy || $(PY) -m pip install -q -r tests/benchmarks/requirements.txt
	$(BENCH_RUNTIME_VENV)/bin/python -m compileall -q -j 0 engine storage bot
	BENCH_RUNTIME_PYTHON=$(BENCH_RUNTIME_VENV)/bin/python \
		scripts/with-postgres.sh $(PY) -m tests.benchmarks $(BENCH_ARGS)

## make soak: debates in every mode through `dialectic serve` under injected provider faults, server
## SIGKILLs and a PostgreSQL restart; prints what happened (not part of make test)
soak: install
	scripts/with-postgres.sh $(PY) -m tests.soak $(SOAK_ARGS)

## make screenshots: every console page at 1280 px and 390 px into docs/screenshots, and
## docs/tracing.md's waterfall of a real trace (trace-waterfall*.png)
screenshots: install
	scripts/with-browser.sh $(PY) -m tests.screenshots docs/screenshots

## make waterfall: docs/tracing.md's picture, drawn from the spans of a real consensus debate
## (the real gateway, the fake provider at 0.2 s a call, the SDK's in-memory exporter)
waterfall: install
	$(PY) -m tests.waterfall consensus

## make reference: rewrite the generated references in docs/ (configuration, cli, api, openapi.json)
reference: install
	$(PY) -m tests.support.reference

lint: install
	$(VENV)/bin/ruff check engine storage bot tests
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy --strict engine storage bot

clean:
	rm -rf $(VENV) $(BENCH_RUNTIME_VENV) *.egg-info .pytest_cache .mypy_cache .ruff_cache
