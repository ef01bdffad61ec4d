#!/usr/bin/env bash
# render-nginx-conf.sh — deploy/nginx.conf with the upstream servers (and optionally the listen
# address) substituted, for tests and for hosts that do not use docker-compose's names.
#
#   scripts/render-nginx-conf.sh [--listen ADDR] [--conf FILE] UPSTREAM... > nginx.conf
#
#   UPSTREAM   host:port of a relay instance (e.g. 127.0.0.1:18081); each becomes
#              `server UPSTREAM max_fails=0;` between the RELAY_UPSTREAMS markers.
#              Any argument that already contains a space is copied verbatim as the server
#              parameters (e.g. "127.0.0.1:18083 backup").
#   --listen   replaces the block between the RELAY_LISTEN markers with `listen ADDR;`
#              (e.g. 127.0.0.1:18080). Default: keep `listen 8080;`.
#   --conf     source file (default: deploy/nginx.conf next to this script).
#
# Run the result as any user, touching nothing under /etc/nginx:
#   d=$(mktemp -d); scripts/render-nginx-conf.sh --listen 127.0.0.1:18080 127.0.0.1:18081 \
#       127.0.0.1:18082 127.0.0.1:18083 > "$d/nginx.conf"
#   nginx -p "$d" -e "$d/error.log" -c "$d/nginx.conf" -g "pid $d/nginx.pid;"     # add -t to test
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
conf="$here/deploy/nginx.conf"
listen=""
while [ $# -gt 0 ]; do
  case "$1" in
    --listen) listen="${2:?--listen needs an address}"; shift 2 ;;
    --conf) conf="${2:?--conf needs a file}"; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --) shift; break ;;
    -*) echo "render-nginx-conf: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
[ $# -ge 1 ] || { echo "render-nginx-conf: give at least one upstream host:port" >&2; exit 2; }
for m in "BEGIN RELAY_UPSTREAMS" "END RELAY_UPSTREAMS" "BEGIN RELAY_LISTEN" "END RELAY_LISTEN"; do
  [ "$(grep -c "# $m\$" "$conf")" = 1 ] || { echo "render-nginx-conf: marker '# $m' not found exactly once in $conf" >&2; exit 2; }
done
servers=""
for u in "$@"; do
  case "$u" in
    *[\;\{\}]*) echo "render-nginx-conf: refusing upstream with ; { or }: $u" >&2; exit 2 ;;
    *" "*) servers+="        server $u;"$'\n' ;;
    *) servers+="        server $u max_fails=0;"$'\n' ;;
  esac
done
listen_line=""
if [ -n "$listen" ]; then
  case "$listen" in *[\;\{\}\ ]*) echo "render-nginx-conf: bad listen address: $listen" >&2; exit 2 ;; esac
  listen_line="        listen $listen;"$'\n'
fi
SERVERS="$servers" LISTEN_LINE="$listen_line" awk '
  /# BEGIN RELAY_UPSTREAMS$/ { print; printf "%s", ENVIRON["SERVERS"]; skip = 1; next }
  /# END RELAY_UPSTREAMS$/   { skip = 0 }
  /# BEGIN RELAY_LISTEN$/    { print; if (ENVIRON["LISTEN_LINE"] != "") { printf "%s", ENVIRON["LISTEN_LINE"]; skipl = 1 }; next }
  /# END RELAY_LISTEN$/      { skipl = 0 }
  !skip && !skipl { print }
' "$conf"
