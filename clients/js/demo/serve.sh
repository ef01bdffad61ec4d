#!/usr/bin/env bash
# serve.sh — runs the web chat demo locally: a private redis-server, relays A and B sharing it,
# and nginx serving clients/js with /api/ (round robin), /a/api/ and /b/api/ proxied to the
# relays. Prints the page URL (with a freshly minted token in its fragment); Ctrl-C stops all.
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
nginx -p "$work/" -e "$work/nginx-error.log" -c "$work/nginx.conf" -g "pid $work/nginx.pid; daemon off; $user" &
pids+=($!)
TOKEN=$("$BIN" mint-token --sub web-demo --sid web-demo-session --tier pro --ttl 86400)
echo "StreamRelay web chat: http://127.0.0.1:$PORT/demo/#token=$TOKEN&base=/a,/b"
echo "(relay A :$PORT_A, relay B :$PORT_B; stop relay A mid-answer to watch the resume on B; Ctrl-C quits)"
wait
