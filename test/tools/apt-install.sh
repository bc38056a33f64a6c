#!/usr/bin/env bash
# Installs the Debian packages the tests use, only those missing (needs root or sudo).
set -euo pipefail
missing=()
for p in "$@"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p"); done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "[deps] apt-get install ${missing[*]}"
SUDO=; [ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
