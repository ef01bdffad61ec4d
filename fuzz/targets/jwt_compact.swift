// libFuzzer target: RelayAuth.CompactJWS (RFC 7515 §7.1) and Base64URL (RFC 4648 §5).
// Invariants: base64url decoding accepts only canonical text (decode then encode gives the
// input back); an accepted token has three segments whose decodings re-encode to them.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCompactJWS(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if let decoded = Base64URL.decode(bytes) {
        guard Array(Base64URL.encode(decoded).utf8) == bytes else { fatalError("non-canonical base64url accepted") }
    }
    let token = String(decoding: bytes, as: UTF8.self)
    if let jws = try? CompactJWS(token) {
        let rebuilt = [jws.header, jws.payload, jws.signature].map { Base64URL.encode($0) }.joined(separator: ".")
        guard rebuilt == token else { fatalError("token does not re-encode to itself") }
        _ = try? jws.headerObject()
    }
    return 0
}
