#!/usr/bin/env bash
# cJSON's own unit tests (tests/*.c with the bundled Unity, the list of tests/CMakeLists.txt),
# compiled with AddressSanitizer and run from tests/ as CTest runs them, plus the
# Makefile's test program (cJSON_test, what `make test` runs). Every test binary is
# built fresh: the intent step's diff changes tests/misc_tests.c.
set -euo pipefail
export ASAN_OPTIONS=detect_leaks=0  # the bugs are NULL dereferences; LeakSanitizer cannot run under ptrace
cd "$SSE_TREE"
make tests CFLAGS="-g -O0 -fsanitize=address -fno-omit-frame-pointer"
if ./cJSON_test > cJSON_test.out 2>&1; then echo "cJSON_test: passed"; else echo "cJSON_test: FAILED"; cat cJSON_test.out; exit 1; fi
tests="parse_examples parse_number parse_hex4 parse_string parse_array parse_object parse_value
print_string print_number print_array print_object print_value misc_tests parse_with_opts
compare_tests cjson_add readme_examples minify_tests"
out=tests/sse-bin
mkdir -p "$out"
cc=(gcc -g -O0 -fsanitize=address -fno-omit-frame-pointer -I. -Itests/unity/src)
"${cc[@]}" -c tests/unity/src/unity.c -o "$out/unity.o"
printf '%s\n' $tests | xargs -P2 -I{} "${cc[@]}" tests/{}.c "$out/unity.o" -o "$out/{}" -lm
failed=0
cd tests
for t in $tests; do
    if ./sse-bin/"$t" > "sse-bin/$t.out" 2>&1; then
        echo "$t: passed ($(tail -n 2 "sse-bin/$t.out" | head -n 1))"
    else
        echo "$t: FAILED"; cat "sse-bin/$t.out"; failed=1
    fi
done
exit "$failed"
