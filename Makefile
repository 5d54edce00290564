# Two commands for a newcomer: `make demo` and `make test`. Both create .venv if it is missing.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: demo test bench clean

$(PY):
	$(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(VENV)/.demo-installed: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e ".[demo]"
	touch $@

$(VENV)/.test-installed: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e ".[test,demo]"
	touch $@

demo: $(VENV)/.demo-installed
	MPLBACKEND=Agg $(PY) examples/seed_demo.py

test: $(VENV)/.test-installed
	MPLBACKEND=Agg $(PY) -m pytest -n 2 tests

# JAX >= 0.11 needs Python >= 3.12: when a python3.12 exists, JAX's side runs in its own venv
# (pyenv's interpreters first: its `python3.12` shim exists but fails unless 3.12 is selected)
PY312 ?= $(or $(shell ls $(HOME)/.pyenv/versions/3.12*/bin/python3.12 2>/dev/null | head -1),$(shell command -v python3.12 2>/dev/null))

.venv-jax312/bin/python:
	-[ -n "$(PY312)" ] && $(PY312) -m venv .venv-jax312 && .venv-jax312/bin/pip install --quiet jax jaxlib numpy

# `make bench RUNS=1` for one quick run; the README table gives the range over three
RUNS ?= 3

bench: $(VENV)/.test-installed .venv-jax312/bin/python
	$(PY) -m pip install --quiet threadpoolctl
	$(PY) -m benchmarks --runs $(RUNS)

clean:
	rm -rf $(VENV) build *.egg-info
