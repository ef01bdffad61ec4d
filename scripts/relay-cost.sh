#!/usr/bin/env bash
# Relay user-space instructions per delivered event, counted with valgrind's callgrind
# (load-independent: usable on a busy VM whose CPU time per event swings 2x).
#
#   scripts/relay-cost.sh [--bin PATH] [--n 40] [--seconds 10] [--model M] [--redis]
#   scripts/relay-cost.sh --parts-vs-text [--rounds 2] [same options]
#   RELAY_COST_KEEP=DIR keeps the callgrind dumps there (callgrind_annotate them)
#
# Starts a private redis-server and the relay (release build, or --bin) under callgrind
# with instrumentation off (slow-link coalescing off too: one SSE event per event even when
# callgrind slows the relay down), runs `stream-relay-bench stream` at N x 50 events/s, turns
# instrumentation on 3 s in (subscribers connected, streams running) for SECS - 4 s, dumps,
# and prints the instructions counted / the events the relay delivered in that window (its
# own relay_events_delivered_total, read at both ends): every instruction of every relay
# thread in user space (the upstream tick, the Redis append and its replies, the live
# delivery, the event loop); the kernel is not counted.
#
# --model: the bench answer, simulated-bench (stamped text deltas, the default) or
# simulated-bench-parts (as many events, mostly reasoning and tool-call argument parts;
# docs/BENCHMARKS.md "Parts: cost per event"). --parts-vs-text: both with the same binary
# in one invocation, alternated (text, parts, text, …) ROUNDS times each on a fresh
# redis-server and relay, then both means and their ratio. --redis: redis-server runs
# under callgrind too, and its instructions in the same window per delivered event are
# printed (one subscriber per stream: one delivery per appended event). The bench's own
# Redis CPU per event (µs, load-dependent) is in each run's "→" line either way.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=""; N=40; SECS=10; MODEL=simulated-bench; COMPARE=""; ROUNDS=2; REDIS_CG=""
usage() { echo "usage: scripts/relay-cost.sh [--bin PATH] [--n N] [--seconds S] [--model simulated-bench|simulated-bench-parts] [--redis] [--parts-vs-text [--rounds R]]" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) BIN="$2"; shift ;;
    --n) N="$2"; shift ;;
    --seconds) SECS="$2"; shift ;;
    --model) MODEL="$2"; shift ;;
    --parts-vs-text) COMPARE=1 ;;
    --rounds) ROUNDS="$2"; shift ;;
    --redis) REDIS_CG=1 ;;
    *) usage ;;
  esac
  shift
