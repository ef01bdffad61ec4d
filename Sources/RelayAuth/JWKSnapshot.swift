/// One fetched key set, ready to verify: the parsed ``JWKSet`` and, per key, the PEM
/// that libjwt verifies with (built once here by ``JWKKeyBuilder``). Immutable, so every
/// worker can read the same snapshot while the fetcher builds the next one; the
/// ``JWKSKeyStore`` swaps it atomically.
public final class JWKSnapshot: Sendable {
    /// The usable keys (those OpenSSL refused are moved to `keySet.skipped`).
    public let keySet: JWKSet
    /// PEM `PUBLIC KEY` bytes of `keySet.keys[i]`.
    let pems: [[UInt8]]

    /// Parses `document` and builds every key.
    /// - Throws: ``JWKSet/Invalid`` when the document is not a key set or no key is usable.
    public init(document: [UInt8]) throws {
        let parsed = try JWKSet(document: document)
        var keys: [JSONWebKey] = []
        var pems: [[UInt8]] = []
        var skipped = parsed.skipped
        for k in parsed.keys {
            do {
                pems.append(Array(try JWKKeyBuilder.publicPEM(k).utf8))
                keys.append(k)
            } catch let r as JSONWebKey.Rejected {
                skipped.append(r)
            }
        }
        guard !keys.isEmpty else {
            throw JWKSet.Invalid("JWKS has no usable signing key (\(skipped.count) skipped: \(skipped.prefix(3).map(\.description).joined(separator: "; ")))")
        }
        keySet = JWKSet(keys: keys, skipped: skipped)
        self.pems = pems
    }

    /// The key ids in the set (for logs), `-` for a key without one.
    public var kids: [String] { keySet.keys.map { $0.kid ?? "-" } }
}
