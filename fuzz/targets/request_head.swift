// libFuzzer target: RelayCore.RequestHeadValidator.
// Invariants: never crashes; feeding split at a fuzzer-chosen point gives the same outcome and
// the same bytes used as feeding whole; an accepted head never has two Content-Length lines,
// a Content-Length with a Transfer-Encoding, a NUL/bare CR/bare LF, whitespace before a
// colon, a folded line, a version other than 1.0/1.1, or (on 1.1) other than one Host line.

private func outcome(_ bytes: ArraySlice<UInt8>, cut: Int, limits: RequestHeadValidator.Limits) -> (String, Int) {
    var v = RequestHeadValidator(limits: limits)
    var used = 0
    for piece in [bytes.prefix(cut), bytes.dropFirst(cut)] {
        switch v.feed(Array(piece)) {
        case .needMore: used += piece.count
        case .complete(let h, let n): return ("complete \(h)", used + n)
        case .rejected(let r): return ("rejected \(r.reason)", -1)
        }
    }
    return ("needMore", used)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRequestHead(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard let input = FuzzInput(data, size) else { return 0 }
    var limits = RequestHeadValidator.Limits()
    if input.flags & 1 == 1 {  // small limits so the fuzzer reaches 414 / 431 often
        limits.maxHeadBytes = 256
        limits.maxTargetBytes = 32
        limits.maxFieldLines = 6
    }
    let (bytes, cut) = (input.payload, input.cut)
    let whole = outcome(bytes, cut: bytes.count, limits: limits)
    let split = outcome(bytes, cut: cut, limits: limits)
    guard whole == split else { fatalError("split at \(cut): \(split) vs whole \(whole)") }

    var v = RequestHeadValidator(limits: limits)
    guard case .complete(let head, let used) = v.feed(Array(bytes)) else { return 0 }
    guard used == head.headBytes, used <= limits.maxHeadBytes else { fatalError("bytesUsed \(used) vs headBytes \(head.headBytes)") }
    let text = Array(bytes.prefix(used))
    // Independent re-reading of the accepted head.
    guard text.suffix(4) == [13, 10, 13, 10] else { fatalError("head does not end in CRLF CRLF") }
    guard !text.contains(0) else { fatalError("accepted a NUL") }
    for (i, b) in text.enumerated() {
        if b == 10, i == 0 || text[i - 1] != 13 { fatalError("accepted a bare LF") }
        if b == 13, i + 1 >= text.count || text[i + 1] != 10 { fatalError("accepted a bare CR") }
    }
    let lines = text.dropFirst(head.leadingEmptyLineBytes).split(separator: 10).map { Array($0.dropLast()) }.filter { !$0.isEmpty }
    guard let requestLine = lines.first else { fatalError("no request line") }
    guard requestLine.suffix(9) == Array(" HTTP/1.1".utf8) || requestLine.suffix(9) == Array(" HTTP/1.0".utf8) else {
        fatalError("accepted version in \(String(decoding: requestLine, as: UTF8.self))")
    }
    var lengths: [String] = []
    var hosts = 0
    var te = false
    for line in lines.dropFirst() {
        if line.first == 32 || line.first == 9 { fatalError("accepted a folded line") }
        guard let colon = line.firstIndex(of: 58) else { fatalError("accepted a field line without colon") }
        if line[colon - 1] == 32 || line[colon - 1] == 9 { fatalError("accepted whitespace before a colon") }
        let name = String(decoding: line[..<colon], as: UTF8.self).lowercased()
        let value = String(decoding: line[(colon + 1)...], as: UTF8.self)
        if name == "content-length" { lengths.append(value) }
        if name == "host" { hosts += 1 }
        if name == "transfer-encoding" { te = true }
    }
    if lengths.count > 1 { fatalError("accepted \(lengths.count) Content-Length lines: \(lengths)") }
    if te && !lengths.isEmpty { fatalError("accepted Content-Length with Transfer-Encoding") }
    if hosts > 1 || (head.minorVersion == 1 && hosts != 1) { fatalError("accepted \(hosts) Host lines on HTTP/1.\(head.minorVersion)") }
    if head.isHead != (head.method == "HEAD") { fatalError("isHead") }
    return 0
}
