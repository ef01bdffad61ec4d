#!/usr/bin/env bash
# validate-deploy.sh — validate StreamRelay's deployment files with real parsers and validators.
#
#   bash scripts/validate-deploy.sh [BINARY]
#
#   BINARY   optional built stream-relay (e.g. .build/release/stream-relay): the Dockerfile's
#            RUNTIME_PACKAGES must cover every Debian package the binary links (ldd + dpkg -S,
#            scripts/runtime-libs.sh). Without it that comparison is skipped with a notice.
#
# What it runs (installing what is missing: apt-get for nginx, docker-compose and python3-venv,
# pip in a private venv for kubernetes-validate and dockerfile-parse):
#   nginx       `nginx -t` on deploy/nginx.conf with loopback upstreams substituted (temp prefix,
#               pid and logs: nothing under /etc/nginx is touched), static checks of the SSE
#               directives, and a smoke test of real nginx in front of stub relays (unbuffered
#               streaming, headers, round robin, connect-failure retries, no POST replay).
#   compose     `docker-compose config` (Debian's docker-compose validates against the Compose
#               specification schema; no Docker engine needed) with .env.example, a check that
#               it fails without the secrets, and structural checks of the resolved file.
#   k8s         kubernetes-validate --strict (offline JSON schemas shipped in the package) against
#               Kubernetes 1.29 and 1.37, plus cross-object checks (probes, drain timing, ...).
#   Dockerfile  parsed by dockerfile-parse; multi-stage, non-root USER, HEALTHCHECK, ...
#   prometheus  `promtool check rules` and `promtool test rules` on deploy/prometheus (apt prometheus).
#   runtime     scripts/runtime-libs.sh self-test; RUNTIME_PACKAGES vs the binary when given.
#
# Exits non-zero if any check fails. Env: VALIDATE_VENV (default ~/.cache/stream-relay-deploy-venv),
# VALIDATE_SKIP_INSTALL=1 (use what is installed), VALIDATE_SKIP_SMOKE=1 (no nginx smoke test).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BINARY="${1-}"
VENV="${VALIDATE_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/stream-relay-deploy-venv}"
PASSED=0
FAILED=0
FAILED_NAMES=()
TMP="$(mktemp -d "${TMPDIR:-/tmp}/validate-deploy.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT

say() { printf '\n== %s\n' "$*"; }
pass() { PASSED=$((PASSED + 1)); printf 'PASS  %s\n' "$1"; }
fail() { FAILED=$((FAILED + 1)); FAILED_NAMES+=("$1"); printf 'FAIL  %s\n' "$1"; }
# run NAME CMD...: one validator step; its output is shown indented.
run() {
  local name="$1"; shift
  local out rc
  out="$("$@" 2>&1)"; rc=$?
  [ -z "$out" ] || sed 's/^/      /' <<<"$out"
  if [ "$rc" -eq 0 ]; then pass "$name"; else fail "$name (exit $rc)"; fi
  return "$rc"
}

# ------------------------------------------------------------------------------- tool installs
apt_install() {
  [ "${VALIDATE_SKIP_INSTALL:-0}" = 1 ] && { echo "missing $* and VALIDATE_SKIP_INSTALL=1" >&2; return 1; }
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "need root (or sudo) to apt-get install $*" >&2; return 1; }
    sudo="sudo"
  fi
  echo "apt-get install $*"
  # Keep package scripts from starting services (nginx would bind :80): policy-rc.d says no.
  local made_policy=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | $sudo tee /usr/sbin/policy-rc.d >/dev/null && $sudo chmod +x /usr/sbin/policy-rc.d && made_policy=1
  fi
  if [ -z "${APT_UPDATED-}" ]; then $sudo apt-get update -qq >/dev/null 2>&1 || true; APT_UPDATED=1; fi
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "$@" >"$TMP/apt.log" 2>&1
  local rc=$?
  [ "$made_policy" = 1 ] && $sudo rm -f /usr/sbin/policy-rc.d
  [ "$rc" -eq 0 ] || tail -20 "$TMP/apt.log" >&2
  return "$rc"
}

say "tools"
NGINX="$(command -v nginx || echo /usr/sbin/nginx)"
need_apt=()
[ -x "$NGINX" ] || need_apt+=(nginx)
command -v docker-compose >/dev/null || need_apt+=(docker-compose)
command -v python3 >/dev/null || need_apt+=(python3)
if [ ! -x "$VENV/bin/python" ] && command -v python3 >/dev/null && ! python3 -c 'import ensurepip, venv' 2>/dev/null; then
  need_apt+=(python3-venv)
