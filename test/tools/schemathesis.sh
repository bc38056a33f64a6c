#!/usr/bin/env bash
# Installs schemathesis (the OpenAPI fuzzer of test/fuzz) into a cached virtualenv, once per version:
# ${BOXYARD_CACHE:-~/.cache/boxyard}/schemathesis-<version>/bin/st. An interrupted install is redone (the stamp
# .installed is written last).
# Usage: schemathesis.sh            install when missing
#        schemathesis.sh --path     print the path of `st` (installed or not)
set -euo pipefail

# Pinned: bump here, the cache key follows. Its CLI (st run --checks/--max-examples/--seed/--phases) is 4.x's.
VERSION=4.32.5
CACHE=${BOXYARD_CACHE:-$HOME/.cache/boxyard}
DIR=$CACHE/schemathesis-$VERSION

if [ "${1:-}" = --path ]; then echo "$DIR/bin/st"; exit 0; fi
[ -f "$DIR/.installed" ] && [ -x "$DIR/bin/st" ] && exit 0

PYTHON=${PYTHON:-python3}
command -v "$PYTHON" >/dev/null || { echo "[deps] schemathesis needs Python >= 3.10 with venv (apt-get install python3-venv)" >&2; exit 1; }
mkdir -p "$CACHE"
exec 9>"$CACHE/.schemathesis.lock"; flock 9
[ -f "$DIR/.installed" ] && [ -x "$DIR/bin/st" ] && exit 0

echo "[deps] installing schemathesis $VERSION into $DIR"
rm -rf "$DIR"
# Built at its final path (a venv's scripts carry absolute shebangs, so it cannot be moved into place).
"$PYTHON" -m venv "$DIR"
"$DIR/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$VERSION" || { rm -rf "$DIR"; exit 1; }
"$DIR/bin/st" --version >/dev/null
touch "$DIR/.installed"
