# Two commands on a fresh machine with Python 3.11:
#   make demo   train a small commander and watch it beat a scripted opponent
#   make test   lint and run the test suite
# Both create or refresh the local virtual environment first.

PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: venv demo test lint bench clean

venv: $(STAMP)

# torch goes first and pinned: it resolves to the CPU wheel; any looser
# requirement lets pip pull a multi-GB CUDA build via stable-baselines3.
$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet "torch==2.13.0"
	$(PY) -m pip install --quiet -e ".[dev,distributed]"
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m training.demo

lint: $(STAMP)
	$(PY) -m ruff check .

# The kernels compile once before the tests: the test workers and the processes they
# start (league roles, Ray actors) would otherwise each compile them at once.
test: lint
	$(PY) -m envs.precompile
	$(PY) -m pytest -q -n 2

bench: $(STAMP)
	$(PY) -m benchmarks.sim_throughput

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
