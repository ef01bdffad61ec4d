// libFuzzer target: RelayAuth.ReadTicket.verify (docs/PROTOCOL.md §2.5) on arbitrary text, the
// `?ticket=` of an unauthenticated request. HMAC is a deterministic stand-in here
// (openssl_standin.swift): the parser is under test.
// Invariants: never crashes; an accepted ticket has a 24-hex owner, a valid request id, a
// non-empty sid, names the key it was verified with, and signing what was read with that key
// gives the input back (one text per ticket: nothing in the text is ignored).

let fuzzKey = ReadTicketKey(secret: Array(repeating: 0x5A, count: 32))

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzReadTicket(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    // The fuzzer may also produce a validly "signed" ticket: re-sign the parsed parts of a
    // well-formed input so that the accepted path is reached, then check both.
    for candidate in [text, resigned(text)].compactMap({ $0 }) {
        guard let t = try? ReadTicket.verify(candidate, keys: [fuzzKey], now: 0) else { continue }
        guard t.ownerHash.utf8.count == 24, (16...64).contains(t.requestID.utf8.count), !t.sid.isEmpty else {
            fatalError("accepted a ticket with bad parts: \(t)")
        }
        guard ReadTicket.keyID(of: candidate) == fuzzKey.id else { fatalError("accepted under another key id") }
        guard t.signed(with: fuzzKey) == candidate else { fatalError("accepted text is not the ticket's one text: \(candidate)") }
    }
    return 0
}

/// `text` with its kid and MAC replaced by the fuzz key's, when it has seven parts.
func resigned(_ text: String) -> String? {
    var parts = text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
    guard parts.count == 7 else { return nil }
    parts[1] = fuzzKey.id
    let unsigned = parts.dropLast().joined(separator: ".")
    return unsigned + "." + Base64URL.encode(OpenSSLShim.hmacSHA256(key: fuzzKey.secret, data: Array(unsigned.utf8)))
}
