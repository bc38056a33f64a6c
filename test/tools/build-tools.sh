#!/usr/bin/env bash
# Builds the real components the tests and `make cluster` use, from the Go module proxy, once per version.
# Binaries land in ${BOXYARD_CACHE:-~/.cache/boxyard}/bin/<name>-<version>; a finished build is never redone.
# Usage: build-tools.sh [tool ...]   (default: all). Tools: minio etcd kube helm kwok
set -euo pipefail

CACHE=${BOXYARD_CACHE:-$HOME/.cache/boxyard}
BIN=$CACHE/bin
mkdir -p "$BIN"

# Pinned versions: bump here, the cache key follows.
MINIO_VERSION=v0.0.0-20260212201848-7aac2a2c5b7c  # last commit on the proxy (upstream archived; no semver tags)
ETCD_VERSION=v3.6.16
KUBE_VERSION=v1.36.3
HELM_VERSION=v3.21.4
KWOK_VERSION=v0.8.0

log() { printf '[tools] %s\n' "$*" >&2; }

command -v go >/dev/null || { log "Go is required to build the test components (MinIO, etcd, kube-apiserver, helm, kwok): install Go >= 1.25 and retry."; exit 1; }

# Run one build under an exclusive lock so parallel callers (make test and make cluster) share it.
with_lock() { exec 9>"$BIN/.$1.lock"; flock 9; }

# go install into a scratch GOBIN, then move into place: a half-built tool is never visible.
go_install() { # name version pkg@query
  local name=$1 version=$2 spec=$3 out=$BIN/$1-$2
  [ -x "$out" ] && return 0
  with_lock "$name"; [ -x "$out" ] && return 0
  local tmp; tmp=$(mktemp -d); log "building $name $version (go install $spec) ..."
  GOBIN=$tmp CGO_ENABLED=0 go install -trimpath "$spec"
  mv "$tmp/$(basename "${spec%@*}")" "$out"; rm -rf "$tmp"; log "built $out"
}

# Modules whose go.mod replaces sibling modules with local paths (kubernetes, etcd) cannot be `go install`ed.
# Build them from a wrapper module that replaces each local path with the published module of the same release.
wrapper_build() { # name version module module_version sibling_version ldflags pkg...
  local name=$1 version=$2 module=$3 modver=$4 sibver=$5 ldflags=$6; shift 6
  local first=$BIN/$(basename "$1")-$version
  [ -x "$first" ] && return 0
  with_lock "$name"; [ -x "$first" ] && return 0
  local dir; dir=$(mktemp -d); log "building $name $version from a wrapper module in $dir (cold builds take 10-20 minutes) ..."
  local gomod; gomod=$(go mod download -json "$module@$modver" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  {
    echo "module boxyard.local/tools-$name"; echo; echo "go 1.25"; echo
    grep -E '^\s+\S+ => \.\.?/' "$gomod" | awk -v v="$sibver" '{print "replace " $1 " => " $1 " " v}'
  } >"$dir/go.mod"
  (cd "$dir" && GOFLAGS=-mod=mod go get "${@/%/@$modver}" >/dev/null 2>&1 || (cd "$dir" && GOFLAGS=-mod=mod go get "${@/%/@$modver}"))
  local pkg
  for pkg in "$@"; do
    log "  go build $pkg"
    (cd "$dir" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "$ldflags" -o "$BIN/.$(basename "$pkg").tmp" "$pkg")
    mv "$BIN/.$(basename "$pkg").tmp" "$BIN/$(basename "$pkg")-$version"
  done
  rm -rf "$dir"; log "built $name $version"
}

build_minio() { go_install minio "$MINIO_VERSION" "github.com/minio/minio@$MINIO_VERSION"; }
build_helm()  { go_install helm "$HELM_VERSION" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"; }
build_kwok()  { go_install kwok "$KWOK_VERSION" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"; }
build_etcd()  {
  # etcd's server module is its main package; siblings (api, client, pkg) share the release version.
  wrapper_build etcd "$ETCD_VERSION" go.etcd.io/etcd/server/v3 "$ETCD_VERSION" "$ETCD_VERSION" "-s -w" go.etcd.io/etcd/server/v3
  [ -x "$BIN/etcd-$ETCD_VERSION" ] || mv "$BIN/v3-$ETCD_VERSION" "$BIN/etcd-$ETCD_VERSION"
}
build_kube() {
  local minor=${KUBE_VERSION#v1.}
  local vpkg=k8s.io/component-base/version
  wrapper_build kube "$KUBE_VERSION" k8s.io/kubernetes "$KUBE_VERSION" "v0.$minor" \
    "-s -w -X $vpkg.gitVersion=$KUBE_VERSION -X $vpkg.gitMajor=1 -X $vpkg.gitMinor=${minor%%.*} -X $vpkg.gitTreeState=clean" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl
}

# Print the resolved paths as shell assignments (sourced by the Makefile and read by the test harness).
print_paths() {
  cat <<P
MINIO=$BIN/minio-$MINIO_VERSION
ETCD=$BIN/etcd-$ETCD_VERSION
KUBE_APISERVER=$BIN/kube-apiserver-$KUBE_VERSION
KUBE_CONTROLLER_MANAGER=$BIN/kube-controller-manager-$KUBE_VERSION
KUBE_SCHEDULER=$BIN/kube-scheduler-$KUBE_VERSION
KUBECTL=$BIN/kubectl-$KUBE_VERSION
HELM=$BIN/helm-$HELM_VERSION
KWOK=$BIN/kwok-$KWOK_VERSION
P
}

if [ "${1:-}" = "--paths" ]; then print_paths; exit 0; fi
tools=("$@"); [ ${#tools[@]} -gt 0 ] || tools=(minio etcd kube helm kwok)
for t in "${tools[@]}"; do "build_$t"; done
print_paths >"$CACHE/tools.env"
