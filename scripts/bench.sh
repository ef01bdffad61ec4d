#!/usr/bin/env bash
# StreamRelay vs nginx + nchan, side by side on one fresh redis-server.
#
#   scripts/bench.sh            full run (bounded to < 25 min on a 2-core machine),
#                               writes docs/BENCHMARKS.md (generated section)
#   scripts/bench.sh --quick    seconds-long smoke run, writes .build/bench/BENCHMARKS.quick.md
#   (--only runs write .build/bench/BENCHMARKS.only.md unless --out says otherwise)
#   options: --out FILE  --only "stream send-floor fanout idle resume-storm storm slow-link append-ceiling"
#            --targets "relay nchan"   (which systems to run, default both)
#   BENCH_ARGS="--duration 5 …" is passed to every stream-relay-bench run (exploration);
#   RELAY_BIN=/path/to/stream-relay runs another relay build (before/after comparisons).
#   BENCH_BIN=/path/to/stream-relay-bench runs another load generator build (the `storm` readers
#   run the kits' ReconnectPolicy compiled into it: before/after comparisons of that policy).
#   With both RELAY_BIN and BENCH_BIN set, nothing is built.
#   RELAY_BEFORE_BIN=/path/to/stream-relay (and RELAY_BEFORE_NAME, e.g. a commit) also runs that
#   build in stream and fanout in the same run (before, after, nchan, after, before): the
#   report's "Before and after" section compares the two builds' per-event CPU and Redis cost.
#   BENCH_CONFIG=debug builds and runs the debug build (a quick check of the scenarios only).
#
# Installs what it needs (libnginx-mod-nchan), builds release, starts a fresh
# redis-server (no persistence) on 127.0.0.1, and for every scenario starts a fresh
# relay, runs stream-relay-bench against it, stops it, then does the same with nginx
# + nchan (bench/nginx-nchan.conf.in, temp prefix: /etc/nginx is never used).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

QUICK=""
OUT=""
ONLY="stream send-floor fanout idle resume-storm storm slow-link append-ceiling"
TARGETS="relay nchan"
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK="--quick" ;;
    --out) OUT="$2"; shift ;;
    --only) ONLY="$2"; ONLY_GIVEN=1; shift ;;
    --targets) TARGETS="$2"; shift ;;
    *) echo "usage: scripts/bench.sh [--quick] [--out FILE] [--only \"scenarios\"] [--targets \"relay nchan\"]" >&2; exit 2 ;;
  esac
  shift
done
if [ -z "$OUT" ]; then
  # Only a full run rewrites docs/BENCHMARKS.md's generated section: a --quick or --only
  # run would replace the full run's figures with a part of them.
  if [ -n "$QUICK" ]; then OUT="$ROOT/.build/bench/BENCHMARKS.quick.md"
  elif [ -n "${ONLY_GIVEN:-}" ]; then OUT="$ROOT/.build/bench/BENCHMARKS.only.md"
  else OUT="$ROOT/docs/BENCHMARKS.md"; fi
fi

scripts/install-deps.sh libnginx-mod-nchan
START=$(date +%s)
CONFIG=${BENCH_CONFIG:-release}
if [ -n "${RELAY_BIN:-}" ] && [ -n "${BENCH_BIN:-}" ]; then
  echo "== prebuilt: $RELAY_BIN, $BENCH_BIN (nothing built)" >&2
  BIN=""
else
  echo "== building $CONFIG" >&2
  swift build -c "$CONFIG" 2>&1 | tail -1 >&2
  BIN=$(swift build -c "$CONFIG" --show-bin-path)
fi
RELAY="${RELAY_BIN:-$BIN/stream-relay}"
BENCH="${BENCH_BIN:-$BIN/stream-relay-bench}"

