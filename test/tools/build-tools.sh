#!/usr/bin/env bash
# Builds the real components the tests and `make cluster` use, from the Go module proxy, once per version.
# Binaries land in ${BOXYARD_CACHE:-~/.cache/boxyard}/bin/<name>-<version>; a finished build is never redone.
# Usage: build-tools.sh [tool ...]   (default: all). Tools: minio etcd kube helm kwok coredns traefik otelcol localpath seaweedfs
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
COREDNS_VERSION=v1.15.0
TRAEFIK_VERSION=v3.6.12  # v3.7.x needs modules the proxy refuses (a go-http-auth fork commit, lego DNS-provider SDKs)
# The OpenTelemetry Collector core (OTLP receiver) with contrib's file exporter; v0.164.0's otlpreceiver needs
# internal/statusutil v0.164.0, which the proxy refuses.
OTELCOL_VERSION=v0.165.0
# The real node's dynamic provisioner (hostPath volumes under the node's state), for TerminalPool homes.
LOCAL_PATH_VERSION=v0.0.30
# The second S3 server the storage suites run against (MinIO's upstream is archived). No release tags on the proxy:
# the newest commit it serves.
SEAWEEDFS_VERSION=v0.0.0-20261109003541-7506e5f91cd6

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
  # Done when every binary is there (a version that gained a binary builds again).
  built() { local p; for p in "$@"; do [ -x "$BIN/$(basename "$p")-$version" ] || return 1; done; }
  built "$@" && return 0
  with_lock "$name"; built "$@" && return 0
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

# Modules whose go.mod replaces dependencies with forks (traefik) cannot be `go install`ed either. Build them from a
# wrapper module that starts as a copy of the release's go.mod and go.sum, so its fork replaces, excludes and pinned
# requirements all apply (a local-path replace there would need its target created in the wrapper dir first).
fork_build() { # name version module module_version ldflags pkg
  local name=$1 version=$2 module=$3 modver=$4 ldflags=$5 pkg=$6 out=$BIN/$(basename "$6")-$2
  [ -x "$out" ] && return 0
  with_lock "$name"; [ -x "$out" ] && return 0
  local dir; dir=$(mktemp -d); log "building $name $version from a wrapper module in $dir (cold builds take 5-15 minutes) ..."
  local json; json=$(go mod download -json "$module@$modver")
  cp "$(sed -n 's/.*"GoMod": "\(.*\)".*/\1/p' <<<"$json")" "$dir/go.mod"
  cp "$(sed -n 's/.*"Dir": "\(.*\)".*/\1/p' <<<"$json")/go.sum" "$dir/go.sum"; chmod u+w "$dir/go.mod" "$dir/go.sum"
  (cd "$dir" && go mod edit -module "boxyard.local/tools-$name" -toolchain=none)
  (cd "$dir" && GOFLAGS=-mod=mod go get "$module@$modver" >/dev/null 2>&1 || (cd "$dir" && GOFLAGS=-mod=mod go get "$module@$modver"))
  log "  go build $pkg"
  (cd "$dir" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "$ldflags" -o "$BIN/.$(basename "$pkg").tmp" "$pkg")
  mv "$BIN/.$(basename "$pkg").tmp" "$out"; rm -rf "$dir"; log "built $out"
}

