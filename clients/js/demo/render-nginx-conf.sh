#!/usr/bin/env bash
# render-nginx-conf.sh — the demo's nginx config (nginx.conf.template beside this script).
#   clients/js/demo/render-nginx-conf.sh LISTEN RELAY_A RELAY_B > nginx.conf
# LISTEN, RELAY_A, RELAY_B are host:port (loopback). The static root is clients/js.
# MARKDOWN_IT_JS: the markdown-it browser build served at /vendor/markdown-it.js
# (default /usr/share/javascript/markdown-it/markdown-it.js, Debian's libjs-markdown-it).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
[ $# -eq 3 ] || { echo "usage: $0 LISTEN RELAY_A RELAY_B" >&2; exit 2; }
for a in "$@"; do
  [[ "$a" =~ ^[A-Za-z0-9.:-]+$ ]] || { echo "render-nginx-conf: bad address: $a" >&2; exit 2; }
done
root="$(cd "$here/.." && pwd)"
md=${MARKDOWN_IT_JS:-/usr/share/javascript/markdown-it/markdown-it.js}
[ -f "$md" ] || { echo "render-nginx-conf: $md missing: install libjs-markdown-it (scripts/install-deps.sh)" >&2; exit 2; }
[[ "$md" =~ ^/[A-Za-z0-9._/+-]+$ ]] || { echo "render-nginx-conf: bad MARKDOWN_IT_JS path: $md" >&2; exit 2; }
sed -e "s|@MARKDOWN_IT@|$md|g" -e "s|@LISTEN@|$1|g" -e "s|@ROOT@|$root|g" -e "s|@RELAY_A@|$2|g" -e "s|@RELAY_B@|$3|g" "$here/nginx.conf.template"
