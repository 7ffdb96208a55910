#!/usr/bin/env bash
# Build giflib's libraries and utilities with its own Makefile, with AddressSanitizer
# (gif2rgb's out-of-bounds colour-map read then ends in an ASan report). `make all`
# would also build the manual pages (xmlto), which neither the PoCs nor the tests need.
set -euo pipefail
utils="gif2rgb gifbuild giffix giftext giftool gifclrmp gifbg gifcolor gifecho giffilter
gifhisto gifinto gifsponge gifwedge"
make -j2 OFLAGS="-O0 -g -fsanitize=address -fno-omit-frame-pointer" libgif.a libutil.a $utils
