// libFuzzer target: RelayCore.RequestFramer (heads, Content-Length and chunked bodies,
// keep-alive) over a connection's bytes.
// Invariants: never crashes; splitting the bytes at a fuzzer-chosen point gives the same
// events; events alternate head → endOfRequest (a rejection only last); `isIdle` agrees.

private func events(_ bytes: ArraySlice<UInt8>, cut: Int, limits: RequestHeadValidator.Limits) -> ([RequestFramer.Event], Bool, Int) {
    var f = RequestFramer(limits: limits)
    let e = f.feed(Array(bytes.prefix(cut))) + f.feed(Array(bytes.dropFirst(cut)))
    return (e, f.isIdle, f.completedRequests)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRequestFramer(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard let input = FuzzInput(data, size) else { return 0 }
    var limits = RequestHeadValidator.Limits()
    if input.flags & 1 == 1 {
        limits.maxHeadBytes = 256
        limits.maxFieldLines = 6
        limits.maxBodyBytes = 64
    }
    let (bytes, cut) = (input.payload, input.cut)
    let whole = events(bytes, cut: bytes.count, limits: limits)
    let split = events(bytes, cut: cut, limits: limits)
    guard whole.0 == split.0, whole.1 == split.1, whole.2 == split.2 else { fatalError("split at \(cut) changed the events") }
    var open = false
    var ends = 0
    for (k, e) in whole.0.enumerated() {
        switch e {
        case .head(let h):
            if open { fatalError("two heads without an end") }
            open = true
            if let max = limits.maxBodyBytes, let n = h.contentLength, n > max { fatalError("accepted Content-Length \(n) > \(max)") }
        case .endOfRequest:
            if !open { fatalError("end without a head") }
            open = false
            ends += 1
        case .rejected:
            if k != whole.0.count - 1 { fatalError("events after a rejection") }
        }
    }
    if ends != whole.2 { fatalError("completedRequests \(whole.2) vs \(ends) ends") }
    return 0
}
