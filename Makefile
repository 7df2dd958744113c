# appstack — developer entry points. Set-up is two commands: `make demo` and `make test`.
# Both install the Python dependencies into .venv and build the local control plane from
# Go modules into $(APPSTACK_CACHE) (default ~/.cache/appstack) the first time.

SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: install build lint typecheck imports unit e2e test demo demo-down clean docs

$(VENV)/.installed: pyproject.toml
	@echo "[appstack] installing Python dependencies into $(VENV)"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	@touch $@

install: $(VENV)/.installed

# Build (once; cached outside the repo) etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, kubectl and kwok, printing progress.
build: install
	$(BIN)/appstack cluster build

lint: install
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

typecheck: install
	$(BIN)/mypy

imports: install
	$(BIN)/lint-imports

unit: install
	$(BIN)/pytest tests/unit

e2e: build
	$(BIN)/pytest tests/e2e

# The test command (README, .ci/run): static checks, then unit and e2e tests in one
# pytest session (one control plane for the whole session, a namespace per test).
test: lint typecheck imports build
	$(BIN)/pytest tests --durations=10

# The main job: local cluster, CRDs + RBAC, the operator in the background under its
# ServiceAccount, the seed sample (examples/appservice.yaml) applied and Ready.
demo: build
	$(BIN)/appstack cluster demo

demo-down: install
	$(BIN)/appstack cluster down

# The runtime's API reference (docs/runtime-api.md), generated from its docstrings.
docs: install
	$(BIN)/python -m appstack.apidoc docs/runtime-api.md

clean:
	rm -rf $(VENV) src/*.egg-info .pytest_cache .mypy_cache .ruff_cache .import_linter_cache
