#!/usr/bin/env bash
# Run one PoC: convert the GIF $SSE_POC to RGB with the gif2rgb the build step made.
# Its pixels index past its colour map. The PoC still triggers the bug when
# AddressSanitizer reports (exit 86: the unfixed gif2rgb reads past the colour map) or
# gif2rgb dies of a signal; refusing the file (the upstream fix exits 253 with "Image is
# defective") or any other orderly exit counts as handled.
set -uo pipefail
export ASAN_OPTIONS=detect_leaks=0:exitcode=86
"$SSE_TREE/gif2rgb" -1 -o "$SSE_TREE/poc.rgb" "$SSE_POC"
status=$?
echo "gif2rgb exited with status $status"
if [ "$status" -eq 86 ] || { [ "$status" -gt 128 ] && [ "$status" -le 192 ]; }; then
    exit 1
fi
exit 0
