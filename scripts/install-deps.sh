#!/usr/bin/env bash
# Installs the Debian packages StreamRelay builds, tests and runs with, if missing.
# Usage: scripts/install-deps.sh [extra packages…]
#        scripts/install-deps.sh --build-packages   prints the packages `swift build` needs, one per
#        line, and installs nothing (deploy/Dockerfile's build stage must install each of them:
#        scripts/deploy_checks.py dockerfile checks it).
# Also: Node.js (the JS client kit's `node --test`, when no `node` is on PATH), Debian's
# node-typescript (type check of clients/js/index.d.ts), chromium + chromium-driver + Noto fonts
# (the browser end-to-end test), libjs-markdown-it (the web chat demo's Markdown renderer, served
# by its nginx from /usr/share/javascript), pngquant (the test's UPDATE_SCREENSHOTS=1 run shrinks
# the committed screenshots with it), and that test's pinned pip packages; node-eventsource and the
# pinned pip packages of the interoperability suite (tests/interop, docs/INTEROP.md); python3-venv
# and the agent-answers suite's pinned packages in .venv/agents (tests/agents, docs/AGENTS.md).
set -euo pipefail
cd "$(dirname "$0")/.."
# prometheus: only for promtool (the tests check /metrics and deploy/prometheus with it).
# stunnel4: the TLS sidecar recipe for managed Redis (TLSSidecarTests).
# The build's: the C libraries of Package.swift's system-library targets (hiredis, libevent, libjwt,
# libcurl, OpenSSL's libcrypto) and mimalloc, with pkg-config.
build_pkgs=(pkg-config libhiredis-dev libevent-dev libjwt-dev libcurl4-openssl-dev libssl-dev libmimalloc-dev)
if [ "${1:-}" = "--build-packages" ]; then printf '%s\n' "${build_pkgs[@]}"; exit 0; fi
pkgs=("${build_pkgs[@]}" redis-server redis-tools nginx openssl
      curl node-typescript chromium chromium-driver fonts-noto-core libjs-markdown-it pngquant prometheus stunnel4 node-eventsource "$@")
command -v node >/dev/null 2>&1 || pkgs+=(nodejs)
command -v python3 >/dev/null 2>&1 || pkgs+=(python3)
python3 -m pip --version >/dev/null 2>&1 || pkgs+=(python3-pip)
pkgs+=(python3-venv)
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
# Pinned Python packages of the browser test (clients/js/e2e/requirements.txt). Debian's own
# python3 is "externally managed" (PEP 668): there pip needs --break-system-packages.
req=clients/js/e2e/requirements.txt
if ! python3 -c 'import selenium, sys; sys.exit(selenium.__version__ != "4.25.0")' 2>/dev/null; then
  python3 -m pip install --quiet --disable-pip-version-check -r "$req" 2>/dev/null \
    || python3 -m pip install --quiet --disable-pip-version-check --break-system-packages -r "$req"
fi
# The Durable Streams Python client that OffsetReadLifecycleTests reads an answer with (pinned).
req=Tests/RelayIntegrationTests/python/requirements.txt
if ! python3 -c 'import importlib.metadata as m, sys; sys.exit(m.version("durable-streams") != "0.1.0")' 2>/dev/null; then
  python3 -m pip install --quiet --disable-pip-version-check -r "$req" 2>/dev/null \
    || python3 -m pip install --quiet --disable-pip-version-check --break-system-packages -r "$req"
fi
# Pinned Python packages of the interoperability suite (tests/interop/requirements.txt): the
# third-party SSE clients it runs. Installed when one of the pins is not what is installed.
req=tests/interop/requirements.txt
if ! python3 - "$req" <<'PY' 2>/dev/null
import sys
from importlib.metadata import version
for line in open(sys.argv[1]):
    line = line.split("#")[0].strip()
    if line:
        name, pin = line.split("==")
        assert version(name) == pin, name
PY
then
  python3 -m pip install --quiet --disable-pip-version-check -r "$req" 2>/dev/null \
    || python3 -m pip install --quiet --disable-pip-version-check --break-system-packages -r "$req"
fi
# The agent-answers suite's pinned packages (tests/agents/requirements.txt: pydantic-ai and
# what it needs) in their own virtual environment, .venv/agents: their pins (pydantic 2,
# typing_extensions) differ from the system packages the other suites pin. Made again when a
# pin is not what the environment holds.
req=tests/agents/requirements.txt
venv=.venv/agents
if ! "$venv/bin/python3" - "$req" <<'PY' 2>/dev/null
import sys
from importlib.metadata import version
for line in open(sys.argv[1]):
    line = line.split("#")[0].strip()
    if line:
        name, pin = line.split("==")
        assert version(name) == pin, name
PY
then
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/python3" -m pip install --quiet --disable-pip-version-check -r "$req"
fi
exit 0
