#!/usr/bin/env bash
# Installs the Debian packages StreamRelay builds, tests and runs with, if missing.
# Usage: scripts/install-deps.sh [extra packages…]
set -euo pipefail
pkgs=(pkg-config libhiredis-dev libevent-dev libjwt-dev libcurl4-openssl-dev libssl-dev redis-server redis-tools nginx openssl "$@")
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# Debian's nginx and redis-server packages start system services; the project runs
# its own instances on temporary sockets and ports, so those are not needed.
if command -v systemctl >/dev/null 2>&1; then
  systemctl stop redis-server nginx >/dev/null 2>&1 || true
fi