WORK=$(mktemp -d /tmp/stream-relay-bench.XXXXXX)
mkdir -p "$ROOT/.build/bench"
RESULTS="$WORK/results.jsonl"
COMMANDS="$WORK/commands.txt"
LOG="$ROOT/.build/bench/bench.log"
: > "$RESULTS"; : > "$COMMANDS"; : > "$LOG"
CORES=$(nproc)
SECRET="bench-$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
if [ -n "$QUICK" ]; then HB_S=1; else HB_S=15; fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
wait_http() { for _ in $(seq 1 200); do curl -fs -m 1 "$1" >/dev/null 2>&1 && return 0; sleep 0.05; done; echo "not up: $1" >&2; return 1; }

REDIS_PORT=$(free_port)
REDIS_PID=""; RELAY_PID=""; NGINX_PID=""; STORM_PIDS=""; LB_PID=""
cleanup() {
  [ -n "$RELAY_PID" ] && kill "$RELAY_PID" 2>/dev/null || true
  for p in $STORM_PIDS; do kill "$p" 2>/dev/null || true; done
  [ -n "$LB_PID" ] && kill "$LB_PID" 2>/dev/null || true
  [ -n "$NGINX_PID" ] && kill "$NGINX_PID" 2>/dev/null || true
  sleep 0.3
  [ -n "$REDIS_PID" ] && kill "$REDIS_PID" 2>/dev/null || true
  if [ -n "${BENCH_KEEP:-}" ]; then echo "kept $WORK" >&2; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

echo "== redis-server on 127.0.0.1:$REDIS_PORT (no persistence)" >&2
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$WORK" \
  --loglevel warning --maxclients 20000 >"$WORK/redis.log" 2>&1 &
REDIS_PID=$!
for _ in $(seq 1 100); do redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && break; sleep 0.05; done
REDIS_URL="redis://127.0.0.1:$REDIS_PORT"

start_relay() { # rate
  RELAY_PORT=$(free_port)
  # One bench user opens every stream (so fan-out resumes are allowed): the per-session
  # stream limit and the monthly token budget are lifted for the load test.
  local cmd="RELAY_JWT_SECRET=… RELAY_LISTEN=127.0.0.1:$RELAY_PORT REDIS_URL=$REDIS_URL RELAY_WORKERS=$CORES RELAY_HEARTBEAT=${HB_S}s RELAY_SIMULATED_TOKENS_PER_SECOND=$1 RELAY_MAX_STREAMS_PER_SESSION=1000000 RELAY_BUDGETS=free=20000,pro=1000000000000 RELAY_MAX_CONNECTIONS=1000000 RELAY_DRAIN_TIMEOUT=1s stream-relay serve"
  echo "$cmd" >> "$COMMANDS"
  RELAY_JWT_SECRET="$SECRET" RELAY_LISTEN="127.0.0.1:$RELAY_PORT" REDIS_URL="$REDIS_URL" RELAY_WORKERS="$CORES" \
    RELAY_HEARTBEAT="${HB_S}s" RELAY_SIMULATED_TOKENS_PER_SECOND="$1" \
    RELAY_MAX_STREAMS_PER_SESSION=1000000 RELAY_BUDGETS=free=20000,pro=1000000000000 RELAY_MAX_CONNECTIONS=1000000 \
    RELAY_DRAIN_TIMEOUT=1s "$RELAY" serve >"$WORK/relay.log" 2>&1 &
  RELAY_PID=$!
  wait_http "http://127.0.0.1:$RELAY_PORT/readyz"
}
# SIGTERM drains for at most RELAY_DRAIN_TIMEOUT (1 s here: the idle scenario's generations
# never finish, and the default 300 s drain would only add 5 minutes to the run).
stop_relay() { kill "$RELAY_PID" 2>/dev/null || true; wait "$RELAY_PID" 2>/dev/null || true; RELAY_PID=""; }

start_nchan() {
  NCHAN_PORT=$(free_port)
  local prefix="$WORK/nginx"
  rm -rf "$prefix"; mkdir -p "$prefix"
  sed -e "s#@PREFIX@#$prefix#g; s#@PORT@#$NCHAN_PORT#; s#@REDIS@#$REDIS_URL#; s#@WORKERS@#$CORES#; s#@HEARTBEAT@#$HB_S#" \
    bench/nginx-nchan.conf.in > "$prefix/nginx.conf"
  echo "nginx -p <tmp> -e <tmp>/error.log -c <tmp>/nginx.conf   # bench/nginx-nchan.conf.in, port $NCHAN_PORT, worker_processes $CORES, ping ${HB_S}s" >> "$COMMANDS"
  nginx -p "$prefix" -e "$prefix/error.log" -c "$prefix/nginx.conf" >"$WORK/nginx.out" 2>&1 &
  NGINX_PID=$!
  wait_http "http://127.0.0.1:$NCHAN_PORT/healthz"
  NGINX_PIDS="$NGINX_PID,$(pgrep -P "$NGINX_PID" | paste -sd, -)"
}
stop_nchan() { kill -QUIT "$NGINX_PID" 2>/dev/null || true; wait "$NGINX_PID" 2>/dev/null || true; NGINX_PID=""; }

# storm: three relays behind real nginx (deploy/nginx.conf, rendered by
# scripts/render-nginx-conf.sh), one of them SIGKILLed by the load generator. Relay-only:
# in nchan the publisher is the application, not an instance, so killing an nchan instance
# is not the same event (docs/BENCHMARKS.md, "Reconnect storm"). nginx gets room for 10,000 readers (2 sockets each, split over its
# workers); the relays keep their production RELAY_MAX_CONNECTIONS (10,000 each).
run_storm() {
  local rate ports=() pids=() i
  # 10,000 concurrent generations at 1 token/s is what this 2-core machine sustains with
  # the readers' p99 below 100 ms before the kill (5 tokens/s: p99 21 s); --quick: 5/s.
  if [ -n "$QUICK" ]; then rate=${STORM_RATE:-5}; else rate=${STORM_RATE:-1}; fi
  for i in 1 2 3; do
    local port; port=$(free_port); ports+=("$port")
    echo "RELAY_JWT_SECRET=… RELAY_INSTANCE=storm-$i RELAY_LISTEN=127.0.0.1:$port REDIS_URL=$REDIS_URL RELAY_WORKERS=$CORES RELAY_HEARTBEAT=${HB_S}s RELAY_SIMULATED_TOKENS_PER_SECOND=$rate RELAY_MAX_STREAMS_PER_SESSION=1000000 RELAY_BUDGETS=free=20000,pro=1000000000000 RELAY_DRAIN_TIMEOUT=1s stream-relay serve" >> "$COMMANDS"
    RELAY_JWT_SECRET="$SECRET" RELAY_INSTANCE="storm-$i" RELAY_LISTEN="127.0.0.1:$port" REDIS_URL="$REDIS_URL" RELAY_WORKERS="$CORES" \
      RELAY_HEARTBEAT="${HB_S}s" RELAY_SIMULATED_TOKENS_PER_SECOND="$rate" \
      RELAY_MAX_STREAMS_PER_SESSION=1000000 RELAY_BUDGETS=free=20000,pro=1000000000000 \
      RELAY_DRAIN_TIMEOUT=1s "$RELAY" serve >"$WORK/relay-$i.log" 2>&1 &
    pids+=("$!"); STORM_PIDS="$STORM_PIDS $!"
  done
  for i in 0 1 2; do wait_http "http://127.0.0.1:${ports[$i]}/readyz"; done
  local lb_port prefix="$WORK/lb"; lb_port=$(free_port)
  rm -rf "$prefix"; mkdir -p "$prefix"
  # The production config; only the connection limits are raised (10,000 readers hold
  # 20,000 sockets in nginx), and the access log goes to a file.
  scripts/render-nginx-conf.sh --listen "127.0.0.1:$lb_port" "127.0.0.1:${ports[0]}" "127.0.0.1:${ports[1]}" "127.0.0.1:${ports[2]}" \
    | sed -e 's/^worker_processes auto;/worker_processes auto;\nworker_rlimit_nofile 20000;/' \
          -e 's/worker_connections 8192;/worker_connections 19000;/' \
          -e "s#access_log /dev/stdout relay;#access_log $prefix/access.log relay;#" > "$prefix/nginx.conf"
  local user=""; [ "$(id -u)" = 0 ] && user="user root;"
  echo "nginx -p <tmp> -c <tmp>/nginx.conf   # deploy/nginx.conf via scripts/render-nginx-conf.sh, 3 upstreams, worker_rlimit_nofile 20000, worker_connections 19000" >> "$COMMANDS"
  nginx -p "$prefix/" -e "$prefix/error.log" -c "$prefix/nginx.conf" -g "pid $prefix/nginx.pid; daemon off; $user" >"$WORK/lb.out" 2>&1 &
  LB_PID=$!
  wait_http "http://127.0.0.1:$lb_port/lb-healthz"
  local lb_pids; lb_pids="$LB_PID,$(pgrep -P "$LB_PID" | paste -sd, -)"
  bench storm relay --port "$lb_port" --create-ports "${ports[1]},${ports[2]}" --kill-pid "${pids[0]}" \
    --server-pids "${pids[1]},${pids[2]}" --lb-pids "$lb_pids" --redis-url "$REDIS_URL" --rate "$rate"
  # The survivors' replay and resume counters (the storm's queueing behind RELAY_REPLAY_CONCURRENCY).
  for i in 1 2; do
    echo "   relay storm-$((i + 1)) after the storm: $(curl -s -m 5 "http://127.0.0.1:${ports[$i]}/metrics" \
      | grep -E '^relay_(replays|resumes)[a-z_]*(\{[^}]*\})? ' | tr '\n' ' ')" | tee -a "$LOG" >&2
  done
  kill -QUIT "$LB_PID" 2>/dev/null || true; wait "$LB_PID" 2>/dev/null || true; LB_PID=""
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  STORM_PIDS=""
}

