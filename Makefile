# Two set-up commands for a fresh clone on a machine that has only Python:
#   make demo   creates .venv, installs transferlab, runs the main job on the default data
#   make test   creates .venv, installs transferlab with its test extras, runs the test suite
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# The shared benchmark data, corpora and weights (read-only), beside the repository.
export TRANSFERLAB_DATA ?= $(abspath ../shared)

.PHONY: demo test install

# torch==2.13.0 first: it is a CPU wheel on local disk here, and installing it before the
# package keeps pip from resolving a multi-GB CUDA build for the `torch` dependency.
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $@

install: $(VENV)/.installed

demo: $(VENV)/.installed
	$(BIN)/transferlab demo

test: $(VENV)/.installed
	$(BIN)/python -m pytest -q
