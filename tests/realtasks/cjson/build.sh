#!/usr/bin/env bash
# Build cJSON's static libraries with its own Makefile, with AddressSanitizer (the PoCs
# link libcjson.a; a NULL dereference then ends in an ASan report, not a bare SIGSEGV).
set -euo pipefail
make -j2 static CFLAGS="-g -O0 -fsanitize=address -fno-omit-frame-pointer"
