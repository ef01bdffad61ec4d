# relay-pair.sh — sourced by scripts/demo.sh and clients/js/demo/serve.sh: a private
# redis-server on a Unix socket in $work and relays A and B sharing it, on 127.0.0.1.
# Needs: BIN, RATE, PORT_A, PORT_B, work (a temp dir) and the array pids; sets REDIS_URL and
# RELAY_JWT_SECRET; registers a cleanup trap that stops every pid and removes $work.
relay_pair_cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap relay_pair_cleanup EXIT INT TERM

redis-server --port 0 --unixsocket "$work/redis.sock" --save "" --appendonly no --dir "$work" \
  --loglevel warning >"$work/redis.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do redis-cli -s "$work/redis.sock" ping >/dev/null 2>&1 && break; sleep 0.05; done

export REDIS_URL="unix://$work/redis.sock"
export RELAY_JWT_SECRET="demo-$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
export RELAY_SIMULATED_TOKENS_PER_SECOND=$RATE
RELAY_LISTEN=127.0.0.1:$PORT_A RELAY_INSTANCE=relay-A "$BIN" serve 2>"$work/relay-a.log" &
pids+=($!)
RELAY_LISTEN=127.0.0.1:$PORT_B RELAY_INSTANCE=relay-B "$BIN" serve 2>"$work/relay-b.log" &
pids+=($!)
for port in $PORT_A $PORT_B; do
  for _ in $(seq 200); do
    curl -fs "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break
    sleep 0.05
  done
  curl -fs "http://127.0.0.1:$port/readyz" >/dev/null || { echo "relay on $port did not start" >&2; cat "$work"/relay-*.log >&2; exit 1; }
done
