# Koholint developer tasks. `make help` lists them.
SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV ?= .venv
PY = $(VENV)/bin/python
PYTHON ?= python3.11
TORCH_VERSION ?= 2.13.0
PYTEST_WORKERS ?= 2
PYTEST_ARGS ?=
RUN_ARGS ?= train
# Stamp written after a complete install. The editable install maps each top-level package
# when it is installed, so a new service package (services/<name>/__init__.py) reinstalls too.
INSTALLED = $(VENV)/.installed
FASTPATH = $(VENV)/.fastpath
PACKAGE_INITS = $(wildcard libs/*/__init__.py services/*/__init__.py)

.PHONY: help setup test test-fast lint format cartridge states run bench bench-venv-puffer images clean

help: ## Show this help
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-10s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

setup: $(INSTALLED) $(FASTPATH) ## Create the venv (Python 3.11), install .[all,dev] (CPU torch without a GPU), build the fast path

$(INSTALLED): pyproject.toml $(PACKAGE_INITS)
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@$(PY) -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' || { \
		echo "$(VENV) is not Python 3.11: remove it (rm -rf $(VENV)) and run make setup again" >&2; exit 1; }
	$(PY) -m pip install --upgrade pip
	@# Without a GPU, install the CPU build of torch first so the extras never pull CUDA wheels.
	if ! command -v nvidia-smi >/dev/null 2>&1; then $(PY) -m pip install torch==$(TORCH_VERSION); fi
	CMAKE_ARGS="$${CMAKE_ARGS:--DGGML_NATIVE=OFF}" $(PY) -m pip install -e '.[all,dev]'
	@touch $@

# The compiled env fast path (Cython against the installed PyBoy; the library falls back to
# pure Python without it). Rebuilt when its source or the installed packages change.
$(FASTPATH): $(INSTALLED) libs/koholint/game/_fastpath.pyx libs/koholint/game/build_fastpath.py
	$(PY) -m koholint.game.build_fastpath
	@touch $@

test: $(INSTALLED) $(FASTPATH) ## Run the whole test suite (PYTEST_WORKERS=2 by default)
	$(PY) -m pytest -n $(PYTEST_WORKERS) --dist loadgroup $(PYTEST_ARGS)

test-fast: $(INSTALLED) $(FASTPATH) ## Run the tests not marked slow
	$(PY) -m pytest -n $(PYTEST_WORKERS) --dist loadgroup -m "not slow" $(PYTEST_ARGS)

lint: $(INSTALLED) ## Check lint, formatting and types (ruff, mypy)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

format: $(INSTALLED) ## Fix lint where safe and format the code
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

cartridge: $(INSTALLED) ## Build the open test cartridge ROM (needs sdcc)
	$(PY) cartridge/tools/build.py

states: $(INSTALLED) ## Record the cartridge's save states into the package data
	$(PY) -m koholint.cli cartridge record

run: $(INSTALLED) $(FASTPATH) ## Run the main job: koholint $RUN_ARGS (default: train)
	$(VENV)/bin/koholint $(RUN_ARGS)

bench: $(INSTALLED) ## Benchmark the emulator on the cartridge
	$(PY) benchmarks/bench_cartridge.py

# PufferLib for bench_trainer.py's side-by-side row, in a venv of its own: pufferlib-core pins
# torch exactly and its extension links PyPI's default (CUDA) build, which the project's venv
# must not get. A benchmark dependency only; setup and test never make it.
PUFFER_VENV ?= .venv-puffer
PUFFER_TORCH_VERSION ?= 2.9.0
PUFFERLIB_VERSION ?= 3.0.23

bench-venv-puffer: $(PUFFER_VENV)/.installed ## Create .venv-puffer (torch 2.9.0, pufferlib-core 3.0.23, the project without its extras) for the PufferLib benchmark row

$(PUFFER_VENV)/.installed: pyproject.toml
	@test -x $(PUFFER_VENV)/bin/python || $(PYTHON) -m venv $(PUFFER_VENV)
	$(PUFFER_VENV)/bin/python -m pip install --upgrade pip
	$(PUFFER_VENV)/bin/python -m pip install torch==$(PUFFER_TORCH_VERSION) pufferlib-core==$(PUFFERLIB_VERSION)
	@# The project without its dependencies (the trainer extra pins another torch), then only
	@# what the env needs at runtime. The env uses the fast path `make setup` built in libs/
	@# (same PyBoy pin), so this target never rebuilds it under the main venv.
	$(PUFFER_VENV)/bin/python -m pip install --no-deps -e .
	$(PUFFER_VENV)/bin/python -m pip install pyboy==2.8.1 gymnasium==1.2.2 numpy 'pydantic>=2.7' 'minio>=7.2' 'httpx>=0.27'
	@touch $@

images: $(INSTALLED) ## Build every image with no registry: a base from Debian's packages, the project from a wheelhouse (docker/images.sh)
	PYTHON=$(PY) ./docker/images.sh

clean: ## Remove caches and build outputs (keeps the venv)
	rm -rf build dist .pytest_cache .mypy_cache .ruff_cache cartridge/build
	find . -path ./$(VENV) -prune -o -path ./$(PUFFER_VENV) -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +
	find . -path ./$(VENV) -prune -o -path ./$(PUFFER_VENV) -prune -o -name '*.egg-info' -type d -prune -exec rm -rf {} +