bench() { # scenario target args…
  local scenario=$1 target=$2; shift 2
  echo "stream-relay-bench $scenario $QUICK --target $target --redis-pid $REDIS_PID ${BENCH_ARGS:-} --json-out results.jsonl $*" | sed 's/ \+/ /g' >> "$COMMANDS"
  echo "== $scenario vs $target" >&2
  set +e
  RELAY_JWT_SECRET="$SECRET" "$BENCH" "$scenario" $QUICK --target "$target" --redis-pid "$REDIS_PID" ${BENCH_ARGS:-} \
    --json-out "$RESULTS" "$@" 2> >(tee -a "$LOG" >&2) >/dev/null
  local rc=$?
  set -e
  echo "   exit $rc" >&2
  redis-cli -p "$REDIS_PORT" flushall >/dev/null
  return 0
}

for scenario in $ONLY; do
  case "$scenario" in
    stream|fanout|resume-storm|idle|slow-link)
      case "$scenario" in stream) rate=50 ;; idle) rate=0.001 ;; slow-link) rate=150 ;; *) rate=20 ;; esac
      # With an earlier build to compare (stream and fanout): before, after, nchan, after,
      # before. A run's position costs it (the second of two back-to-back runs measured
      # ~20 % more CPU per event whichever build it was), so each build gets both positions.
      compare=""
      if [ -n "${RELAY_BEFORE_BIN:-}" ] && { [ "$scenario" = stream ] || [ "$scenario" = fanout ]; }; then compare=1; fi
      run_relay_build() { # binary label
        local saved=$RELAY; RELAY=$1
        start_relay "$rate"
        bench "$scenario" relay --port "$RELAY_PORT" --server-pids "$RELAY_PID" ${2:+--label "$2"}
        stop_relay
        RELAY=$saved
      }
      if [[ " $TARGETS " == *" relay "* ]]; then
        if [ -n "$compare" ]; then
          echo "# the build before: ${RELAY_BEFORE_NAME:-$RELAY_BEFORE_BIN} (same command; order: before, after, nchan, after, before)" >> "$COMMANDS"
          run_relay_build "$RELAY_BEFORE_BIN" before
        fi
        run_relay_build "$RELAY" ""
      fi
      if [[ " $TARGETS " == *" nchan "* ]]; then
        start_nchan
        bench "$scenario" nchan --port "$NCHAN_PORT" --server-pids "$NGINX_PIDS"
        stop_nchan
      fi
      if [ -n "$compare" ] && [[ " $TARGETS " == *" relay "* ]]; then
        run_relay_build "$RELAY" ""
        run_relay_build "$RELAY_BEFORE_BIN" before
      fi
      ;;
    storm)
      if [[ " $TARGETS " == *" relay "* ]]; then run_storm; fi
      ;;
    append-ceiling)
      bench append-ceiling relay --redis-url "$REDIS_URL"
      ;;
    send-floor)
      bench send-floor relay
      ;;
    *) echo "unknown scenario $scenario" >&2; exit 2 ;;
  esac
