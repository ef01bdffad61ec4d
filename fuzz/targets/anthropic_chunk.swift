// libFuzzer target: the Anthropic Messages dialect on arbitrary SSE bytes (SSEParser →
// AnthropicDialect.step, LenientJSON), with SurrogateJoiner over the deltas.
// Invariants: never crashes; the joined delta text equals decoding all delta units at once.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAnthropicChunk(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var dialect = AnthropicDialect()
    fuzzDialect(&dialect, UnsafeBufferPointer(start: data, count: size))
    return 0
}
