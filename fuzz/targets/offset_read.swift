// libFuzzer target: the offset read's parsers (RelayServer/Streams/Decisions/OffsetReadDecision.swift):
// ReadOffset.parse, ReadMode.parse, StreamCursor.next on a fuzzer-chosen `cursor`.
// Invariants: an accepted offset is `-1`, `now`, or 1–20 ASCII digits whose value it is, and
// the offset the relay emits for it parses back to the same value and is 20 digits; an
// accepted `live` is `long-poll` or `sse`; a cursor never goes backwards (DS §10.1).

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOffsetRead(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    if let o = try? ReadOffset.parse(text) {
        switch o {
        case .start: guard text == "-1" else { fatalError("\(text.debugDescription) parsed as -1") }
        case .now: guard text == "now" else { fatalError("\(text.debugDescription) parsed as now") }
        case .after(let seq):
            guard (1...20).contains(text.utf8.count), text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), UInt64(text) == seq
            else { fatalError("offset \(text.debugDescription) parsed as \(seq)") }
            let emitted = ReadOffset.format(seq)
            guard emitted.utf8.count == 20, (try? ReadOffset.parse(emitted)) == .after(seq)
            else { fatalError("offset \(seq) emitted as \(emitted)") }
        }
    }
    if let m = try? ReadMode.parse(text) {
        guard m == .longPoll && text == "long-poll" || m == .sse && text == "sse" else { fatalError("live \(text.debugDescription) accepted") }
    }
    let wall = StreamCursor.epochMs + UInt64(size) * 7_919_000
    let current = StreamCursor.next(wallMs: wall, client: nil, jitterSeconds: 1)
    let next = StreamCursor.next(wallMs: wall, client: text, jitterSeconds: UInt64(size % 4000))
    guard next >= current else { fatalError("cursor went backwards: \(next) < \(current)") }
    if let c = UInt64(text), (1...20).contains(text.utf8.count), c >= current, c < UInt64.max - 200 {
        guard next > c else { fatalError("cursor \(next) not above the client's \(c)") }
    }
    return 0
}
