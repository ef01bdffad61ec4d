#!/usr/bin/env bash
# Installs the Debian packages StreamRelay builds, tests and runs with, if missing.
# Usage: scripts/install-deps.sh [extra packages…]
# Also: Node.js (the JS client kit's `node --test`, when no `node` is on PATH), Debian's
# node-typescript (type check of clients/js/index.d.ts), chromium + chromium-driver + Noto fonts
# (the browser end-to-end test), and that test's pinned pip packages.
set -euo pipefail
cd "$(dirname "$0")/.."
pkgs=(pkg-config libhiredis-dev libevent-dev libjwt-dev libcurl4-openssl-dev libssl-dev redis-server redis-tools nginx openssl
      curl node-typescript chromium chromium-driver fonts-noto-core "$@")
command -v node >/dev/null 2>&1 || pkgs+=(nodejs)
command -v python3 >/dev/null 2>&1 || pkgs+=(python3)
python3 -m pip --version >/dev/null 2>&1 || pkgs+=(python3-pip)
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
# Pinned Python packages of the browser test (clients/js/e2e/requirements.txt). Debian's own
# python3 is "externally managed" (PEP 668): there pip needs --break-system-packages.
req=clients/js/e2e/requirements.txt
if ! python3 -c 'import selenium, sys; sys.exit(selenium.__version__ != "4.25.0")' 2>/dev/null; then
  python3 -m pip install --quiet --disable-pip-version-check -r "$req" 2>/dev/null \
    || python3 -m pip install --quiet --disable-pip-version-check --break-system-packages -r "$req"
fi
exit 0
