#!/usr/bin/env bash
# Builds the Wine tier's two test programs with mingw-w64 into DIR, beside a filewatchd.exe:
# the stand-in bcryptprimitives.dll (README.md here says why) and holdopen.exe. Used by
# .ci/run for the debug build and by dist/test.sh for the release zip's binary.
#
#   tests/wine/build.sh DIR
set -euo pipefail
dir=${1:?usage: tests/wine/build.sh DIR}
here=$(dirname "$0")
x86_64-w64-mingw32-gcc -shared -O2 -o "$dir/bcryptprimitives.dll" \
  "$here/bcryptprimitives.c" "$here/bcryptprimitives.def" -ladvapi32
x86_64-w64-mingw32-gcc -municode -O2 -o "$dir/holdopen.exe" "$here/holdopen.c"
