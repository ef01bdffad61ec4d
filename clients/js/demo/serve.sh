#!/usr/bin/env bash
# serve.sh — runs the web chat demo locally: a private redis-server, relays A and B sharing it,
# and nginx serving clients/js with /api/ (round robin), /a/api/ and /b/api/ proxied to the
# relays. Prints the page URL (with a freshly minted token in its fragment) once nginx serves the
# page, and the relays' pids; Ctrl-C stops all. A port in use, or an nginx that exits or does not
# serve the page within RELAY_PAIR_WAIT_S (15 s), fails at once with the logs kept (relay-pair.sh).
#   clients/js/demo/serve.sh            (after `swift build`)
# Environment: DEMO_PORT (8090), DEMO_RELAY_A_PORT (18581), DEMO_RELAY_B_PORT (18582),
# DEMO_TOKENS_PER_SECOND (60), STREAM_RELAY_BIN (.build/debug/stream-relay). Loopback only.
set -euo pipefail
cd "$(dirname "$0")/../../.."
BIN=${STREAM_RELAY_BIN:-.build/debug/stream-relay}
PORT=${DEMO_PORT:-8090}
PORT_A=${DEMO_RELAY_A_PORT:-18581}
PORT_B=${DEMO_RELAY_B_PORT:-18582}
[ -x "$BIN" ] || { echo "build first: swift build" >&2; exit 2; }
RATE=${DEMO_TOKENS_PER_SECOND:-60}
work=$(mktemp -d /tmp/stream-relay-web-demo.XXXXXX)
pids=()
# shellcheck source=../../../scripts/relay-pair.sh
source scripts/relay-pair.sh
clients/js/demo/render-nginx-conf.sh "127.0.0.1:$PORT" "127.0.0.1:$PORT_A" "127.0.0.1:$PORT_B" >"$work/nginx.conf"
user=""; [ "$(id -u)" -eq 0 ] && user="user root;"
[ -z "$(relay_pair_listeners "$PORT")" ] || relay_pair_fail "port $PORT is in use; set DEMO_PORT to a free port"
nginx -p "$work/" -e "$work/nginx-error.log" -c "$work/nginx.conf" -g "pid $work/nginx.pid; daemon off; $user" 2>>"$work/nginx-error.log" &
nginx_pid=$!
pids+=("$nginx_pid")
# The page is served by this nginx (bounded wait, as for the relays), or the script fails saying why.
nginx_deadline=$((SECONDS + RELAY_PAIR_WAIT_S))
until curl -fs --max-time 1 "http://127.0.0.1:$PORT/demo/index.html" >/dev/null 2>&1; do
  kill -0 "$nginx_pid" 2>/dev/null || { relay_pair_show_log "$work/nginx-error.log"; relay_pair_fail "nginx (pid $nginx_pid) exited before serving http://127.0.0.1:$PORT/demo/"; }
  [ "$SECONDS" -lt "$nginx_deadline" ] || { relay_pair_show_log "$work/nginx-error.log"; relay_pair_fail "nginx (pid $nginx_pid) did not serve http://127.0.0.1:$PORT/demo/index.html within ${RELAY_PAIR_WAIT_S} s"; }
  sleep 0.05
done
relay_pair_owns_port "$nginx_pid" "$PORT" || relay_pair_fail "port $PORT answers, but not only this nginx (pid $nginx_pid) listens there; set DEMO_PORT to a free port"
TOKEN=$("$BIN" mint-token --sub web-demo --sid web-demo-session --tier pro --ttl 86400)
echo "StreamRelay web chat: http://127.0.0.1:$PORT/demo/#token=$TOKEN&base=/a,/b"
echo "(relay A :$PORT_A pid $PID_A, relay B :$PORT_B pid $PID_B; logs in $work; Ctrl-C quits)"
echo "To watch an answer survive relay A's death, kill it mid-answer: kill -9 $PID_A"
echo "(B takes the answer over after A's 3 s lease and continues it from the next token; or cut only the connection: sudo ss -K dst 127.0.0.1 dport = $PORT_A)"
wait
