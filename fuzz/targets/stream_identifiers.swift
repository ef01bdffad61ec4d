// libFuzzer target: RelayCore.RequestID(validating:) and LastEventID.parse.
// Invariants: an accepted request id is 16–64 bytes of [A-Za-z0-9_-] and equals its input;
// an accepted Last-Event-ID is the decimal value of the input without surrounding spaces/tabs.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzStreamIdentifiers(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    if let id = try? RequestID(validating: text) {
        let u = Array(id.value.utf8)
        guard id.value == text, (16...64).contains(u.count),
              u.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x2D || $0 == 0x5F })
        else { fatalError("accepted a bad request id: \(text.debugDescription)") }
    }
    if let seq = try? LastEventID.parse(text) {
        var t = Substring(text)
        while let f = t.first, f == " " || f == "\t" { t.removeFirst() }
        while let l = t.last, l == " " || l == "\t" { t.removeLast() }
        if t.isEmpty {
            guard seq == 0 else { fatalError("empty Last-Event-ID is not 0") }
        } else {
            guard t.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), UInt64(t) == seq else {
                fatalError("Last-Event-ID \(text.debugDescription) parsed as \(seq)")
            }
        }
    }
    return 0
}
