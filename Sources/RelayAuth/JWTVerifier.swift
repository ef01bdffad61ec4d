import CJWT

/// Verifies relay session tokens: compact JWS (RFC 7515) JWTs (RFC 7519) signed with
/// exactly one configured algorithm (``JWTAlgorithm``), then checks `exp`, `nbf`, `sub`,
/// `sid`/`session_id`, and `iss`/`aud` when configured.
///
/// Thread safety: immutable after `init`; `verify` creates and frees its own libjwt
/// objects per call, so one verifier can be shared by all worker threads.
///
/// Order of checks in `verify` (the token is never logged or echoed):
/// 1. length in `1...maxTokenBytes` (before anything touches libjwt);
/// 2. exactly three canonical base64url segments, non-empty signature;
/// 3. header is a JSON object whose `alg` equals the configured name exactly (so `none`,
///    another algorithm, or `hs256` are refused before libjwt, which trusts the header),
///    and no `crit` (RFC 7515 §4.1.11: we understand no extensions);
/// 4. the payload is a JSON object whose registered claims have their types;
/// 5. libjwt verifies the signature with the configured key and must report the same alg;
/// 6. `exp`, `sub`, `sid` present; time checks with leeway; issuer and audience when configured.
public struct JWTVerifier: TokenVerifier, CustomStringConvertible, CustomReflectable {
    /// Longest accepted token in bytes (8 KiB); longer ones are refused unparsed.
    public static let maxTokenBytes = 8 * 1024

    /// The accepted algorithm and key.
    public let algorithm: JWTAlgorithm
    /// Required `iss` (exact, case-sensitive) when non-nil.
    public var issuer: String? { checks.issuer }
    /// Audience that `aud` (string or array) must contain when non-nil. When nil, `aud` is
    /// not checked (the relay's contract, docs/TOKENS.md; stricter than nothing, looser
    /// than RFC 7519 §4.1.3 for tokens that carry an `aud`).
    public var audience: String? { checks.audience }
    /// Clock skew tolerated on `exp` and `nbf`, seconds (0...300).
    public var leewaySeconds: Int { checks.leewaySeconds }

    private let checks: TokenChecks
    private let key: [UInt8]
    private let libjwtAlg: jwt_alg_t

    /// Creates a verifier. Throws ``AuthConfigurationError`` when the HS256 secret is shorter
    /// than 32 bytes, the PEM is not a `PUBLIC KEY` libjwt can read, the key type does not
    /// match the algorithm (RSA ≥ 2048 bits for RS256, EC P-256 for ES256), `issuer` or
    /// `audience` is empty, or `leewaySeconds` is outside 0...300.
    public init(algorithm: JWTAlgorithm, issuer: String? = nil, audience: String? = nil, leewaySeconds: Int = 30) throws {
        checks = try TokenChecks(issuer: issuer, audience: audience, leewaySeconds: leewaySeconds)
        switch algorithm {
        case .hs256(let secret):
            guard secret.count >= JWTAlgorithm.minimumSecretBytes else {
                throw AuthConfigurationError("HS256 secret must be at least \(JWTAlgorithm.minimumSecretBytes) bytes, got \(secret.count)")
            }
            key = secret
            libjwtAlg = JWT_ALG_HS256
        case .rs256(let pem):
            switch OpenSSLShim.publicKeyKind(pem: pem) {
            case .rsa(let bits) where bits >= JWTAlgorithm.minimumRSABits: break
            case .rsa(let bits):
                throw AuthConfigurationError("RS256 public key has \(bits) bits; at least \(JWTAlgorithm.minimumRSABits) required")
            case .unparseable:
                throw AuthConfigurationError("RS256 public key is not a PEM \"PUBLIC KEY\" (SubjectPublicKeyInfo)")
            default:
                throw AuthConfigurationError("RS256 needs an RSA public key")
            }
            key = Array(pem.utf8)
            libjwtAlg = JWT_ALG_RS256
        case .es256(let pem):
            switch OpenSSLShim.publicKeyKind(pem: pem) {
            case .ecP256: break
            case .unparseable:
                throw AuthConfigurationError("ES256 public key is not a PEM \"PUBLIC KEY\" (SubjectPublicKeyInfo)")
            default:
                throw AuthConfigurationError("ES256 needs an EC public key on curve P-256")
            }
            key = Array(pem.utf8)
            libjwtAlg = JWT_ALG_ES256
        }
        self.algorithm = algorithm
    }

    /// Verifies `token` (the bearer string, without `Bearer `) at time `now` (unix seconds)
    /// and returns its claims.
    ///
    /// Valid iff the signature verifies with the configured algorithm and key,
    /// `now < exp + leeway`, `nbf` (if present) `<= now + leeway`, `sub` and
    /// `sid`/`session_id` are non-empty strings, `tier` (if present) is a string, and
    /// `iss`/`aud` match when configured. Throws ``AuthError`` otherwise (always HTTP 401).
    public func verify(_ token: String, now: Int64) throws -> SessionClaims {
        let header = try TokenChecks.open(token) { alg in
            guard alg == algorithm.name else {
                throw AuthError(.algorithmNotAllowed, "alg \(TokenChecks.printable(alg)) not allowed; only \(algorithm.name)")
            }
        }
        guard let used = LibJWT.verifiedAlgorithm(token: token, key: key) else {
            throw AuthError(.badSignature, "signature does not verify")
        }
        guard used == libjwtAlg else {
            throw AuthError(.algorithmNotAllowed, "libjwt verified with an unexpected algorithm")
        }
        return try checks.check(header.claims, now: now)
    }

    /// `JWTVerifier(HS256, issuer: …, audience: …, leeway: 30 s)`; never shows key material.
    public var description: String {
        "JWTVerifier(\(algorithm.name), issuer: \(issuer ?? "-"), audience: \(audience ?? "-"), leeway: \(leewaySeconds) s)"
    }

    public var customMirror: Mirror { Mirror(self, children: ["description": description]) }
}
