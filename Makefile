# The two commands in the README: `make demo` (main job) and `make test` (the tests).
# Each sets up what it needs from nothing but Python 3.11+ (and, for the end-to-end
# tests, Node 20 + npm), so a fresh machine runs them as they are.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo test test-fast clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: setup
	$(BIN)/ssebench demo

# Everything CI runs: fast tests, then the slow and end-to-end ones.
test: setup
	$(BIN)/pytest

# The fast tests only, for the edit-test loop.
test-fast: setup
	$(BIN)/pytest -m "not slow and not e2e"

clean:
	rm -rf $(VENV) .pytest_cache
