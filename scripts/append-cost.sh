#!/usr/bin/env bash
# Redis instructions per appended event for the relay's per-event append, counted with
# valgrind's callgrind (load-independent: usable on a busy machine).
#
#   scripts/append-cost.sh                 the append of this checkout
#   scripts/append-cost.sh --rev 8f56bd6   the append of another commit (before/after)
#   options: --node-entries N (Redis stream-node-max-entries, default 100)
#
# The append is modelled on the revision's sources: with a TextCheckpoint.swift (text once
# per 25 events, trim every 8th), bench/append_driver.py `grouped`; else with `public
# static let append` in Scripts.swift, that Lua script (EVALSHA, 7 or 8 arguments); else
# the per-event command group of `EventLog.append` (`plain`).
#
# Starts a private redis-server under callgrind on a Unix socket, warms up (20 streams ×
# 50 events), zeroes the counters, appends 20 streams × 500 events (64 pipelined, lossless
# on), dumps, and prints PROGRAM TOTALS / 10,000.
set -euo pipefail
cd "$(dirname "$0")/.."
REV=""; NODE=100
while [ $# -gt 0 ]; do
  case "$1" in
    --rev) REV="$2"; shift ;;
    --node-entries) NODE="$2"; shift ;;
    *) echo "usage: scripts/append-cost.sh [--rev COMMIT] [--node-entries N]" >&2; exit 2 ;;
  esac
  shift
done
command -v valgrind >/dev/null || { echo "needs valgrind (apt-get install valgrind)" >&2; exit 1; }
D=$(mktemp -d /tmp/append-cost.XXXXXX)
VP=""
trap '[ -n "$VP" ] && kill "$VP" 2>/dev/null; rm -rf "$D"' EXIT
if [ -n "$REV" ]; then git show "$REV:Sources/RelayRedis/Scripts.swift" > "$D/Scripts.swift"; else cp Sources/RelayRedis/Scripts.swift "$D/"; fi
python3 - "$D/Scripts.swift" "$D/append.lua" <<'PY'
import re, sys
m = re.search(r'public static let append = """\n(.*?)"""', open(sys.argv[1]).read(), re.S)
if m: open(sys.argv[2], 'w').write(m.group(1))
PY
# The script's argument list tells its form: ARGV[8] (refresh TTLs only when due) or not;
# no append script at all: the plain command group.
CKPT_PATHS="Sources/RelayEventStore/Decisions/TextCheckpoint.swift Sources/RelayStreamLogic/TextCheckpoint.swift"
HAS_CKPT=
for p in $CKPT_PATHS; do
  if [ -n "$REV" ]; then git cat-file -e "$REV:$p" 2>/dev/null && HAS_CKPT=1
  else [ -f "$p" ] && HAS_CKPT=1; fi
done
if [ -n "$HAS_CKPT" ]; then STYLE=grouped; SCRIPT=-
elif [ ! -f "$D/append.lua" ]; then STYLE=plain; SCRIPT=-
elif grep -q "ARGV\[8\]" "$D/append.lua"; then STYLE=new; SCRIPT="$D/append.lua"
else STYLE=old; SCRIPT="$D/append.lua"; fi
valgrind --tool=callgrind --callgrind-out-file="$D/cg.%p" redis-server --port 0 --unixsocket "$D/s.sock" \
  --save "" --appendonly no --dir "$D" --stream-node-max-entries "$NODE" >"$D/log" 2>&1 &
VP=$!
for _ in $(seq 1 100); do redis-cli -s "$D/s.sock" ping >/dev/null 2>&1 && break; sleep 0.2; done
python3 bench/append_driver.py "$D/s.sock" "$SCRIPT" $STYLE 20 50 500 >/dev/null
callgrind_control -z "$VP" >/dev/null 2>&1
python3 bench/append_driver.py "$D/s.sock" "$SCRIPT" $STYLE 20 500 500 >"$D/out"
callgrind_control -d "$VP" >/dev/null 2>&1
sleep 0.5
F=$(ls -S "$D"/cg.*.* | head -1)
IR=$(callgrind_annotate "$F" 2>/dev/null | grep -m1 "PROGRAM TOTALS" | awk '{gsub(",","",$1); print $1}')
echo "append ${REV:-(this checkout)} ($STYLE), stream-node-max-entries $NODE: $((IR / 10000)) Redis instructions per appended event"
grep -E "xlen" "$D/out" || true