done
case "$MODEL" in simulated-bench|simulated-bench-parts) ;; *) usage ;; esac
[ "$SECS" -ge 5 ] || { echo "--seconds must be at least 5" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "needs valgrind (apt-get install valgrind)" >&2; exit 1; }
REL=$(swift build -c release --show-bin-path)
BIN=${BIN:-$REL/stream-relay}
BENCH=$REL/stream-relay-bench
KEEP=${RELAY_COST_KEEP:-}
D=""; RP=""; VP=""; BP=""
cleanup() {
  [ -n "$BP" ] && kill "$BP" 2>/dev/null
  [ -n "$VP" ] && kill "$VP" 2>/dev/null
  [ -n "$RP" ] && kill "$RP" 2>/dev/null
  wait 2>/dev/null
  VP=""; RP=""; BP=""
  if [ -n "$D" ]; then rm -rf "$D"; fi
  D=""
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

# measure MODEL TAG: one run; prints its bench "→" line and result, sets IR_EVENT (relay
# instructions per delivered event) and REDIS_EVENT (Redis', with --redis; else empty).
measure() {
  local model=$1 tag=$2
  D=$(mktemp -d /tmp/relay-cost.XXXXXX)
  local redis_port port
  redis_port=$(free_port); port=$(free_port)
  if [ -n "$REDIS_CG" ]; then
    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$D/redis.%p" \
      redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no --dir "$D" >"$D/redis.log" 2>&1 &
  else
    redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no --dir "$D" >"$D/redis.log" 2>&1 &
  fi
  RP=$!
  for _ in $(seq 1 100); do redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break; sleep 0.2; done
  local secret
  secret="relay-cost-$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
  RELAY_JWT_SECRET=$secret RELAY_LISTEN=127.0.0.1:$port REDIS_URL=redis://127.0.0.1:$redis_port \
    RELAY_WORKERS=2 RELAY_HEARTBEAT=15s RELAY_SIMULATED_TOKENS_PER_SECOND=50 \
    RELAY_MAX_STREAMS_PER_SESSION=1000000 RELAY_BUDGETS=free=20000,pro=1000000000000 \
    RELAY_MAX_CONNECTIONS=1000000 RELAY_DRAIN_TIMEOUT=1s RELAY_COALESCE_BACKLOG=0 \
    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$D/cg.%p" "$BIN" serve >"$D/relay.log" 2>&1 &
  VP=$!
  for _ in $(seq 1 300); do curl -fs -m 1 "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break; sleep 0.2; done
  delivered() { curl -fs -m 5 "http://127.0.0.1:$port/metrics" | awk '/^relay_events_delivered_total/ {s += $2} END {printf "%d", s}'; }
  # The window: from 3 s after the bench starts (subscribers connected, streams running) to
  # 3 s later than that plus SECS-4; the relay's own delivered-events counter is read at both
  # ends, so connection setup and the streams' end are outside it.
  "$BENCH" stream --target relay --port "$port" --jwt-secret "$secret" --model "$model" --steps "$N" --duration "$SECS" \
    --redis-pid "$RP" >"$D/bench.out" 2>&1 &
  BP=$!
  sleep 3
  callgrind_control -z "$VP" >/dev/null 2>&1; callgrind_control -i on "$VP" >/dev/null 2>&1
  if [ -n "$REDIS_CG" ]; then callgrind_control -z "$RP" >/dev/null 2>&1; callgrind_control -i on "$RP" >/dev/null 2>&1; fi
  local d0 d1
  d0=$(delivered)
  sleep $((SECS - 4))
  d1=$(delivered)
  callgrind_control -d "$VP" >/dev/null 2>&1
  if [ -n "$REDIS_CG" ]; then callgrind_control -d "$RP" >/dev/null 2>&1; fi
  local rc=0
  wait "$BP" || rc=$?
  BP=""
  local deliv=$((d1 - d0)) ir
  ir=$(cat "$D"/cg.*.* | awk '/^summary:/ {s += $2} END {printf "%d", s}')
  grep "→" "$D/bench.out" || true
  # Slow-link coalescing is off (RELAY_COALESCE_BACKLOG=0): a relay slowed down by callgrind
  # on a busy machine would otherwise merge the deltas of its backed-up clients (docs/PROTOCOL.md
  # §4.3; parts are never merged), and the count would be per merged event.
  if [ "$rc" -ne 0 ]; then
    echo "  NOT COMPARABLE: the bench exited $rc (events lost, duplicated or late: see above); lower --n"
  fi
  [ "$deliv" -gt 0 ] || { echo "no events delivered in the window (relay log: $D/relay.log)" >&2; cat "$D/bench.out" >&2; exit 1; }
  IR_EVENT=$((ir / deliv))
  echo "relay $(basename "$BIN") $model N=$N: $ir instructions / $deliv deliveries = $IR_EVENT Ir per delivered event"
  REDIS_EVENT=""
  if [ -n "$REDIS_CG" ]; then
    local rir
    rir=$(cat "$D"/redis.*.* | awk '/^summary:/ {s += $2} END {printf "%d", s}')
    REDIS_EVENT=$((rir / deliv))
    echo "redis-server $model N=$N: $rir instructions / $deliv events = $REDIS_EVENT Ir per event"
  fi
  if [ -n "$KEEP" ]; then
    for f in "$D"/cg.*.* "$D"/redis.*.*; do [ -f "$f" ] && cp "$f" "$KEEP/$tag.$(basename "$f")"; done
  fi
  cleanup
}

if [ -z "$COMPARE" ]; then
  measure "$MODEL" "$MODEL"
  exit 0
fi

TEXT=(); PARTS=(); RTEXT=(); RPARTS=()
for r in $(seq 1 "$ROUNDS"); do
  measure simulated-bench "text.$r"; TEXT+=("$IR_EVENT"); RTEXT+=("$REDIS_EVENT")
  measure simulated-bench-parts "parts.$r"; PARTS+=("$IR_EVENT"); RPARTS+=("$REDIS_EVENT")
done
python3 - "${TEXT[*]}" "${PARTS[*]}" "${RTEXT[*]}" "${RPARTS[*]}" <<'PY'
import sys
def nums(s): return [int(x) for x in s.split()]
def line(what, t, p):
    mt, mp = sum(t) / len(t), sum(p) / len(p)
    print(f"{what}: text-only {' '.join(map(str, t))} (mean {mt:,.0f}), part-heavy {' '.join(map(str, p))} (mean {mp:,.0f}) "
          f"Ir per delivered event; part-heavy / text-only = {mp / mt:.3f}")
line("relay", nums(sys.argv[1]), nums(sys.argv[2]))
if sys.argv[3].strip(): line("redis-server", nums(sys.argv[3]), nums(sys.argv[4]))
PY