done

ELAPSED=$(( $(date +%s) - START ))
echo "== done in ${ELAPSED}s; writing $OUT" >&2
RELAY_BEFORE_NAME="${RELAY_BEFORE_NAME:-${RELAY_BEFORE_BIN:-}}" \
python3 - "$WORK/meta.json" "$ELAPSED" "$QUICK" "$COMMANDS" <<'EOF'
import json, platform, subprocess, sys, os
def sh(c):
    try: return subprocess.run(c, shell=True, capture_output=True, text=True).stdout.strip() or subprocess.run(c, shell=True, capture_output=True, text=True).stderr.strip()
    except Exception: return "?"
cpu = sh("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2").strip()
meta = {
  "date": sh("date -u +%Y-%m-%dT%H:%MZ"),
  "machine": f"{os.cpu_count()} cores ({cpu}), {int(int(sh('grep MemTotal /proc/meminfo').split()[1])/1048576+0.5)} GiB RAM, {sh('uname -sr')}, {sh('. /etc/os-release; echo $PRETTY_NAME')}",
  "versions": {
    "swift": sh("swift --version 2>&1 | head -1"),
    "redis": sh("redis-server --version"),
    "nginx": sh("nginx -v 2>&1"),
    "nchan": "libnginx-mod-nchan " + sh("dpkg-query -W -f='${Version}' libnginx-mod-nchan"),
    "libevent": sh("dpkg-query -W -f='${Version}' libevent-2.1-7"),
    "hiredis": sh("dpkg-query -W -f='${Version}' libhiredis-dev"),
    "mimalloc": sh("dpkg-query -W -f='${Version}' libmimalloc2.0"),
    "streamrelay": sh("git rev-parse --short HEAD") + (" (dirty)" if sh("git status --porcelain -uno") else ""),
  },
  "elapsed_s": int(sys.argv[2]),
  "mode": "quick" if sys.argv[3] else "full",
  "commands": [l.rstrip("\n") for l in open(sys.argv[4])],
}
if os.environ.get("RELAY_BEFORE_NAME"): meta["before"] = os.environ["RELAY_BEFORE_NAME"]
json.dump(meta, open(sys.argv[1], "w"), indent=1)
EOF
cp "$RESULTS" "$ROOT/.build/bench/results.jsonl"
# Every run's results are kept too (a later --only run does not overwrite a full run's).
cp "$RESULTS" "$ROOT/.build/bench/results-$(date -u +%Y%m%dT%H%M%SZ).jsonl"
mkdir -p "$(dirname "$OUT")"
"$BENCH" report --results "$RESULTS" --meta "$WORK/meta.json" --out "$OUT"
echo "wrote $OUT (results: .build/bench/results.jsonl, log: .build/bench/bench.log)" >&2
