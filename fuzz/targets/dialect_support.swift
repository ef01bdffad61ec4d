// Shared by the dialect fuzz targets: feed bytes as an SSE stream, step the dialect on each
// event, join deltas, check the joiner's invariant. Also parses the raw input as one JSON
// document so LenientJSON sees inputs that are not framed as SSE.

func fuzzDialect<D: UpstreamDialect>(_ dialect: inout D, _ input: UnsafeBufferPointer<UInt8>) {
    _ = try? LenientJSON.parse(input)
    var parser = SSEParser(maxLineBytes: 1 << 16)
    guard let items = try? parser.feed(UnsafeRawBufferPointer(input)) else { return }
    var joiner = SurrogateJoiner()
    var joined = ""
    var units: [UInt16] = []
    for case .event(let message) in items {
        guard let step = try? dialect.step(message) else { continue }
        if case .delta(let s) = step {
            units += s.units
            joined += joiner.append(s.units)
        }
    }
    joined += joiner.finish()
    guard joined == String(decoding: units, as: UTF16.self) else { fatalError("joined deltas differ from whole decoding") }
    _ = (dialect.finishReason, dialect.promptTokens, dialect.completionTokens)
}
