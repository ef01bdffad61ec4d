#!/usr/bin/env bash
# The main job: a real stream through a real Redis and two relay instances.
# Starts a private redis-server and relays A and B, streams the simulated 3,000-token
# NDA draft from A, drops the connection mid-answer, resumes on B with Last-Event-ID,
# and checks the reassembled text against an uninterrupted run, byte for byte.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${STREAM_RELAY_BIN:-.build/debug/stream-relay}
RATE=${DEMO_TOKENS_PER_SECOND:-150}
DROP_AFTER=${DEMO_DROP_AFTER:-400}
PORT_A=${DEMO_PORT_A:-18481}
PORT_B=${DEMO_PORT_B:-18482}
[ -x "$BIN" ] || { echo "build first: swift build" >&2; exit 2; }

work=$(mktemp -d /tmp/stream-relay-demo.XXXXXX)
pids=()
# shellcheck source=scripts/relay-pair.sh
source scripts/relay-pair.sh
TOKEN=$("$BIN" mint-token --sub demo-user --sid demo-session --tier pro --ttl 3600)

echo "== StreamRelay demo: redis $REDIS_URL, relay A :$PORT_A, relay B :$PORT_B, $RATE tokens/s"
echo "== streaming from A, dropping the connection after $DROP_AFTER events, resuming on B"
echo
"$BIN" chat --url "http://127.0.0.1:$PORT_A" --url "http://127.0.0.1:$PORT_B" --token "$TOKEN" \
  --model simulated --prompt "Draft a mutual NDA for a software partnership." \
  --drop-after "$DROP_AFTER" --output "$work/resumed.txt" 2>&1 | tee "$work/chat.out"
telemetry=$(grep '^{"latencyMs"' "$work/chat.out" | tail -n 1)

echo
echo "== uninterrupted reference run (relay B, no drop)"
"$BIN" chat --url "http://127.0.0.1:$PORT_B" --token "$TOKEN" --model simulated \
  --prompt "Draft a mutual NDA for a software partnership." --output "$work/reference.txt" >/dev/null 2>"$work/reference.err"

echo "telemetry of the dropped-and-resumed run: $telemetry"
bytes=$(wc -c <"$work/resumed.txt")
if cmp -s "$work/resumed.txt" "$work/reference.txt" && [ "$bytes" -gt 0 ]; then
  echo "byte-identical to an uninterrupted run: yes ($bytes bytes)"
else
  echo "byte-identical to an uninterrupted run: NO"
  diff <(od -c "$work/resumed.txt") <(od -c "$work/reference.txt") | head -20 || true
  exit 1
fi
if ! echo "$telemetry" | grep -q '"reconnections":[1-9]'; then
  echo "expected at least one reconnection in the telemetry line" >&2
  exit 1
fi
