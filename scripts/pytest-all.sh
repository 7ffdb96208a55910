#!/usr/bin/env bash
# `make test`'s pytest: every test, in two pytest processes side by side.
#
# - tests/e2e/test_kubernetes.py in a pytest of its own, started first: its cluster's binaries
#   build in the background from `make test-deps` (8-9 min on a new 2-core machine with the other
#   tests running), and it starts the moment they are there. In the xdist queue it could only go
#   last, after every other test (it waits on the build), which added its ~10 min to the end.
# - everything else on PYTEST_WORKERS pytest-xdist workers (the order and the groups:
#   tests/conftest.py).
#
# The Docker engine is shared by both (the Docker tests and the Kubernetes tests' image builds):
# started here when it is not running, and then stopped here. Exit status: the main run's when
# it failed, else the Kubernetes run's. The Kubernetes run's output follows the main run's.
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-.venv/bin}
KUBE_TESTS=${KUBE_TESTS:-tests/e2e/test_kubernetes.py}

started=
if ! scripts/docker-engine.sh status >/dev/null 2>&1; then
    scripts/docker-engine.sh start >/dev/null 2>&1 && started=1
fi
work=$(mktemp -d /tmp/ssebench-pt.XXXXXX)  # short: sockets live under the tests' temp folders
cleanup() {
    [ -z "${kube:-}" ] || { kill -INT "$kube" 2>/dev/null; wait "$kube" 2>/dev/null; }
    [ -z "$started" ] || scripts/docker-engine.sh stop >/dev/null 2>&1
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"$BIN/pytest" -p no:cacheprovider --basetemp="$work/tmp" --durations=10 "$KUBE_TESTS" >"$work/log" 2>&1 &
kube=$!
echo "pytest-all: $KUBE_TESTS runs beside the other tests (its output follows theirs)"

# Its own basetemp too: a pytest started elsewhere on the machine sets /tmp/pytest-of-USER back
# to 0700, which the sandbox's uid must traverse (tests/conftest.py opens tmp_path's parents).
"$BIN/pytest" -n "${PYTEST_WORKERS:-3}" --dist loadgroup --no-loadscope-reorder --durations=25 \
    --basetemp="$work/main" --ignore="$KUBE_TESTS" "$@"
status=$?

wait "$kube"
kube_status=$?
kube=
echo
echo "=== $KUBE_TESTS (run beside the others) ==="
cat "$work/log"
[ "$status" -ne 0 ] && exit "$status"
exit "$kube_status"