fi
if [ "${#need_apt[@]}" -gt 0 ]; then
  command -v python3 >/dev/null || need_apt+=(python3-venv)
  apt_install "${need_apt[@]}" || { fail "install ${need_apt[*]} with apt-get"; }
fi
NGINX="$(command -v nginx || echo /usr/sbin/nginx)"

if [ ! -x "$VENV/bin/python" ]; then
  echo "python3 -m venv $VENV"
  python3 -m venv "$VENV" >"$TMP/venv.log" 2>&1 || { cat "$TMP/venv.log"; rm -rf "$VENV"; }
fi
if [ -x "$VENV/bin/python" ] && ! "$VENV/bin/python" -c 'import kubernetes_validate, dockerfile_parse, yaml' 2>/dev/null; then
  if [ "${VALIDATE_SKIP_INSTALL:-0}" = 1 ]; then
    echo "venv lacks kubernetes-validate/dockerfile-parse and VALIDATE_SKIP_INSTALL=1"
  else
    echo "pip install kubernetes-validate dockerfile-parse pyyaml (into $VENV)"
    "$VENV/bin/pip" install -q --disable-pip-version-check 'kubernetes-validate>=1.30' 'dockerfile-parse>=2.0' pyyaml \
      >"$TMP/pip.log" 2>&1 || tail -20 "$TMP/pip.log"
  fi
fi
PY="$VENV/bin/python"
if [ -x "$PY" ] && "$PY" -c 'import kubernetes_validate, dockerfile_parse, yaml' 2>/dev/null; then
  pass "python venv with kubernetes-validate $("$PY" -c 'import importlib.metadata as m; print(m.version("kubernetes-validate"))'), dockerfile-parse $("$PY" -c 'import importlib.metadata as m; print(m.version("dockerfile-parse"))')"
else
  fail "python venv with kubernetes-validate and dockerfile-parse"
  PY=""
fi
echo "nginx: $("$NGINX" -v 2>&1 || echo missing)"
echo "docker-compose: $(docker-compose version --short 2>/dev/null || echo missing)"

need_py() { [ -n "$PY" ] || { fail "$1 (no python venv)"; return 1; }; }

# ---------------------------------------------------------------------------------------- nginx
say "nginx: deploy/nginx.conf"
if [ -x "$NGINX" ]; then
  mkdir -p "$TMP/nginx"
  if scripts/render-nginx-conf.sh --listen 127.0.0.1:18080 127.0.0.1:18081 127.0.0.1:18082 127.0.0.1:18083 >"$TMP/nginx/nginx.conf"; then
    echo "upstreams substituted: $(grep -E '^\s*server 127' "$TMP/nginx/nginx.conf" | awk '{print $2}' | tr '\n' ' ')"
    run "nginx -t on deploy/nginx.conf (upstreams substituted, temp prefix)" \
      "$NGINX" -t -p "$TMP/nginx" -e "$TMP/nginx/error.log" -c "$TMP/nginx/nginx.conf" -g "pid $TMP/nginx/nginx.pid;"
  else
    fail "render deploy/nginx.conf with scripts/render-nginx-conf.sh"
  fi
  # A file without the upstream marker block must be refused, not silently passed through.
  if grep -v 'RELAY_UPSTREAMS' deploy/nginx.conf >"$TMP/nomarker.conf" && \
     ! scripts/render-nginx-conf.sh --conf "$TMP/nomarker.conf" 127.0.0.1:1 >/dev/null 2>&1; then
    pass "render-nginx-conf.sh refuses a config without markers"
  else
    fail "render-nginx-conf.sh refuses a config without markers"
  fi
  need_py "nginx directive checks" && run "nginx directive checks (SSE-safe proxying, retries, no stickiness)" \
    "$PY" scripts/deploy_checks.py nginx-static deploy/nginx.conf
  if [ "${VALIDATE_SKIP_SMOKE:-0}" = 1 ]; then
    echo "notice: nginx smoke test skipped (VALIDATE_SKIP_SMOKE=1)"
  elif need_py "nginx smoke test"; then
    run "nginx smoke test: real nginx in front of stub relays on 127.0.0.1" \
      timeout 90 "$PY" scripts/deploy_checks.py nginx-smoke "$NGINX" scripts/render-nginx-conf.sh
  fi
else
  fail "nginx is not installed"
fi

