// libFuzzer target: the OpenAI Responses dialect on arbitrary SSE bytes (SSEParser →
// OpenAIResponsesDialect.step, LenientJSON), with SurrogateJoiner over the deltas.
// Invariants: never crashes; the joined delta text equals decoding all delta units at once;
// the tool-call rules of dialect_support.swift.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOpenAIResponsesChunk(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var dialect = OpenAIResponsesDialect()
    fuzzDialect(&dialect, UnsafeBufferPointer(start: data, count: size))
    return 0
}
