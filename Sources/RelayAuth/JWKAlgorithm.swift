import Foundation

/// A JWS algorithm (RFC 7518 §3.1) that a key from a JSON Web Key Set may verify.
/// HMAC (`HS*`) and `none` are deliberately absent: a JWKS holds public keys only, and an
/// HMAC "verified" with a public key's bytes as the secret is the classic algorithm
/// confusion attack.
public enum JWKAlgorithm: String, CaseIterable, Sendable, Hashable {
    /// RSASSA-PKCS1-v1_5 with SHA-256 (RFC 7518 §3.3).
    case rs256 = "RS256"
    /// RSASSA-PKCS1-v1_5 with SHA-384.
    case rs384 = "RS384"
    /// RSASSA-PKCS1-v1_5 with SHA-512.
    case rs512 = "RS512"
    /// ECDSA P-256 with SHA-256 (RFC 7518 §3.4).
    case es256 = "ES256"
    /// ECDSA P-384 with SHA-384.
    case es384 = "ES384"

    /// The key type (`kty`, RFC 7518 §6.1) this algorithm needs.
    public var keyType: JSONWebKey.KeyType {
        switch self {
        case .rs256, .rs384, .rs512: return .rsa
        case .es256, .es384: return .ec
        }
    }

    /// The curve (`crv`, RFC 7518 §6.2.1.1) an EC algorithm needs; `nil` for RSA.
    public var curve: JSONWebKey.Curve? {
        switch self {
        case .es256: return .p256
        case .es384: return .p384
        default: return nil
        }
    }

    /// Parses a comma-separated allow-list such as `RS256,ES256` (case-sensitive, RFC 7515
    /// §4.1.1). - Throws: ``AuthConfigurationError`` for an unknown or empty entry.
    public static func parseList(_ text: String) throws -> Set<JWKAlgorithm> {
        var out = Set<JWKAlgorithm>()
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            let name = part.trimmingCharacters(in: .whitespaces)
            guard let a = JWKAlgorithm(rawValue: name) else {
                throw AuthConfigurationError("unknown JWKS algorithm \"\(name)\"; allowed: \(allCases.map(\.rawValue).joined(separator: ","))")
            }
            out.insert(a)
        }
        guard !out.isEmpty else { throw AuthConfigurationError("the JWKS algorithm list is empty") }
        return out
    }
}
