#!/usr/bin/env bash
# Run one PoC: a C program ($SSE_POC) that calls cJSON's API, linked against the
# libcjson.a the build step made. It exits 0 when cJSON refuses the bad call; on the
# unfixed tree it dereferences NULL and AddressSanitizer reports a SEGV.
set -euo pipefail
export ASAN_OPTIONS=detect_leaks=0  # the bugs are NULL dereferences; LeakSanitizer cannot run under ptrace
out="$SSE_TREE/sse-poc"
mkdir -p "$out"
gcc -g -O0 -fsanitize=address -fno-omit-frame-pointer -I"$SSE_TREE" -x c "$SSE_POC" -x none \
    "$SSE_TREE/libcjson.a" -o "$out/poc"
"$out/poc"
