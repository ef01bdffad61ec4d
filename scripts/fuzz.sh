#!/usr/bin/env bash
# libFuzzer targets for StreamRelay's pure parsers; see docs/FUZZING.md.
#
#   scripts/fuzz.sh [--seconds N] [--build-only] [target ...]
#
# Each target is fuzz/targets/<target>.swift compiled together with the pure Swift sources it
# exercises (copied, with `import Relay…` lines removed, so they form one module) by
#   swiftc -parse-as-library -O -sanitize=fuzzer,address
# and run for N seconds (default 60) on its seed corpus fuzz/corpus/<target>/ plus a work corpus
# in .build/fuzz/<target>/corpus (new inputs go there, never into the repo). A crash leaves its
# input in .build/fuzz/<target>/ (crash-…) and makes the script exit 1 after all targets ran.
# Prints executions per target at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

SECONDS_EACH=60
BUILD_ONLY=0
TARGETS=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --seconds) SECONDS_EACH="$2"; shift 2 ;;
        --build-only) BUILD_ONLY=1; shift ;;
        -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
        *) TARGETS+=("$1"); shift ;;
    esac
done

SWIFTC="${SWIFTC:-swiftc}"
# A trap under ASan otherwise waits on the Swift runtime backtracer; libFuzzer prints the stack.
export SWIFT_BACKTRACE=enable=no
C=Sources/RelayCore
H=Sources/RelayHTTP/Decisions
# Every target gets all of RelayCore (pure Swift), so a new file there never breaks a build.
CORE_ERR="$C/*.swift"
declare -A SOURCES=(
    [sse_parser]="fuzz/targets/fuzz_input.swift $CORE_ERR"
    [stream_identifiers]="$C/StreamIdentifiers.swift $CORE_ERR"
    [chat_request]="$C/ChatRequest.swift $CORE_ERR"
    [jwt_compact]="Sources/RelayAuth/CompactJWS.swift Sources/RelayAuth/Base64URL.swift Sources/RelayAuth/AuthError.swift $CORE_ERR"
    [openai_chunk]="fuzz/targets/dialect_support.swift"
    [anthropic_chunk]="fuzz/targets/dialect_support.swift"
    [openai_responses_chunk]="fuzz/targets/dialect_support.swift"
    [request_head]="fuzz/targets/fuzz_input.swift $H/RequestHead.swift $H/RequestHeadValidator.swift $CORE_ERR"
    [offset_read]="Sources/RelayServer/Streams/Decisions/OffsetReadDecision.swift Sources/RelayServer/Streams/Decisions/ResumeDecision.swift $CORE_ERR"
    [request_framer]="fuzz/targets/fuzz_input.swift $H/RequestFramer.swift $H/RequestHead.swift $H/RequestHeadValidator.swift $CORE_ERR"
    [read_ticket]="fuzz/targets/openssl_standin.swift Sources/RelayAuth/ReadTicket.swift Sources/RelayAuth/Base64URL.swift $CORE_ERR"
    [sealed_format]="Sources/RelayEventStore/Decisions/SealedFormat.swift"
)
DIALECT="Sources/RelayUpstream/HTTP/OpenAIDialect.swift Sources/RelayUpstream/Decisions/ToolCallAssembler.swift Sources/RelayUpstream/HTTP/HTTPContinuation.swift Sources/RelayUpstream/HTTP/AnthropicDialect.swift Sources/RelayUpstream/HTTP/OpenAIResponsesDialect.swift Sources/RelayUpstream/HTTP/UpstreamDialect.swift Sources/RelayUpstream/HTTP/UpstreamErrorBody.swift $C/LenientJSON.swift $C/SurrogateJoiner.swift $C/SSEParser.swift $C/SSEMessage.swift $C/ChatRequest.swift $CORE_ERR"
SOURCES[openai_chunk]+=" $DIALECT"
SOURCES[anthropic_chunk]+=" $DIALECT"
SOURCES[openai_responses_chunk]+=" $DIALECT"
ALL=(sse_parser stream_identifiers chat_request jwt_compact openai_chunk openai_responses_chunk anthropic_chunk request_head request_framer offset_read read_ticket sealed_format)
[[ ${#TARGETS[@]} -eq 0 ]] && TARGETS=("${ALL[@]}")

build() {
    local t="$1" out=".build/fuzz/$1"
    [[ -n "${SOURCES[$t]:-}" ]] || { echo "unknown target $t (known: ${ALL[*]})" >&2; exit 2; }
    rm -rf "$out/src"; mkdir -p "$out/src" "$out/corpus"
    cp "fuzz/targets/$t.swift" "$out/src/"
    for f in ${SOURCES[$t]}; do
        sed -e '/^import Relay/d' -e '/^@testable import/d' "$f" > "$out/src/$(basename "$f")"
    done
    # ld.gold warns once per ASan helper symbol ("Cannot export local symbol"): harmless, filtered.
    "$SWIFTC" -parse-as-library -O -sanitize=fuzzer,address -module-name "Fuzz_$t" "$out"/src/*.swift -o "$out/$t" \
        2> >(grep -v "Cannot export local symbol" >&2)
}

declare -A EXECS
FAILED=()
for t in "${TARGETS[@]}"; do
    echo "== $t: building"
    build "$t"
    [[ $BUILD_ONLY -eq 1 ]] && continue
    out=".build/fuzz/$t"
    echo "== $t: fuzzing for ${SECONDS_EACH}s"
    set +e
    "$out/$t" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 -max_len=8192 -print_final_stats=1 \
        -artifact_prefix="$out/" "$out/corpus" "fuzz/corpus/$t" > "$out/log.txt" 2>&1
    rc=$?
    set -e
    EXECS[$t]=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$out/log.txt" | grep -o '[0-9]*$' || echo "?")
    if [[ $rc -ne 0 ]]; then
        FAILED+=("$t")
        echo "!! $t: fuzzer exited $rc; see $out/log.txt and $out/crash-*"
        grep -m5 -E 'Fatal error|ERROR: |SUMMARY' "$out/log.txt" || true
    fi
done

if [[ $BUILD_ONLY -eq 0 ]]; then
    echo "== executions (${SECONDS_EACH}s each)"
    for t in "${TARGETS[@]}"; do printf '%-20s %s\n' "$t" "${EXECS[$t]}"; done
fi
if [[ ${#FAILED[@]} -gt 0 ]]; then
    echo "FAILED: ${FAILED[*]}"
    exit 1
fi
