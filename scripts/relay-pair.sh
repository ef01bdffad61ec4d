# relay-pair.sh — sourced by scripts/demo.sh and clients/js/demo/serve.sh: a private
# redis-server on a Unix socket in $work and relays A and B sharing it, on 127.0.0.1.
# Needs: BIN, RATE, PORT_A, PORT_B, work (a temp dir) and the array pids. PORT_A/PORT_B empty
# or 0: each relay binds a free ephemeral port, and PORT_A/PORT_B are set to it (read from
# the relay's own `listening` log line). A fixed port that something already listens on
# fails at once with "port N is in use; $PORT_HINT".
# Sets REDIS_URL, RELAY_JWT_SECRET, and PID_A/PID_B (the relays' pids); registers a cleanup trap that stops every pid and
# removes $work — unless the script fails, then $work (the relay and Redis logs) is kept
# and its path printed.
# Every wait is bounded (RELAY_PAIR_WAIT_S, default 15 s per step) and says what it waits for.
# A relay counts as started only when the process this script started (its pid) is alive,
# answers /readyz, and every socket listening on its port is one of that pid's own
# (/proc/net/tcp{,6} against /proc/<pid>/fd): a stranger on the port can never pass for it.
PORT_HINT=${PORT_HINT:-choose other ports}
RELAY_PAIR_WAIT_S=${RELAY_PAIR_WAIT_S:-15}

relay_pair_cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  # Bounded: a relay drains its (finished) streams at once; one that does not is killed.
  for _ in $(seq 50); do
    local alive=0
    for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ "$alive" -eq 0 ] && break
    sleep 0.1
  done
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 130 ] && [ "$rc" -ne 143 ]; then
    echo "✗ failed (exit $rc); logs kept in $work:" >&2
    ls -1 "$work" 2>/dev/null | grep -E '\.(log|out|err)$' | sed "s|^|    $work/|" >&2 || true
  else
    rm -rf "$work"
  fi
  exit "$rc"
}
trap relay_pair_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

relay_pair_fail() {
  echo "✗ $*" >&2
  exit 1
}

# Inodes of every TCP socket listening on port $1 (any address, IPv4 and IPv6).
relay_pair_listeners() {
  local hex
  hex=$(printf ':%04X' "$1")
  awk -v p="$hex" '$4 == "0A" && substr($2, length($2) - 4) == p { print $10 }' /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# True when something listens on port $2 and every listening socket there belongs to pid $1.
relay_pair_owns_port() {
  local pid=$1 port=$2 inodes ino sockets
  inodes=$(relay_pair_listeners "$port")
  [ -n "$inodes" ] || return 1
  sockets=$(find /proc/"$pid"/fd -maxdepth 1 -type l -printf '%l\n' 2>/dev/null)
  for ino in $inodes; do
    grep -qxF "socket:[$ino]" <<<"$sockets" || return 1
  done
}

# The relay's log, indented, for a failure message.
relay_pair_show_log() {
  echo "--- $1 (last 20 lines) ---" >&2
  tail -n 20 "$1" >&2 || true
  echo "---" >&2
}

# After a failure: names each relay of the pair that is no longer running and shows its log's end
# (a relay that died mid-answer is the likely cause; its generations ended with it).
relay_pair_report_dead() {
  local name pid log
  for name in A B; do
    pid=PID_$name; pid=${!pid:-}
    log="$work/relay-$(tr 'AB' 'ab' <<<"$name").log"
    if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
      echo "✗ relay $name (pid $pid) is no longer running" >&2
      relay_pair_show_log "$log"
    fi
  done
}

# start_relay NAME PORT LOG: starts `stream-relay serve` as NAME on 127.0.0.1:PORT (0 = a free
# ephemeral port), waits until it is up and verified as described above, then sets
# relay_pid and relay_port.
relay_pair_start() {
  local name=$1 port=$2 log=$3 pid deadline bound="" where="127.0.0.1:$2"
  [ "$port" = 0 ] && where="a free port of 127.0.0.1"
  if [ "$port" != 0 ] && [ -n "$(relay_pair_listeners "$port")" ]; then
    relay_pair_fail "port $port is in use; $PORT_HINT"
  fi
  RELAY_LISTEN=127.0.0.1:$port RELAY_INSTANCE=$name RELAY_LOG_FORMAT=json "$BIN" serve 2>"$log" &
  pid=$!
  pids+=("$pid")
  deadline=$((SECONDS + RELAY_PAIR_WAIT_S))
  # 1. Its own `listening` line names the port it bound (the relay first binds without
  #    SO_REUSEPORT, so a port someone listens on makes it exit with "cannot bind").
  while :; do
    bound=$(grep -m1 '"msg":"listening"' "$log" 2>/dev/null | grep -o '"port":[0-9]*' | cut -d: -f2 || true)
    [ -n "$bound" ] && break
    if ! kill -0 "$pid" 2>/dev/null; then
      wait "$pid" 2>/dev/null && st=0 || st=$?
      relay_pair_show_log "$log"
      relay_pair_fail "relay $name (pid $pid) exited with status $st before listening on $where"
    fi
    [ "$SECONDS" -lt "$deadline" ] || { relay_pair_show_log "$log"; relay_pair_fail "relay $name (pid $pid) did not log 'listening' within ${RELAY_PAIR_WAIT_S} s"; }
    sleep 0.05
  done
  # 2. Ready: /readyz 200 (each probe at most 1 s: a listener that never answers cannot hang us).
  until curl -fs --max-time 1 "http://127.0.0.1:$bound/readyz" >/dev/null 2>&1; do
    kill -0 "$pid" 2>/dev/null || { relay_pair_show_log "$log"; relay_pair_fail "relay $name (pid $pid) exited before /readyz on :$bound answered"; }
    [ "$SECONDS" -lt "$deadline" ] || { relay_pair_show_log "$log"; relay_pair_fail "relay $name (pid $pid) did not answer GET /readyz on :$bound with 200 within ${RELAY_PAIR_WAIT_S} s"; }
    sleep 0.05
  done
  # 3. The port is its alone.
  relay_pair_owns_port "$pid" "$bound" || relay_pair_fail "port $bound answers, but not only relay $name (pid $pid) listens there; $PORT_HINT"
  relay_pid=$pid
  relay_port=$bound
}

redis-server --port 0 --unixsocket "$work/redis.sock" --save "" --appendonly no --dir "$work" \
  --loglevel warning >"$work/redis.log" 2>&1 &
pids+=($!)
redis_deadline=$((SECONDS + RELAY_PAIR_WAIT_S))
until redis-cli -s "$work/redis.sock" ping >/dev/null 2>&1; do
  [ "$SECONDS" -lt "$redis_deadline" ] || { relay_pair_show_log "$work/redis.log"; relay_pair_fail "redis-server did not answer PING on $work/redis.sock within ${RELAY_PAIR_WAIT_S} s"; }
  sleep 0.05
done

export REDIS_URL="unix://$work/redis.sock"
export RELAY_JWT_SECRET="demo-$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
export RELAY_SIMULATED_TOKENS_PER_SECOND=$RATE
relay_pair_start relay-A "${PORT_A:-0}" "$work/relay-a.log"
PORT_A=$relay_port
PID_A=$relay_pid
relay_pair_start relay-B "${PORT_B:-0}" "$work/relay-b.log"
PORT_B=$relay_port
PID_B=$relay_pid
