#!/usr/bin/env bash
# Installs the Debian packages StreamRelay builds, tests and runs with, if missing.
# Usage: scripts/install-deps.sh [extra packages…]
set -euo pipefail
pkgs=(pkg-config libhiredis-dev libevent-dev libjwt-dev libcurl4-openssl-dev libssl-dev redis-server redis-tools nginx openssl "$@")
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# Debian's nginx and redis-server packages start system services when installed; the
# project runs its own instances on temporary sockets and ports, so services that this
# script has just installed are stopped again. Services that were already installed are
# left alone.
if command -v systemctl >/dev/null 2>&1; then
  for svc in redis-server nginx; do
    for p in "${missing[@]:-}"; do
      [ "$p" = "$svc" ] && { $SUDO systemctl stop "$svc" >/dev/null 2>&1 || true; }
    done
  done
fi
exit 0
