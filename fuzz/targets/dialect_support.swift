// Shared by the dialect fuzz targets: feed bytes as an SSE stream, step the dialect on each
// event, join deltas, check the joiner's invariant. Also parses the raw input as one JSON
// document so LenientJSON sees inputs that are not framed as SSE.
// Parts (docs/PROTOCOL.md §5.5): until a step fails, a tool call's delta and end come only
// after its start and before its end, ids are never reused, and an end's input is the
// call's argument pieces parsed (`{}` for none).

func fuzzDialect<D: UpstreamDialect>(_ dialect: inout D, _ input: UnsafeBufferPointer<UInt8>) {
    _ = try? LenientJSON.parse(input)
    var parser = SSEParser(maxLineBytes: 1 << 16)
    guard let items = try? parser.feed(UnsafeRawBufferPointer(input)) else { return }
    var joiner = SurrogateJoiner()
    var joined = ""
    var units: [UInt16] = []
    var calls = ToolCallRules()
    for case .event(let message) in items {
        guard let steps = try? dialect.step(message) else { continue }
        for step in steps {
            if case .delta(let s) = step {
                units += s.units
                joined += joiner.append(s.units)
            }
            calls.check(step)
        }
        if steps.contains(.end) {
            for step in dialect.streamEnded() { calls.check(step) }
            if !calls.failed && !calls.open.isEmpty { fatalError("done with tool calls open: \(calls.open.keys)") }
        }
    }
    joined += joiner.finish()
    guard joined == String(decoding: units, as: UTF16.self) else { fatalError("joined deltas differ from whole decoding") }
    _ = (dialect.finishReason, dialect.promptTokens, dialect.completionTokens)
}

/// The tool-call rules of docs/PROTOCOL.md §5.5, checked on the steps a dialect emits.
struct ToolCallRules {
    /// Open calls: id → argument text so far.
    var open: [String: String] = [:]
    var ended: Set<String> = []
    /// A `.fail` was seen: the answer ended there, nothing after it counts.
    var failed = false

    mutating func check(_ step: DialectStep) {
        if failed { return }
        switch step {
        case .fail:
            failed = true
        case .part(.toolCallStart(let id, let name)):
            guard !id.isEmpty, !name.isEmpty else { fatalError("start without id or name") }
            guard open[id] == nil, !ended.contains(id) else { fatalError("id \(id) started twice") }
            open[id] = ""
        case .part(.toolCallDelta(let id, let arguments)):
            guard open[id] != nil else { fatalError("delta of \(id), which is not open") }
            open[id]! += arguments
        case .part(.toolCallEnd(let id, _, let input)):
            guard let text = open.removeValue(forKey: id) else { fatalError("end of \(id), which is not open") }
            ended.insert(id)
            let expected: JSONValue
            if text.utf8.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }) {
                expected = .object([])
            } else {
                guard let v = try? LenientJSON.parse(text) else { fatalError("end of \(id) with arguments that are not JSON") }
                expected = v
            }
            guard input == expected else { fatalError("end of \(id): input differs from its arguments parsed") }
        default:
            break
        }
    }
}
