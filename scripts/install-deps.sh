#!/usr/bin/env bash
# Installs the Debian packages StreamRelay builds, tests and runs with, if missing.
# Usage: scripts/install-deps.sh [extra packages…]
set -euo pipefail
# prometheus: only for promtool (the tests check /metrics and deploy/prometheus with it).
pkgs=(pkg-config libhiredis-dev libevent-dev libjwt-dev libcurl4-openssl-dev libssl-dev redis-server redis-tools nginx openssl prometheus "$@")
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}" >&2
  # Keep the packages' maintainer scripts from starting services at all (invoke-rc.d and
  # deb-systemd-invoke ask policy-rc.d; 101 = "action forbidden"), unless a policy exists.
  made_policy=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null && $SUDO chmod +x /usr/sbin/policy-rc.d && made_policy=1
  fi
  $SUDO apt-get update -qq
  rc=0
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null || rc=$?
  [ "$made_policy" = 1 ] && $SUDO rm -f /usr/sbin/policy-rc.d
  [ "$rc" -eq 0 ] || exit "$rc"
fi
# Debian's nginx, redis-server and prometheus packages enable system services; the
# project runs its own instances on temporary sockets and ports and uses only promtool
# from prometheus, so services that this script has just installed are stopped again
# (prometheus also disabled: nothing here needs a Prometheus server on :9090). Services
# that were already installed are left alone.
if command -v systemctl >/dev/null 2>&1; then
  for svc in redis-server nginx prometheus; do
    for p in "${missing[@]:-}"; do
      [ "$p" = "$svc" ] && { $SUDO systemctl stop "$svc" >/dev/null 2>&1 || true; }
      [ "$p" = "$svc" ] && [ "$svc" = prometheus ] && { $SUDO systemctl disable prometheus >/dev/null 2>&1 || true; }
    done
  done
fi
exit 0
