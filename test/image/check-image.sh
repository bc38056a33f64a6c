#!/usr/bin/env bash
# Runs an image archive from build-image.sh the way the cluster does: imported into a private containerd (its own
# root, state and socket under $IMAGE_TEST_DIR, default /tmp/imgtest), run by runc with the image's user (10001),
# a read-only root filesystem and a tmpfs on /tmp. Stops that containerd and removes the folder at the end.
#   test/image/check-image.sh [archive.tar]    (default: TAR from $BOXYARD_CACHE/images/latest.env)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BOXYARD_CACHE=${BOXYARD_CACHE:-$HOME/.cache/boxyard}
TAR=${1:-$(sed -n 's/^TAR=//p' "$BOXYARD_CACHE/images/latest.env")}
REF=$(tar -xOf "$TAR" manifest.json | sed -E 's/.*"RepoTags":\["([^"]+)".*/\1/')
DIR=${IMAGE_TEST_DIR:-/tmp/imgtest}
SOCK=$DIR/containerd.sock
"$ROOT/test/tools/apt-install.sh" containerd runc

rm -rf "$DIR" && mkdir -p "$DIR"
# restrict_oom_score_adj: root here lacks CAP_SYS_RESOURCE (see shared notes on a real node); it only matters to
# CRI-created containers, but the config is the one a node uses.
cat >"$DIR/config.toml" <<EOF
version = 2
root = "$DIR/root"
state = "$DIR/state"
[grpc]
  address = "$SOCK"
[plugins."io.containerd.grpc.v1.cri"]
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
EOF
containerd --config "$DIR/config.toml" >"$DIR/containerd.log" 2>&1 &
CONTAINERD=$!
stop() {
  kill "$CONTAINERD" 2>/dev/null && wait "$CONTAINERD" 2>/dev/null || true
  # Leftover overlay mounts of a task that did not end would keep the folder busy.
  grep -o " $DIR/[^ ]*" /proc/mounts | sort -r | xargs -r -n1 umount 2>/dev/null || true
  rm -rf "$DIR"
}
trap stop EXIT
for _ in $(seq 50); do [ -S "$SOCK" ] && break; sleep 0.2; done
ctr() { command ctr -a "$SOCK" -n k8s.io "$@"; }

echo "[check] import $TAR"
ctr images import "$TAR" >/dev/null
images=$(ctr images ls -q)   # not piped into grep -q: ctr would die of SIGPIPE, and pipefail fail the check
grep -qx "$REF" <<<"$images" || { echo "[check] $REF not listed after import" >&2; exit 1; }
n=0
run() {   # run <expected output regexp> -- <command...>: a fresh container each time, as a pod would get
  local expect=$1; shift 2
  n=$((n + 1))
  local out
  out=$(ctr run --rm --read-only --snapshotter overlayfs \
    --mount "type=tmpfs,src=tmpfs,dst=/tmp,options=rw:nosuid:nodev:mode=1777" "$REF" "check-$n" "$@" 2>&1) || true
  if grep -Eq -- "$expect" <<<"$out"; then echo "[check] ok   $* -> $(head -c 120 <<<"$out" | tr '\n' ' ')"
  else echo "[check] FAIL $*: expected /$expect/, got:"; echo "$out"; failed=1; fi
}
failed=0
# No command: the image's ENTRYPOINT and CMD (`boxyard --help`).
out=$(ctr run --rm --read-only --snapshotter overlayfs "$REF" check-0 2>&1) || true
if grep -q '^usage: boxyard' <<<"$out"; then echo "[check] ok   (entrypoint) -> $(head -1 <<<"$out")"; else echo "[check] FAIL entrypoint: $out"; failed=1; fi
run '^usage: boxyard' -- boxyard --help
run '^42 uid=10001\(boxyard\) gid=10001\(boxyard\) HOME=/tmp pwd=/app$' -- bash -c 'echo $((6*7)) $(id | cut -d" " -f1-2) HOME=$HOME pwd=$PWD'
# The terminal's session user (uid 1000, TerminalPool's default): a name in the prompt, `whoami` works.
run '^user:x:1000:1000:Boxyard terminal user:/home/user:/bin/bash$' -- getent passwd 1000
run '^ro-root ro-app rw-tmp $' -- sh -c 'for d in root:/etc app:/app tmp:/tmp; do touch ${d#*:}/x 2>/dev/null && printf "rw-%s " ${d%:*} || printf "ro-%s " ${d%:*}; done; echo'

run '^v24\.' -- node --version
# node-pty's addon, compiled against Node 24 headers and bookworm's glibc: a shell on a pseudo-terminal.
run '^pty 42' -- node -e "const pty = require('node-pty'); const p = pty.spawn('/bin/bash', ['-c', 'echo \$((6*7))'], {}); let s = ''; p.onData((d) => (s += d)); p.onExit(() => console.log('pty', s.trim()))"
run '^usage: boxyard operator|--kubeconfig' -- boxyard operator --help
run 'BOXYARD_AGENT_SESSION_ID: required' -- boxyard terminal-agent
run '^procps ok' -- sh -c 'ps -o pid= -p 1 >/dev/null && test -s /etc/ssl/certs/ca-certificates.crt && echo procps ok'

# A session pod: `boxyard terminal-agent` listening on TCP, reached from a second process in the same container
# through the gateway's handshake (services/terminal/src/agent/handshake.ts). (That the agent keeps its environment
# from its shell needs the pod's root start and privilege drop: the real-node suite, test/cluster, checks it.)
secret=check-image-session-secret-0123456789abcdefgh
keys=$(cd "$ROOT" && node -e "import('./services/terminal/src/agent/handshake.ts').then(({ sessionKeys }) => { const k = sessionKeys(process.argv[1]); console.log(k.agentKey, k.gatewayPublicKey) })" "$secret")
ctr run -d --read-only --snapshotter overlayfs --mount "type=tmpfs,src=tmpfs,dst=/tmp,options=rw:nosuid:nodev:mode=1777" \
  --env BOXYARD_AGENT_SESSION_ID=s1 --env BOXYARD_AGENT_LISTEN=127.0.0.1:7681 --env BOXYARD_AGENT_KEY="${keys% *}" \
  --env BOXYARD_AGENT_GATEWAY_KEY="${keys#* }" \
  --env BOXYARD_AGENT_EXPIRES_AT=$(( ($(date +%s) + 600) * 1000 )) "$REF" agent boxyard terminal-agent >/dev/null
status=""
for _ in $(seq 50); do
  status=$(ctr task exec --exec-id probe-$RANDOM agent node --input-type=module -e \
    "const { agentStatus } = await import('/app/services/terminal/src/agent/client.ts'); const { sessionKeys } = await import('/app/services/terminal/src/agent/handshake.ts'); console.log(JSON.stringify(await agentStatus('127.0.0.1:7681', { sessionId: 's1', keys: sessionKeys('$secret') })))" 2>/dev/null || true)
  [ -n "$status" ] && break
  sleep 0.2
done
if grep -q '"session_id":"s1"' <<<"$status"; then echo "[check] ok   terminal-agent in the container -> ${status:0:120}"
else echo "[check] FAIL terminal-agent: ${status:-no answer}"; ctr task ls; failed=1; fi
ctr task kill -s SIGKILL agent >/dev/null 2>&1 || true
for _ in $(seq 20); do ctr task delete agent >/dev/null 2>&1 && break; sleep 0.2; done
ctr containers delete agent >/dev/null 2>&1 || true

[ $failed -eq 0 ] && echo "[check] $REF: all checks passed" || { echo "[check] some checks failed"; exit 1; }
