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

bench: $(VENV)/.test-installed
	$(PY) -m benchmarks

clean:
	rm -rf $(VENV) build *.egg-info
