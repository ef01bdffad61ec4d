// libFuzzer target: RelayCore.SSEParser (WHATWG HTML §9.2.5–9.2.6).
// Invariants: never crashes; feeding the input split at a fuzzer-chosen point (and byte by
// byte for short inputs) gives the same items, last event ID and retry as feeding it whole;
// a line longer than maxLineBytes always throws, in both feedings.

private func run(_ bytes: [UInt8], splits: [Int], maxLine: Int) -> ([SSEParser.Item], String, Int?, Bool) {
    var p = SSEParser(maxLineBytes: maxLine)
    var items: [SSEParser.Item] = []
    var start = 0
    for end in splits + [bytes.count] where end >= start {
        do {
            items += try p.feed(Array(bytes[start..<end]))
        } catch {
            return (items, p.lastEventId, p.retry, true)
        }
        start = end
    }
    p.finish()
    return (items, p.lastEventId, p.retry, false)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSSEParser(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard let input = FuzzInput(data, size) else { return 0 }
    let maxLine = Int(input.flags) * 4 + 1  // small limits exercise lineTooLong
    let bytes = Array(input.payload)
    let cut = input.cut
    let whole = run(bytes, splits: [], maxLine: maxLine)
    let split = run(bytes, splits: [cut], maxLine: maxLine)
    if whole.3 != split.3 { fatalError("lineTooLong differs when split at \(cut)") }
    if !whole.3 {
        if whole.0 != split.0 || whole.1 != split.1 || whole.2 != split.2 {
            fatalError("split at \(cut) changed the result")
        }
        if bytes.count <= 64 {
            let bytewise = run(bytes, splits: Array(0..<bytes.count), maxLine: maxLine)
            if bytewise.0 != whole.0 || bytewise.1 != whole.1 || bytewise.2 != whole.2 {
                fatalError("byte-by-byte feeding changed the result")
            }
        }
    }
    return 0
}
