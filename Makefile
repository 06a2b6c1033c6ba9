# Every target sets up what it needs: a fresh machine only needs python3 (3.12 is selected
# by .python-version) and network access to PyPI.
PY := python3
# uv itself lives in a project-local virtual environment (.tools/), so set-up never installs
# anything into the system interpreter. `python -m uv` makes uv use that 3.12 interpreter.
TOOLS := .tools
# VIRTUAL_ENV names the project environment, which uv would otherwise take to be .tools/.
UV := VIRTUAL_ENV=$(CURDIR)/.venv $(TOOLS)/bin/python -m uv
# llama-cpp-python ships only as source. The default build uses -march=native, which dies
# with "Illegal instruction" on these VMs, so build a portable wheel (about 6-7 min on 2 cores).
LOCAL_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DLLAVA_BUILD=OFF

.PHONY: setup setup-local test lint eval bench

$(TOOLS)/bin/uv:
	@echo "Installing uv into $(TOOLS)/, a project-local virtual environment (about 10 s)..."
	$(PY) -m venv --clear $(TOOLS)
	$(TOOLS)/bin/python -m pip install --quiet --disable-pip-version-check uv

setup: $(TOOLS)/bin/uv
	$(UV) sync --frozen --inexact

# The build prints nothing while it compiles, so say what it is and how long it takes, and
# report every TICK seconds until it is done.
VENV_PY := .venv/bin/python
TICK := 60
setup-local: setup
	@if $(VENV_PY) -c "import llama_cpp" >/dev/null 2>&1; then \
	    echo "llama-cpp-python is already built."; \
	else \
	    echo "Building llama-cpp-python from source with portable CPU flags: usually 6-7 min on 2 cores."; \
	    echo "The compiler is silent; a line follows every $(TICK) s until the build is done."; \
	fi
	@start=$$(date +%s); \
	( n=0; while sleep 1; do n=$$((n + 1)); [ $$((n % $(TICK))) -ne 0 ] || \
	    echo "  ... still building llama-cpp-python ($$n s so far)"; done ) & \
	ticker=$$!; \
	CMAKE_ARGS="$(LOCAL_CMAKE_ARGS)" $(UV) sync --frozen --inexact --extra local; status=$$?; \
	kill $$ticker 2>/dev/null; \
	echo "Local model set-up finished in $$(( $$(date +%s) - start )) s."; \
	exit $$status

test: setup
	$(UV) run --frozen pytest

lint: setup
	$(UV) run --frozen ruff check
	$(UV) run --frozen mypy

# The main job: evaluate the promoted prompt on the quick fixtures with the embedded local
# model (Qwen2.5-Coder 1.5B Instruct on the CPU). Point --model/--base-url at an endpoint
# to evaluate a hosted model instead (see README).
eval: setup-local
	$(UV) run --frozen semantic-memory eval run --model local --tag quick \
		--concurrency 1 --out reports/quickstart

bench: setup-local
	$(UV) run --frozen python -m benchmarks
