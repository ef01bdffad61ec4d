// libFuzzer target: the OpenAI-compatible dialect on arbitrary SSE bytes (SSEParser →
// OpenAIDialect.step, LenientJSON), with SurrogateJoiner over the deltas.
// Invariants: never crashes; the joined delta text equals decoding all delta units at once.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOpenAIChunk(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var dialect = OpenAIDialect()
    fuzzDialect(&dialect, UnsafeBufferPointer(start: data, count: size))
    return 0
}
