#!/bin/sh
# Run ./greet on every tests/cases/*.in and compare its output with the .out next to it.
cd "$(dirname "$0")/.." || exit 2
# LeakSanitizer needs ptrace-like rights some containers deny; leaks are not this bug.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0}"
failed=0
for input in tests/cases/*.in; do
    expected="${input%.in}.out"
    if actual=$(./greet < "$input" 2>/dev/null) && [ "$actual" = "$(cat "$expected")" ]; then
        echo "PASS $input"
    else
        echo "FAIL $input"
        failed=1
    fi
done
exit $failed
