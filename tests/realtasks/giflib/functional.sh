#!/usr/bin/env bash
# giflib's own regression suite (tests/makefile: every utility on the pictures in pic/,
# output compared with the check files), run on the AddressSanitizer build. `make check`
# would first run `make all` (manual pages); the suite itself is `make -C tests`.
set -euo pipefail
export ASAN_OPTIONS=detect_leaks=0
make -C tests