# -------------------------------------------------------------------------------------- compose
say "compose: docker-compose.yml"
if command -v docker-compose >/dev/null; then
  # Run with the secrets unset in the environment, so that only the env file provides them.
  dc() { env -u RELAY_JWT_SECRET -u RELAY_ADMIN_KEY -u COMPOSE_FILE -u COMPOSE_PROJECT_NAME \
           docker-compose --project-directory "$ROOT" -f "$ROOT/docker-compose.yml" "$@"; }
  run "docker-compose config: schema-valid with .env.example" dc --env-file "$ROOT/.env.example" config -q
  printf '# empty\n' >"$TMP/empty.env"
  if out="$(dc --env-file "$TMP/empty.env" config -q 2>&1)"; then
    fail "docker-compose config refuses to run without RELAY_JWT_SECRET/RELAY_ADMIN_KEY"
  else
    sed 's/^/      /' <<<"$(grep -o 'set RELAY_[A-Z_]* in .env[^"]*' <<<"$out" | head -1)"
    pass "docker-compose config refuses to run without RELAY_JWT_SECRET/RELAY_ADMIN_KEY"
  fi
  if dc --env-file "$ROOT/.env.example" config >"$TMP/compose.resolved.yml" 2>"$TMP/compose.err" && need_py "compose checks"; then
    run "compose structure (Redis 7 + healthcheck, 3 relays, nginx :8080, health-gated depends_on)" \
      "$PY" scripts/deploy_checks.py compose "$TMP/compose.resolved.yml" docker-compose.yml deploy/nginx.conf .env.example
  fi
else
  fail "docker-compose is not installed"
fi

# ------------------------------------------------------------------------------------------ k8s
say "k8s: deploy/k8s/*.yaml"
if need_py "kubernetes-validate"; then
  for v in 1.29.0 1.37.0; do
    run "kubernetes-validate --strict, Kubernetes $v (offline schemas)" \
      "$VENV/bin/kubernetes-validate" --strict --quiet -k "$v" deploy/k8s/*.yaml
  done
  run "k8s cross-object checks (probes, preStop + drain < grace, non-root, selectors, HPA, PDB)" \
    "$PY" scripts/deploy_checks.py k8s deploy/k8s
fi

# ----------------------------------------------------------------------------------- Dockerfile
say "Dockerfile: deploy/Dockerfile"
if need_py "dockerfile-parse"; then
  run "Dockerfile parsed and checked (multi-stage, non-root USER, HEALTHCHECK /healthz, ...)" \
    "$PY" scripts/deploy_checks.py dockerfile deploy/Dockerfile
fi

# ----------------------------------------------------------------------------------- prometheus
say "prometheus: deploy/prometheus/alerts.yaml"
PROMTOOL="$(command -v promtool || echo /usr/bin/promtool)"
[ -x "$PROMTOOL" ] || apt_install prometheus || fail "install prometheus (promtool) with apt-get"
if [ -x "$PROMTOOL" ]; then
  run "promtool check rules alerts.yaml" "$PROMTOOL" check rules deploy/prometheus/alerts.yaml
  run "promtool test rules alerts_test.yaml" "$PROMTOOL" test rules deploy/prometheus/alerts_test.yaml
  # The dashboard's and the alerts' metric names against a live /metrics, and
  # `promtool check metrics` on it, run in the test suite (OperationsTests): they need a relay.
fi

# ------------------------------------------------------------------------------- runtime libs
say "runtime libraries: scripts/runtime-libs.sh"
# Self-test on a binary every Debian has (ls links libc6), so the script is known to work here.
if out="$(bash scripts/runtime-libs.sh "$(command -v ls)" 2>&1)" && grep -qx libc6 <<<"$out"; then
  pass "runtime-libs.sh resolves ldd output to Debian packages ($(tr '\n' ' ' <<<"$out"))"
else
  echo "$out" | sed 's/^/      /'
  fail "runtime-libs.sh resolves ldd output to Debian packages"
fi
if [ -n "$BINARY" ]; then
  if [ ! -f "$BINARY" ]; then
    fail "binary $BINARY not found"
  elif need_py "RUNTIME_PACKAGES"; then
    pkgs="$("$PY" scripts/deploy_checks.py runtime-packages deploy/Dockerfile)"
    run "Dockerfile RUNTIME_PACKAGES covers what $BINARY links (ldd)" \
      bash scripts/runtime-libs.sh --check "$pkgs" "$BINARY"
    echo "      Swift runtime libraries the image copies (ldd):"
    bash scripts/runtime-libs.sh --swift "$BINARY" | sed 's|^|        |'
  fi
else
  echo "notice: no binary given: RUNTIME_PACKAGES vs ldd comparison skipped" \
       "(run: bash scripts/validate-deploy.sh .build/release/stream-relay)"
fi

say "summary"
if [ "$FAILED" -gt 0 ]; then
  printf 'failed: %s\n' "${FAILED_NAMES[@]}"
fi
echo "validate-deploy: $PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
