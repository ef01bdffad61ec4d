// libFuzzer target: RelayEventStore's SealedFormat (docs/DATA_MODEL.md §15): the framing of
// values sealed at rest, read back from Redis (which anyone with write access can alter).
// Invariants: no crash; `binary(ofText:)` accepts only canonical padded base64 after `~`
// (re-encoding gives the input back); an accepted binary form parses into ranges that lie
// in it and tile it (header, nonce, ciphertext, tag); `records` tiles its input, each
// record starting with `~` and holding no other.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSealedFormat(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = UnsafeBufferPointer(start: data, count: size)
    if let bin = try? SealedFormat.binary(ofText: input) {
        let again = bin.withUnsafeBufferPointer { SealedFormat.text(ofBinary: $0) }
        guard Array(again.utf8) == Array(input) else { fatalError("non-canonical base64 accepted") }
        if let p = try? SealedFormat.parse(bin) {
            guard p.nonce.count == SealedFormat.nonceBytes, p.tag.count == SealedFormat.tagBytes,
                  p.nonce.lowerBound == 2 + p.kid.utf8.count, p.ciphertext.lowerBound == p.nonce.upperBound,
                  p.tag.lowerBound == p.ciphertext.upperBound, p.tag.upperBound == bin.count,
                  (1...32).contains(p.kid.utf8.count)
            else { fatalError("parsed ranges do not tile the value: \(p)") }
            guard again.utf8.count == SealedFormat.sealedLength(plaintextBytes: p.ciphertext.count, kidBytes: p.kid.utf8.count)
            else { fatalError("sealedLength disagrees with a parsed value") }
        }
    }
    let bytes = Array(input)
    if let records = try? SealedFormat.records(bytes) {
        var at = 0
        for r in records {
            guard r.lowerBound == at, !r.isEmpty, bytes[r.lowerBound] == SealedFormat.marker,
                  !bytes[(r.lowerBound + 1)..<r.upperBound].contains(SealedFormat.marker)
            else { fatalError("records do not tile the text") }
            at = r.upperBound
        }
        guard at == bytes.count else { fatalError("records leave bytes out") }
    }
    return 0
}
