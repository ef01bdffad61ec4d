#!/usr/bin/env bash
# render-nginx-conf.sh — the demo's nginx config (nginx.conf.template beside this script).
#   clients/js/demo/render-nginx-conf.sh LISTEN RELAY_A RELAY_B > nginx.conf
# LISTEN, RELAY_A, RELAY_B are host:port (loopback). The static root is clients/js.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
[ $# -eq 3 ] || { echo "usage: $0 LISTEN RELAY_A RELAY_B" >&2; exit 2; }
for a in "$@"; do
  [[ "$a" =~ ^[A-Za-z0-9.:-]+$ ]] || { echo "render-nginx-conf: bad address: $a" >&2; exit 2; }
done
root="$(cd "$here/.." && pwd)"
sed -e "s|@LISTEN@|$1|g" -e "s|@ROOT@|$root|g" -e "s|@RELAY_A@|$2|g" -e "s|@RELAY_B@|$3|g" "$here/nginx.conf.template"
