# The two commands in the README: `make demo` (main job) and `make test` (the tests).
# Each sets up what it needs from nothing but Python 3.11+ (and, for the end-to-end
# tests, Node 20 + npm), so a fresh machine runs them as they are.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup test-deps demo lint test test-fast clean

setup: $(STAMP)

# The find: empty folders an older install (data copied into site-packages/ssebench/)
# left behind would shadow the editable install's one name (docs/layout.md).
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	for d in $(VENV)/lib/python3*/site-packages/ssebench; do [ ! -d "$$d" ] || find "$$d" -depth -type d -empty -delete; done
	touch $(STAMP)

demo: setup
	$(BIN)/ssebench demo

# What the end-to-end container tests need from Debian (docker.io, debootstrap,
# docker-compose), and strace (the daemon traces its builds to reuse them safely):
# installed when missing and we are root. Elsewhere those tests skip
# and say why; in CI (CI=true) a failed install fails the run instead of hiding them.
# The agent CLIs (npm) and the read-back clients (configs/client-clis/) start installing in the
# background (tests/e2e/prefetch.py) into ~/.cache/ssebench; the e2e fixtures wait for them.
# `ssebench view`'s browser tests drive Debian's chromium with its chromium-driver (Selenium,
# from the test extra); installed the same way.
# The Kubernetes server binaries (scripts/kube-build.sh, from Debian's source, ~3.5 min alone) build
# in the background, started first (the longest wait), while the rest installs and the other tests
# run; tests/e2e/test_kubernetes.py waits for them.
# kube-build.sh install also installs docker-registry (the --registry test's loopback registry).
# Its first line says what it installs (the README says it too).
test-deps: setup
	@if [ "$$(id -u)" = 0 ]; then echo "make test-deps: installing what is missing for the end-to-end tests: Debian packages (docker.io, debootstrap, docker-compose, strace, chromium, Go, etcd, containerd) and, in the background, about 6.6 GiB of agent CLIs and the jobs' model gateway (LiteLLM) from npm and PyPI into $(HOME)/.cache/ssebench"; \
	  else echo "make test-deps: installing what is missing for the end-to-end tests: in the background, about 6.6 GiB of agent CLIs and the jobs' model gateway (LiteLLM) from npm and PyPI into $(HOME)/.cache/ssebench (not root: no Debian packages; the tests that need them skip)"; fi
	@mkdir -p $(HOME)/.cache/ssebench && nohup $(BIN)/python -m tests.e2e.prefetch \
	  >$(HOME)/.cache/ssebench/prefetch.log 2>&1 &
	@scripts/kube-build.sh install >/dev/null && scripts/kube-build.sh background || { [ "$$CI" != true ] || exit 1; \
	  echo "make: the Kubernetes tests will skip (scripts/kube-build.sh install failed)"; }
	@scripts/docker-engine.sh install || { [ "$$CI" != true ] || exit 1; \
	  echo "make: the Docker tests will skip (scripts/docker-engine.sh install failed)"; }
	@command -v strace >/dev/null || { [ "$$(id -u)" = 0 ] && { apt-get install -y -q strace >/dev/null 2>&1 || \
	  { apt-get update -q >/dev/null && apt-get install -y -q strace >/dev/null; }; }; } || \
	  { [ "$$CI" != true ] || exit 1; echo "make: no strace: the daemon's builds will all be clean (slower)"; }
	@{ command -v chromium >/dev/null && command -v chromedriver >/dev/null; } || { [ "$$(id -u)" = 0 ] && \
	  { apt-get install -y -q chromium chromium-driver >/dev/null 2>&1 || \
	  { apt-get update -q >/dev/null && apt-get install -y -q chromium chromium-driver >/dev/null; }; }; } || \
	  { [ "$$CI" != true ] || exit 1; echo "make: no chromium/chromedriver: the browser tests of ssebench view will skip"; }

# The linter and the type checker (configured in pyproject.toml); both test targets run
# it first, so a lint or type error fails fast, before the slower tests.
lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy -p ssebench

# Everything CI runs: lint, then every test (fast, slow, end-to-end) through scripts/pytest-all.sh:
# the Kubernetes tests in a pytest of their own beside the rest (they wait for the cluster's
# background build), the rest on PYTEST_WORKERS pytest-xdist workers: most slow tests wait (on an
# agent CLI, a container, a browser), so three keep two cores busy; tests/conftest.py keeps the
# Docker tests on one worker and a module with a module-wide fixture on one. --no-loadscope-reorder:
# the groups go out in the order tests/conftest.py sorts them (xdist would send the biggest first,
# so the tests waiting on a background install started first). --durations: where a run's time went.
PYTEST_WORKERS ?= 3
test: setup test-deps lint
	BIN=$(BIN) PYTEST_WORKERS=$(PYTEST_WORKERS) scripts/pytest-all.sh

# Lint and the unit tier, for the edit-test loop: under a minute on 2 cores, no Docker, npm or
# browser (the integration modules are listed in tests/conftest.py; `make test` runs everything).
test-fast: setup lint
	$(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadgroup --no-loadscope-reorder -m "not slow and not e2e and not integration"

clean:
	rm -rf $(VENV) .pytest_cache