build_minio() { go_install minio "$MINIO_VERSION" "github.com/minio/minio@$MINIO_VERSION"; }
build_helm()  { go_install helm "$HELM_VERSION" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"; }
build_kwok()  { go_install kwok "$KWOK_VERSION" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"; }
build_localpath() { go_install local-path-provisioner "$LOCAL_PATH_VERSION" "github.com/rancher/local-path-provisioner@$LOCAL_PATH_VERSION"; }
# CoreDNS' default plugin set (core/plugin/zplugin.go) includes kubernetes; its version is a constant in coremain.
build_coredns() { go_install coredns "$COREDNS_VERSION" "github.com/coredns/coredns@$COREDNS_VERSION"; }
build_traefik() {
  # The webui's embedded static dir ships in the module with only a placeholder: no dashboard, which we don't use.
  [ -x "$BIN/traefik-$TRAEFIK_VERSION" ] && return 0
  local vpkg=github.com/traefik/traefik/v3/pkg/version src codename
  src=$(go mod download -json "github.com/traefik/traefik/v3@$TRAEFIK_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  codename=$(sed -n 's/^ *CODENAME: *//p' "$src/.github/workflows/release.yaml" 2>/dev/null | head -1)
  fork_build traefik "$TRAEFIK_VERSION" github.com/traefik/traefik/v3 "$TRAEFIK_VERSION" \
    "-s -w -X $vpkg.Version=${TRAEFIK_VERSION#v} -X $vpkg.Codename=${codename:-unknown}" \
    github.com/traefik/traefik/v3/cmd/traefik
}
# A minimal OpenTelemetry Collector for the tracing tests: the OTLP receiver (gRPC and HTTP) and the file exporter
# (OTLP JSON lines the tests read). Built from a generated main package, as the collector's builder (ocb) would;
# two components keep the cold build to a few minutes.
build_otelcol() {
  local out=$BIN/otelcol-$OTELCOL_VERSION
  [ -x "$out" ] && return 0
  with_lock otelcol; [ -x "$out" ] && return 0
  local dir; dir=$(mktemp -d); log "building otelcol $OTELCOL_VERSION (OTLP receiver + file exporter) in $dir ..."
  cat >"$dir/main.go" <<'GO'
// The tests' OpenTelemetry Collector: OTLP in, OTLP JSON files out.
package main

import (
	"log"

	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/fileexporter"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/service/telemetry/otelconftelemetry"
)

func components() (otelcol.Factories, error) {
	receivers, err := otelcol.MakeFactoryMap[receiver.Factory](otlpreceiver.NewFactory())
	if err != nil {
		return otelcol.Factories{}, err
	}
	exporters, err := otelcol.MakeFactoryMap[exporter.Factory](fileexporter.NewFactory())
	if err != nil {
		return otelcol.Factories{}, err
	}
	return otelcol.Factories{Receivers: receivers, Exporters: exporters, Telemetry: otelconftelemetry.NewFactory()}, nil
}

func main() {
	settings := otelcol.CollectorSettings{
		BuildInfo: component.BuildInfo{Command: "otelcol", Description: "Boxyard's test collector", Version: "VERSION"},
		Factories: components,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{
			ResolverSettings: confmap.ResolverSettings{
				ProviderFactories: []confmap.ProviderFactory{fileprovider.NewFactory(), envprovider.NewFactory()},
				DefaultScheme:     "env",
			},
		},
	}
	if err := otelcol.NewCommand(settings).Execute(); err != nil {
		log.Fatal(err)
	}
}
GO
  sed -i "s/\"VERSION\"/\"$OTELCOL_VERSION\"/" "$dir/main.go"
  printf 'module boxyard.local/tools-otelcol\n\ngo 1.25\n' >"$dir/go.mod"
  (cd "$dir" && GOFLAGS=-mod=mod go get "go.opentelemetry.io/collector/otelcol@$OTELCOL_VERSION" "go.opentelemetry.io/collector/receiver/otlpreceiver@$OTELCOL_VERSION" \
    "github.com/open-telemetry/opentelemetry-collector-contrib/exporter/fileexporter@$OTELCOL_VERSION" >/dev/null)
  # No `go mod tidy`: it would fetch the components' test-only dependencies, some of which the proxy refuses.
  log "  go build otelcol"
  (cd "$dir" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w" -o "$BIN/.otelcol.tmp" .)
  mv "$BIN/.otelcol.tmp" "$out"; rm -rf "$dir"; log "built $out"
}
# SeaweedFS' go.mod replaces a dependency (go-bip39 with a fork), so it is built like traefik, from its own go.mod.
# Its version variable stays at the source's default; the binary is keyed by the module version above.
build_seaweedfs() {
  fork_build seaweedfs "$SEAWEEDFS_VERSION" github.com/seaweedfs/seaweedfs "$SEAWEEDFS_VERSION" "-s -w" \
    github.com/seaweedfs/seaweedfs/weed
}
build_etcd()  {
  # etcd's server module is its main package; siblings (api, client, pkg) share the release version.
  [ -x "$BIN/etcd-$ETCD_VERSION" ] && return 0
  wrapper_build etcd "$ETCD_VERSION" go.etcd.io/etcd/server/v3 "$ETCD_VERSION" "$ETCD_VERSION" "-s -w" go.etcd.io/etcd/server/v3
  [ -x "$BIN/etcd-$ETCD_VERSION" ] || mv "$BIN/v3-$ETCD_VERSION" "$BIN/etcd-$ETCD_VERSION"
}
build_kube() {
  local minor=${KUBE_VERSION#v1.}
  local vpkg=k8s.io/component-base/version
  wrapper_build kube "$KUBE_VERSION" k8s.io/kubernetes "$KUBE_VERSION" "v0.$minor" \
    "-s -w -X $vpkg.gitVersion=$KUBE_VERSION -X $vpkg.gitMajor=1 -X $vpkg.gitMinor=${minor%%.*} -X $vpkg.gitTreeState=clean" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl \
    k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy
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
KUBELET=$BIN/kubelet-$KUBE_VERSION
KUBE_PROXY=$BIN/kube-proxy-$KUBE_VERSION
HELM=$BIN/helm-$HELM_VERSION
KWOK=$BIN/kwok-$KWOK_VERSION
COREDNS=$BIN/coredns-$COREDNS_VERSION
TRAEFIK=$BIN/traefik-$TRAEFIK_VERSION
OTELCOL=$BIN/otelcol-$OTELCOL_VERSION
LOCAL_PATH_PROVISIONER=$BIN/local-path-provisioner-$LOCAL_PATH_VERSION
SEAWEEDFS=$BIN/weed-$SEAWEEDFS_VERSION
P
}

if [ "${1:-}" = "--paths" ]; then print_paths; exit 0; fi
tools=("$@"); [ ${#tools[@]} -gt 0 ] || tools=(minio etcd kube helm kwok coredns traefik otelcol localpath seaweedfs)
# Two queues side by side: kube (the longest) alone, the rest one after the other. On a cold cache this overlaps
# module downloads and links with compiles; each build holds its own lock and the Go caches are shared safely.
kube=() rest=()
for t in "${tools[@]}"; do if [ "$t" = kube ]; then kube+=("$t"); else rest+=("$t"); fi; done
( for t in "${kube[@]}"; do "build_$t"; done ) & kube_pid=$!
( for t in "${rest[@]}"; do "build_$t"; done ) & rest_pid=$!
status=0
wait "$kube_pid" || status=$?
wait "$rest_pid" || status=$?
[ "$status" -eq 0 ] || { log "a build failed (exit $status): see the messages above"; exit "$status"; }
print_paths >"$CACHE/tools.env"
