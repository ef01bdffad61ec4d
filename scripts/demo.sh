#!/usr/bin/env bash
# The main job: a real stream through a real Redis and two relay instances.
# Starts a private redis-server and relays A and B, streams the simulated 3,000-token
# NDA draft from A, drops the connection mid-answer, resumes on B with Last-Event-ID,
# and checks the reassembled text against an uninterrupted run (made on B at the same
# time), byte for byte.
# Ports: free ephemeral ones unless DEMO_PORT_A / DEMO_PORT_B are set (then a port that is
# taken fails at once). On failure the relay and Redis logs are kept and their paths printed.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${STREAM_RELAY_BIN:-.build/debug/stream-relay}
RATE=${DEMO_TOKENS_PER_SECOND:-150}
DROP_AFTER=${DEMO_DROP_AFTER:-400}
PORT_A=${DEMO_PORT_A:-0}
PORT_B=${DEMO_PORT_B:-0}
PORT_HINT="set DEMO_PORT_A/B to free ports (or unset them to pick free ones)"
# The answer takes 3,000 / RATE s; a chat that is not done within twice that plus 30 s is stuck.
CHAT_LIMIT_S=$((2 * 3000 / RATE + 30))
[ -x "$BIN" ] || { echo "build first: swift build" >&2; exit 2; }

work=$(mktemp -d /tmp/stream-relay-demo.XXXXXX)
pids=()
# shellcheck source=scripts/relay-pair.sh
source scripts/relay-pair.sh
TOKEN=$("$BIN" mint-token --sub demo-user --sid demo-session --tier pro --ttl 3600)
PROMPT="Draft a mutual NDA for a software partnership."

echo "== StreamRelay demo: redis $REDIS_URL, relay A :$PORT_A (pid $PID_A), relay B :$PORT_B (pid $PID_B), $RATE tokens/s"
echo "== logs: $work (kept if the demo fails)"
echo "== streaming from A, dropping the connection after $DROP_AFTER events, resuming on B"
echo "   (an uninterrupted reference run streams from B at the same time)"
echo

# The reference run, in the background: the same prompt on B, no drop.
timeout "$CHAT_LIMIT_S" "$BIN" chat --url "http://127.0.0.1:$PORT_B" --token "$TOKEN" --model simulated \
  --prompt "$PROMPT" --output "$work/reference.txt" >"$work/reference.out" 2>"$work/reference.err" &
reference_pid=$!

chat=(timeout --foreground "$CHAT_LIMIT_S" "$BIN" chat --url "http://127.0.0.1:$PORT_A" --url "http://127.0.0.1:$PORT_B"
  --token "$TOKEN" --model simulated --prompt "$PROMPT" --drop-after "$DROP_AFTER" --output "$work/resumed.txt")
chat_status=0
if [ -t 0 ] && [ -t 1 ] && command -v script >/dev/null; then
  # On a terminal, chat gets one (a pty through script(1), recorded in chat.out) so its status
  # lines stand on their own lines without splitting the answer's (`stream-relay chat --help`).
  script -qefc "$(printf '%q ' "${chat[@]}")" "$work/chat.out" || chat_status=$?
else
  "${chat[@]}" 2>&1 | tee "$work/chat.out" || chat_status=$?
fi
if [ "$chat_status" -eq 124 ]; then
  echo "✗ the chat did not finish within $CHAT_LIMIT_S s" >&2; exit 1
elif [ "$chat_status" -ne 0 ]; then
  echo "✗ the chat failed (exit $chat_status)" >&2; relay_pair_report_dead; exit 1
fi
telemetry=$(grep -ao '{"latencyMs"[^}]*}' "$work/chat.out" | tail -n 1 || true)

echo
echo "== waiting for the uninterrupted reference run (relay B, no drop; at most $CHAT_LIMIT_S s)"
reference_status=0
wait "$reference_pid" || reference_status=$?
if [ "$reference_status" -ne 0 ]; then
  [ "$reference_status" -eq 124 ] && echo "✗ the reference run did not finish within $CHAT_LIMIT_S s" >&2 \
    || echo "✗ the reference run failed (exit $reference_status):" >&2
  tail -n 5 "$work/reference.err" >&2
  relay_pair_report_dead
  exit 1
fi

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

# An agent answer: typed parts (docs/PROTOCOL.md §5.5, docs/AGENTS.md) resumed from inside a tool
# call's arguments, compared part for part with an uninterrupted run.
AGENT_DROP_AFTER=${DEMO_AGENT_DROP_AFTER:-50}
echo
echo "== an agent answer (model simulated-tools: reasoning, two tool calls and their results, a source, text)"
echo "   from A, dropping the connection after $AGENT_DROP_AFTER events (inside the first call's arguments), resuming on B"
echo
timeout "$CHAT_LIMIT_S" "$BIN" chat --url "http://127.0.0.1:$PORT_B" --token "$TOKEN" --model simulated-tools \
  --prompt "$PROMPT" --output "$work/agent-reference.txt" --parts-output "$work/agent-reference.parts" \
  >"$work/agent-reference.out" 2>&1 || { echo "✗ the agent reference run failed" >&2; tail -n 5 "$work/agent-reference.out" >&2; exit 1; }
timeout --foreground "$CHAT_LIMIT_S" "$BIN" chat --url "http://127.0.0.1:$PORT_A" --url "http://127.0.0.1:$PORT_B" \
  --token "$TOKEN" --model simulated-tools --prompt "$PROMPT" --drop-after "$AGENT_DROP_AFTER" \
  --output "$work/agent.txt" --parts-output "$work/agent.parts" 2>&1 | tee "$work/agent.out" \
  || { echo "✗ the agent chat failed" >&2; exit 1; }
echo
parts=$(wc -l <"$work/agent.parts")
if cmp -s "$work/agent.parts" "$work/agent-reference.parts" && cmp -s "$work/agent.txt" "$work/agent-reference.txt" && [ "$parts" -gt 0 ]; then
  echo "the resumed agent answer has exactly the parts and text of an uninterrupted run: yes ($parts parts)"
else
  echo "the resumed agent answer has exactly the parts and text of an uninterrupted run: NO"
  diff "$work/agent.parts" "$work/agent-reference.parts" | head -10 || true
  exit 1
fi
