#!/usr/bin/env bash
# Relay user-space instructions per delivered event, counted with valgrind's callgrind
# (load-independent: usable on a busy VM whose CPU time per event swings 2x).
#
#   scripts/relay-cost.sh [--bin PATH] [--n 40] [--seconds 10]
#   RELAY_COST_KEEP=DIR keeps the callgrind dump there (callgrind_annotate it)
#
# Starts a private redis-server and the relay (release build, or --bin) under callgrind
# with instrumentation off, runs `stream-relay-bench stream` at N x 50 tokens/s, turns
# instrumentation on 3 s in (subscribers connected, streams running) for SECS - 4 s, dumps,
# and prints the instructions counted / the events the relay delivered in that window (its
# own relay_events_delivered_total, read at both ends): every instruction of every relay
# thread in user space (the upstream tick, the Redis append and its replies, the live
# delivery, the event loop); the kernel is not counted.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=""; N=40; SECS=10
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) BIN="$2"; shift ;;
    --n) N="$2"; shift ;;
    --seconds) SECS="$2"; shift ;;
    *) echo "usage: scripts/relay-cost.sh [--bin PATH] [--n N] [--seconds S]" >&2; exit 2 ;;
  esac
  shift
done
command -v valgrind >/dev/null || { echo "needs valgrind (apt-get install valgrind)" >&2; exit 1; }
REL=$(swift build -c release --show-bin-path)
BIN=${BIN:-$REL/stream-relay}
BENCH=$REL/stream-relay-bench
D=$(mktemp -d /tmp/relay-cost.XXXXXX)
RP=""; VP=""
KEEP=${RELAY_COST_KEEP:-}
trap '[ -n "$VP" ] && kill "$VP" 2>/dev/null; [ -n "$RP" ] && kill "$RP" 2>/dev/null; wait 2>/dev/null; if [ -n "$KEEP" ]; then cp "$D"/cg.*.* "$KEEP"/ 2>/dev/null; fi; rm -rf "$D"' EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
REDIS_PORT=$(free_port); PORT=$(free_port)
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$D" >"$D/redis.log" 2>&1 &
RP=$!
SECRET="relay-cost-$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
RELAY_JWT_SECRET=$SECRET RELAY_LISTEN=127.0.0.1:$PORT REDIS_URL=redis://127.0.0.1:$REDIS_PORT \
  RELAY_WORKERS=2 RELAY_HEARTBEAT=15s RELAY_SIMULATED_TOKENS_PER_SECOND=50 \
  RELAY_MAX_STREAMS_PER_SESSION=1000000 RELAY_BUDGETS=free=20000,pro=1000000000000 \
  RELAY_MAX_CONNECTIONS=1000000 \
  valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$D/cg.%p" "$BIN" serve >"$D/relay.log" 2>&1 &
VP=$!
for _ in $(seq 1 300); do curl -fs -m 1 "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1 && break; sleep 0.2; done
delivered() { curl -fs -m 5 "http://127.0.0.1:$PORT/metrics" | awk '/^relay_events_delivered_total/ {s += $2} END {printf "%d", s}'; }
# The window: from 3 s after the bench starts (subscribers connected, streams running) to
# 3 s later than that plus SECS-4; the relay's own delivered-events counter is read at both
# ends, so connection setup and the streams' end are outside it.
"$BENCH" stream --target relay --port "$PORT" --jwt-secret "$SECRET" --steps "$N" --duration "$SECS" >"$D/bench.out" 2>&1 &
BP=$!
sleep 3
callgrind_control -z "$VP" >/dev/null 2>&1; callgrind_control -i on "$VP" >/dev/null 2>&1
D0=$(delivered)
sleep $((SECS - 4))
D1=$(delivered)
callgrind_control -d "$VP" >/dev/null 2>&1
wait "$BP" || true
DELIV=$((D1 - D0))
IR=$(cat "$D"/cg.*.* | awk '/^summary:/ {s += $2} END {printf "%d", s}')
grep "→" "$D/bench.out" || true
echo "relay $(basename "$BIN") N=$N: $IR instructions / $DELIV deliveries = $((IR / DELIV)) Ir per delivered event"
