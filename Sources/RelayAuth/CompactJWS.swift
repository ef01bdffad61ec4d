import Foundation

/// A token split into its three compact-serialization segments (RFC 7515 §7.1),
/// each checked to be canonical base64url, with the header and payload decoded.
struct CompactJWS {
    /// Decoded JOSE header JSON bytes.
    let header: [UInt8]
    /// Decoded payload (JWT claims set) bytes.
    let payload: [UInt8]
    /// Decoded signature bytes.
    let signature: [UInt8]

    /// Splits and decodes `token`, which must already be within the length cap.
    /// Throws `AuthError(.malformedToken)` unless it is exactly
    /// `b64url "." b64url "." b64url` with three non-empty segments.
    init(_ token: String) throws {
        let bytes = Array(token.utf8)
        var parts: [ArraySlice<UInt8>] = []
        parts.reserveCapacity(3)
        var start = 0
        for (i, b) in bytes.enumerated() where b == UInt8(ascii: ".") {
            parts.append(bytes[start..<i])
            start = i + 1
            if parts.count > 2 { throw AuthError(.malformedToken, "more than three segments") }
        }
        parts.append(bytes[start...])
        guard parts.count == 3 else {
            throw AuthError(.malformedToken, "expected 3 segments, found \(parts.count)")
        }
        guard let h = Base64URL.decode(parts[0]) else {
            throw AuthError(.malformedToken, "header segment is not canonical base64url")
        }
        guard let p = Base64URL.decode(parts[1]) else {
            throw AuthError(.malformedToken, "payload segment is not canonical base64url")
        }
        // An empty signature is the `alg: none` shape (RFC 7518 §3.6): never accepted.
        guard !parts[2].isEmpty else {
            throw AuthError(.algorithmNotAllowed, "unsigned token (empty signature segment)")
        }
        guard let s = Base64URL.decode(parts[2]) else {
            throw AuthError(.malformedToken, "signature segment is not canonical base64url")
        }
        header = h
        payload = p
        signature = s
    }

    /// Parses the header as a JSON object (RFC 7515 §4). Throws `.malformedToken`.
    func headerObject() throws -> [String: Any] {
        guard let obj = try? JSONSerialization.jsonObject(with: Data(header)) as? [String: Any] else {
            throw AuthError(.malformedToken, "header is not a JSON object")
        }
        return obj
    }
}
