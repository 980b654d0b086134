# Two commands on a fresh machine with Python 3.11:
#   make demo   train a small commander and watch it beat a scripted opponent
#   make test   lint and run the test suite
# Both create or refresh the local virtual environment first.

PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: venv demo test lint bench clean docs docs-check browser kernels

venv: $(STAMP)

# Installed in two stages so that `make test` can compile the simulator's kernels while
# the second stage installs: first what the kernels need (NumPy, Numba, SciPy, which Numba
# loads when present, and the file helpers' filelock and PyYAML) at pyproject.toml's pins,
# then the rest. torch goes first in the second stage and pinned: it resolves to the CPU
# wheel; any looser requirement lets pip pull a multi-GB CUDA build via stable-baselines3.
KERNEL_STAMP := $(VENV)/.kernel-deps
KERNEL_PACKAGES := numpy numba scipy filelock

$(KERNEL_STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet pyyaml $$($(PY) -c 'import tomllib; \
		deps = tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]; \
		print(*(d for d in deps if d.split("==")[0] in "$(KERNEL_PACKAGES)".split()))')
	touch $(KERNEL_STAMP)

$(STAMP): $(KERNEL_STAMP)
	$(PY) -m pip install --quiet "torch==2.13.0"
	$(PY) -m pip install --quiet -e ".[dev,distributed,docs]"
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m training.demo

lint: $(STAMP)
	$(PY) -m ruff check .

# The replay viewer's browser test drives Debian's chromium through Playwright (whose own
# browser download cannot work offline); without chromium it fails under CI=true.
browser:
	command -v chromium >/dev/null || (apt-get update && apt-get install -y chromium) \
		|| echo "chromium could not be installed: the browser tests will skip (and fail under CI=true)"

# The kernels compile once before the tests: the test workers and the processes they
# start (league roles, Ray actors) would otherwise each compile them at once. They need
# only the first stage of the install, and compile while the rest installs.
kernels: $(KERNEL_STAMP)
	$(PY) -m envs.precompile

test:
	$(MAKE) --no-print-directory -j3 lint browser kernels
	$(PY) -m pytest -q -n 2 --dist worksteal

# The documentation site (mkdocs.yml): docs/*.md and the API reference generated from
# the docstrings, built into site/ (open site/index.html). docs-check is the same strict
# build into a scratch folder; `make test` runs it as a test (tests/test_docs_site.py),
# so a broken link or reference fails the suite. Never add
# --quiet: it hides the warnings from --strict, which then passes anything (mkdocs 1.6).
# NO_MKDOCS_2_WARNING silences the theme's end-of-life banner.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict

docs-check: $(STAMP)
	tmp=$$(mktemp -d) && NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict \
		--site-dir "$$tmp"; status=$$?; rm -rf "$$tmp"; exit $$status

bench: $(STAMP)
	$(PY) -m benchmarks.sim_throughput

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
