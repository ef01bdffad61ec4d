/// The one JWS algorithm (RFC 7518 §3.1) a ``JWTVerifier`` accepts, with its key.
///
/// * `hs256`: HMAC-SHA256 with a shared secret of at least 32 bytes (RFC 7518 §3.2).
/// * `rs256`: RSASSA-PKCS1-v1_5 SHA-256; PEM `-----BEGIN PUBLIC KEY-----`
///   (SubjectPublicKeyInfo) RSA key of at least 2048 bits (RFC 7518 §3.3).
/// * `es256`: ECDSA P-256 SHA-256, signature `R || S` (64 bytes, RFC 7518 §3.4);
///   PEM `PUBLIC KEY` on curve P-256.
///
/// `description` and reflection never show the secret.
public enum JWTAlgorithm: Sendable, CustomStringConvertible, CustomReflectable {
    case hs256(secret: [UInt8])
    case rs256(publicKeyPEM: String)
    case es256(publicKeyPEM: String)

    /// The JOSE `alg` header value (case-sensitive, RFC 7515 §4.1.1): `HS256`, `RS256`, `ES256`.
    public var name: String {
        switch self {
        case .hs256: return "HS256"
        case .rs256: return "RS256"
        case .es256: return "ES256"
        }
    }

    /// Minimum HS256 secret length in bytes (RFC 7518 §3.2: key size ≥ hash output size).
    public static let minimumSecretBytes = 32
    /// Minimum RSA modulus size in bits (RFC 7518 §3.3).
    public static let minimumRSABits = 2048

    public var description: String {
        switch self {
        case .hs256(let s): return "HS256(secret: <\(s.count) bytes redacted>)"
        case .rs256: return "RS256(publicKeyPEM)"
        case .es256: return "ES256(publicKeyPEM)"
        }
    }

    public var customMirror: Mirror { Mirror(self, children: ["alg": name]) }
}
