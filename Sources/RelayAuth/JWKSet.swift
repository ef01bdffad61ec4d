import Foundation

/// A JSON Web Key Set (RFC 7517 §5) reduced to the keys the relay can use, and the rule
/// that picks a token's key. Pure: no C; ``JWKSnapshot`` adds the OpenSSL keys.
///
/// Parsing is lenient per key and strict per set: keys the relay cannot use (another
/// `kty`, `use: enc`, a short RSA modulus, a bad point size, a repeated `kid`) are skipped
/// and reported, as identity providers publish such keys beside their signing keys; a
/// document that is not `{"keys":[…]}` or leaves no usable key is an error, so the caller
/// keeps its last good set.
public struct JWKSet: Sendable, Equatable {
    /// The usable keys, in document order.
    public let keys: [JSONWebKey]
    /// Why each skipped key was skipped (for one log line; no key material).
    public let skipped: [JSONWebKey.Rejected]

    /// Largest accepted JWKS document, bytes (256 KiB; real sets are a few KiB).
    public static let maxDocumentBytes = 256 * 1024

    /// A JWKS document that cannot be used.
    public struct Invalid: Error, Sendable, Equatable, CustomStringConvertible {
        public var description: String
        init(_ d: String) { description = d }
    }

    /// Creates a set of already-parsed keys (tests, single-key setups).
    public init(keys: [JSONWebKey], skipped: [JSONWebKey.Rejected] = []) {
        self.keys = keys
        self.skipped = skipped
    }

    /// Parses a JWKS document (UTF-8 JSON).
    /// - Throws: ``Invalid`` when it is larger than ``maxDocumentBytes``, not a JSON object
    ///   with a `keys` array, or has no usable key.
    public init(document: [UInt8]) throws {
        guard document.count <= Self.maxDocumentBytes else {
            throw Invalid("JWKS document is \(document.count) bytes; at most \(Self.maxDocumentBytes)")
        }
        guard let obj = (try? JSONSerialization.jsonObject(with: Data(document))) as? [String: Any],
              let list = obj["keys"] as? [Any] else {
            throw Invalid("JWKS document is not a JSON object with a \"keys\" array (RFC 7517 §5)")
        }
        var keys: [JSONWebKey] = []
        var skipped: [JSONWebKey.Rejected] = []
        var seen = Set<String>()
        for item in list {
            guard let o = item as? [String: Any] else {
                skipped.append(.init(kid: nil, reason: "not a JSON object"))
                continue
            }
            do {
                let k = try JSONWebKey(json: o)
                if let kid = k.kid, !seen.insert(kid).inserted {
                    skipped.append(.init(kid: kid, reason: "repeated kid; the first key with it is used"))
                    continue
                }
                keys.append(k)
            } catch let r as JSONWebKey.Rejected {
                skipped.append(r)
            }
        }
        guard !keys.isEmpty else {
            throw Invalid("JWKS has no usable signing key (\(skipped.count) skipped: \(skipped.prefix(3).map(\.description).joined(separator: "; ")))")
        }
        self.init(keys: keys, skipped: skipped)
    }

    /// The outcome of ``select(kid:alg:)``.
    public enum Selection: Equatable, Sendable {
        /// Use `keys[index]`.
        case key(index: Int)
        /// No key has this `kid`: the set may be stale (refetch, rate-limited).
        case unknownKid
        /// The `kid` names a key whose type, curve or `alg` does not fit the token's `alg`.
        case algorithmMismatch
        /// No `kid` and not exactly one key for the token's `alg`.
        case ambiguous(candidates: Int)
    }

    /// Picks the key for a token whose header has `kid` (optional) and `alg`:
    /// * with a `kid`: the key with that `kid`, which must allow `alg` (its `alg`, else its
    ///   `kty`/`crv`); a key with another type or `alg` is `algorithmMismatch`, never a
    ///   fallback to another key;
    /// * without a `kid`: the one key that allows `alg`; none or several is `ambiguous`.
    public func select(kid: String?, alg: JWKAlgorithm) -> Selection {
        if let kid {
            guard let i = keys.firstIndex(where: { $0.kid == kid }) else { return .unknownKid }
            return keys[i].algorithms.contains(alg) ? .key(index: i) : .algorithmMismatch
        }
        let candidates = keys.indices.filter { keys[$0].algorithms.contains(alg) }
        return candidates.count == 1 ? .key(index: candidates[0]) : .ambiguous(candidates: candidates.count)
    }
}
