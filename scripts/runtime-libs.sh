#!/usr/bin/env bash
# runtime-libs.sh — which Debian packages does a built binary need at run time?
#
# Usage:
#   scripts/runtime-libs.sh BINARY                 Debian packages (one per line, sorted) that provide
#                                                  the shared libraries BINARY links (full ldd closure)
#   scripts/runtime-libs.sh --swift BINARY         the Swift runtime .so files it links (paths, one per
#                                                  line): these come from the Swift toolchain, not dpkg
#   scripts/runtime-libs.sh --all BINARY           both, as "deb <package>" and "swift <path>" lines
#   scripts/runtime-libs.sh --check "PKG PKG …" BINARY
#                                                  compare a declared package list (e.g. the Dockerfile's
#                                                  RUNTIME_PACKAGES) with what BINARY needs: exit 1 if a
#                                                  needed package is missing; extra packages are reported
#                                                  as a warning (exit 0), or as an error with --strict.
#
# How: `ldd` gives every shared object the dynamic loader resolves (the whole closure, so the
# libraries the Swift runtime itself needs are included); each one is looked up with `dpkg -S`
# (trying the /lib ↔ /usr/lib aliases of a merged-/usr system and the symlink target). A library
# no Debian package owns and that lives in a Swift toolchain directory is Swift runtime; anything
# else unowned, or a "not found", is an error: the image could not reproduce it.
#
# Exit codes: 0 ok, 1 check failed, 2 usage or unresolvable library.
set -euo pipefail

mode=deb
strict=0
declared=""
while [ $# -gt 0 ]; do
  case "$1" in
    --swift) mode=swift; shift ;;
    --all) mode=all; shift ;;
    --check) mode=check; declared="${2-}"; shift 2 || { echo "runtime-libs: --check needs a list" >&2; exit 2; } ;;
    --strict) strict=1; shift ;;
    -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --) shift; break ;;
    -*) echo "runtime-libs: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
[ $# -eq 1 ] || { echo "usage: $0 [--swift|--all|--check \"PKGS\" [--strict]] BINARY" >&2; exit 2; }
bin="$1"
[ -f "$bin" ] || { echo "runtime-libs: no such file: $bin" >&2; exit 2; }
command -v ldd >/dev/null || { echo "runtime-libs: ldd not found (package libc-bin)" >&2; exit 2; }
command -v dpkg >/dev/null || { echo "runtime-libs: dpkg not found: run this on Debian" >&2; exit 2; }

if ! ldd_out="$(ldd "$bin" 2>&1)"; then
  echo "runtime-libs: ldd failed on $bin: $ldd_out" >&2; exit 2
fi
if grep -q 'not a dynamic executable' <<<"$ldd_out"; then
  exit 0   # statically linked: needs nothing
fi

# The path candidates under which dpkg may have recorded one file.
candidates() {
  local p="$1" r
  r="$(readlink -f "$p" 2>/dev/null || echo "$p")"
  for x in "$p" "$r"; do
    echo "$x"
    case "$x" in
      /usr/lib/*|/usr/lib64/*|/usr/bin/*|/usr/sbin/*) echo "${x#/usr}" ;;
      /lib/*|/lib64/*|/bin/*|/sbin/*) echo "/usr$x" ;;
    esac
  done
}

owner() {   # prints "pkg" lines (arch qualifier stripped) or nothing
  local c out
  while read -r c; do
    if out="$(dpkg -S "$c" 2>/dev/null)"; then
      # "libc6:amd64: /lib/x86_64-linux-gnu/libc.so.6" (or "a, b: path"); skip diversion lines
      grep -v '^diversion ' <<<"$out" | head -n1 | sed 's/: \/.*$//' | tr ',' '\n' \
        | sed 's/^ *//; s/:[a-z0-9_-]*$//' | grep -v '^$'
      return 0
    fi
  done < <(candidates "$1")
  return 1
}

debs=()
swift=()
bad=0
while IFS= read -r line; do
  line="${line#"${line%%[![:space:]]*}"}"
  [ -n "$line" ] || continue
  case "$line" in
    linux-vdso.so*|linux-gate.so*) continue ;;
    *"=> not found"*) echo "runtime-libs: unresolved library: ${line%% *}" >&2; bad=1; continue ;;
    *" => "*) path="${line#* => }"; path="${path%% (*}" ;;
    /*) path="${line%% (*}" ;;
    *) continue ;;
  esac
  [ -n "$path" ] || continue
  if pkgs="$(owner "$path")" && [ -n "$pkgs" ]; then
    while read -r p; do debs+=("$p"); done <<<"$pkgs"
  elif [[ "$path" == */swift/* ]]; then
    swift+=("$(readlink -f "$path")")
  else
    echo "runtime-libs: $path is owned by no Debian package and is not Swift runtime" >&2; bad=1
  fi
done <<<"$ldd_out"
[ "$bad" -eq 0 ] || exit 2

sorted_debs="$( (( ${#debs[@]} )) && printf '%s\n' "${debs[@]}" | sort -u || true)"
sorted_swift="$( (( ${#swift[@]} )) && printf '%s\n' "${swift[@]}" | sort -u || true)"

case "$mode" in
  deb) [ -z "$sorted_debs" ] || echo "$sorted_debs" ;;
  swift) [ -z "$sorted_swift" ] || echo "$sorted_swift" ;;
  all)
    [ -z "$sorted_debs" ] || sed 's/^/deb /' <<<"$sorted_debs"
    [ -z "$sorted_swift" ] || sed 's/^/swift /' <<<"$sorted_swift" ;;
  check)
    decl="$(tr -s ' \t\n' '\n' <<<"$declared" | grep -v '^$' | sort -u || true)"
    missing="$(comm -23 <(echo "$sorted_debs") <(echo "$decl") | grep -v '^$' || true)"
    extra="$(comm -13 <(echo "$sorted_debs") <(echo "$decl") | grep -v '^$' || true)"
    echo "runtime-libs: $bin needs $(grep -c . <<<"$sorted_debs" || true) Debian packages and $(grep -c . <<<"$sorted_swift" || true) Swift runtime libraries"
    rc=0
    if [ -n "$missing" ]; then
      echo "runtime-libs: MISSING from the declared list (the image would not start): $(echo $missing)" >&2; rc=1
    fi
    if [ -n "$extra" ]; then
      if [ "$strict" -eq 1 ]; then
        echo "runtime-libs: EXTRA in the declared list (not linked by the binary): $(echo $extra)" >&2; rc=1
      else
        echo "runtime-libs: warning: declared but not linked by this binary: $(echo $extra)" >&2
      fi
    fi
    if [ "$rc" -ne 0 ]; then
      echo "runtime-libs: the list the binary needs is: $(echo $sorted_debs)" >&2
    else
      echo "runtime-libs: declared list covers every linked library"
    fi
    exit "$rc" ;;
esac
