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
public struct JWTVerifier: Sendable, CustomStringConvertible, CustomReflectable {
    /// Longest accepted token in bytes (8 KiB); longer ones are refused unparsed.
    public static let maxTokenBytes = 8 * 1024

    /// The accepted algorithm and key.
    public let algorithm: JWTAlgorithm
    /// Required `iss` (exact, case-sensitive) when non-nil.
    public let issuer: String?
    /// Audience that `aud` (string or array) must contain when non-nil. When nil, `aud` is
    /// not checked (the relay's contract, DESIGN/issue 3; stricter than nothing, looser
    /// than RFC 7519 §4.1.3 for tokens that carry an `aud`).
    public let audience: String?
    /// Clock skew tolerated on `exp` and `nbf`, seconds (0...300).
    public let leewaySeconds: Int

    private let key: [UInt8]
    private let libjwtAlg: jwt_alg_t

    /// Creates a verifier. Throws ``AuthConfigurationError`` when the HS256 secret is shorter
    /// than 32 bytes, the PEM is not a `PUBLIC KEY` libjwt can read, the key type does not
    /// match the algorithm (RSA ≥ 2048 bits for RS256, EC P-256 for ES256), `issuer` or
    /// `audience` is empty, or `leewaySeconds` is outside 0...300.
    public init(algorithm: JWTAlgorithm, issuer: String? = nil, audience: String? = nil, leewaySeconds: Int = 30) throws {
        guard (0...300).contains(leewaySeconds) else {
            throw AuthConfigurationError("JWT leeway must be 0...300 seconds, got \(leewaySeconds)")
        }
        if let issuer, issuer.isEmpty { throw AuthConfigurationError("JWT issuer must not be empty when set") }
        if let audience, audience.isEmpty { throw AuthConfigurationError("JWT audience must not be empty when set") }
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
        self.issuer = issuer
        self.audience = audience
        self.leewaySeconds = leewaySeconds
    }

    /// Verifies `token` (the bearer string, without `Bearer `) at time `now` (unix seconds)
    /// and returns its claims.
    ///
    /// Valid iff the signature verifies with the configured algorithm and key,
    /// `now < exp + leeway`, `nbf` (if present) `<= now + leeway`, `sub` and
    /// `sid`/`session_id` are non-empty strings, `tier` (if present) is a string, and
    /// `iss`/`aud` match when configured. Throws ``AuthError`` otherwise (always HTTP 401).
    public func verify(_ token: String, now: Int64) throws -> SessionClaims {
        let length = token.utf8.count
        guard length >= 1, length <= Self.maxTokenBytes else {
            throw AuthError(.malformedToken, "token length \(length) bytes outside 1...\(Self.maxTokenBytes)")
        }
        let jws = try CompactJWS(token)
        let header = try jws.headerObject()
        guard let alg = header["alg"] as? String else {
            throw AuthError(.malformedToken, "header has no string alg")
        }
        guard alg == algorithm.name else {
            throw AuthError(.algorithmNotAllowed, "alg \(Self.printable(alg)) not allowed; only \(algorithm.name)")
        }
        guard header["crit"] == nil else {
            throw AuthError(.algorithmNotAllowed, "crit header parameter not supported")
        }
        // Shape before signature: libjwt's own JSON failures would otherwise look like bad signatures.
        let claims = try ClaimsSet.decode(jws.payload)
        guard let used = LibJWT.verifiedAlgorithm(token: token, key: key) else {
            throw AuthError(.badSignature, "signature does not verify")
        }
        guard used == libjwtAlg else {
            throw AuthError(.algorithmNotAllowed, "libjwt verified with an unexpected algorithm")
        }
        return try checkClaims(claims, now: now)
    }

    private func checkClaims(_ c: ClaimsSet, now: Int64) throws -> SessionClaims {
        guard let exp = c.exp else { throw AuthError(.invalidClaims, "missing exp") }
        // now < exp + leeway, written without overflow (exp may be up to 2^53).
        guard now - Int64(leewaySeconds) < exp else {
            throw AuthError(.expired, "expired \(now - exp) s ago (leeway \(leewaySeconds) s)")
        }
        if let nbf = c.nbf, nbf > now + Int64(leewaySeconds) {
            throw AuthError(.notYetValid, "not valid for another \(nbf - now) s (leeway \(leewaySeconds) s)")
        }
        guard let sub = c.sub, !sub.isEmpty else { throw AuthError(.invalidClaims, "missing or empty sub") }
        guard let sid = (c.sid ?? c.sessionID), !sid.isEmpty else {
            throw AuthError(.invalidClaims, "missing or empty sid/session_id")
        }
        if let issuer, c.iss != issuer {
            throw AuthError(.issuerMismatch, c.iss == nil ? "missing iss" : "iss does not match")
        }
        if let audience, !(c.aud ?? []).contains(audience) {
            throw AuthError(.audienceMismatch, c.aud == nil ? "missing aud" : "aud does not contain the configured audience")
        }
        return SessionClaims(sub: sub, sid: sid, tier: c.tier, exp: exp, issuedAt: c.iat)
    }

    /// `JWTVerifier(HS256, issuer: …, audience: …, leeway: 30 s)`; never shows key material.
    public var description: String {
        "JWTVerifier(\(algorithm.name), issuer: \(issuer ?? "-"), audience: \(audience ?? "-"), leeway: \(leewaySeconds) s)"
    }

    public var customMirror: Mirror { Mirror(self, children: ["description": description]) }

    /// A header `alg` value safe for a log line: at most 16 chars of `[A-Za-z0-9]`.
    private static func printable(_ s: String) -> String {
        let ok = s.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0)) }
        return ok && s.count <= 16 ? "\"\(s)\"" : "(unprintable)"
    }
}
