import Foundation

/// Verifies a bearer token and returns its session claims; every failure is an
/// ``AuthError`` (HTTP 401). Implemented by ``JWTVerifier`` (one configured key) and
/// ``JWKSVerifier`` (keys from a JSON Web Key Set). Implementations are shared by all
/// worker threads.
public protocol TokenVerifier: Sendable {
    /// Verifies `token` (without `Bearer `) at `now` (unix seconds).
    func verify(_ token: String, now: Int64) throws -> SessionClaims
}

/// The checks every ``TokenVerifier`` makes around the signature: the token's shape and
/// header before any key is touched, and the claims after (RFC 7519 §7.2).
struct TokenChecks: Sendable {
    /// Required `iss` (exact, case-sensitive) when non-nil.
    let issuer: String?
    /// Audience that `aud` must contain when non-nil.
    let audience: String?
    /// Clock skew tolerated on `exp` and `nbf`, seconds (0...300).
    let leewaySeconds: Int

    /// - Throws: ``AuthConfigurationError`` for an empty issuer or audience, or a leeway
    ///   outside 0...300 s.
    init(issuer: String?, audience: String?, leewaySeconds: Int) throws {
        guard (0...300).contains(leewaySeconds) else {
            throw AuthConfigurationError("JWT leeway must be 0...300 seconds, got \(leewaySeconds)")
        }
        if let issuer, issuer.isEmpty { throw AuthConfigurationError("JWT issuer must not be empty when set") }
        if let audience, audience.isEmpty { throw AuthConfigurationError("JWT audience must not be empty when set") }
        self.issuer = issuer
        self.audience = audience
        self.leewaySeconds = leewaySeconds
    }

    /// A token's header, read before any key is used.
    struct Header {
        /// The `alg` string, exactly as sent.
        let alg: String
        /// `kid` (RFC 7515 §4.1.4) when present.
        let kid: String?
        /// The decoded claims set (shape checked).
        let claims: ClaimsSet
    }

    /// Steps before the signature: length in `1...JWTVerifier.maxTokenBytes`, compact
    /// form, header object with a string `alg` that `allowAlg` accepts (it throws
    /// otherwise), no `crit` (RFC 7515 §4.1.11), a string `kid` if any, and a payload whose
    /// registered claims have their types.
    static func open(_ token: String, allowAlg: (String) throws -> Void) throws -> Header {
        let length = token.utf8.count
        guard length >= 1, length <= JWTVerifier.maxTokenBytes else {
            throw AuthError(.malformedToken, "token length \(length) bytes outside 1...\(JWTVerifier.maxTokenBytes)")
        }
        let jws = try CompactJWS(token)
        let header = try jws.headerObject()
        guard let alg = header["alg"] as? String else {
            throw AuthError(.malformedToken, "header has no string alg")
        }
        try allowAlg(alg)
        guard header["crit"] == nil else {
            throw AuthError(.algorithmNotAllowed, "crit header parameter not supported")
        }
        if header["kid"] != nil, !(header["kid"] is String) {
            throw AuthError(.malformedToken, "kid is not a string")
        }
        // Shape before signature: libjwt's own JSON failures would otherwise look like bad signatures.
        let claims = try ClaimsSet.decode(jws.payload)
        return Header(alg: alg, kid: header["kid"] as? String, claims: claims)
    }

    /// Steps after the signature: `exp` (with leeway), `nbf`, `sub`, `sid`/`session_id`,
    /// and `iss`/`aud` when configured.
    func check(_ c: ClaimsSet, now: Int64) throws -> SessionClaims {
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

    /// A header value safe for a log line: at most 16 chars of `[A-Za-z0-9]`.
    static func printable(_ s: String) -> String {
        let ok = s.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0)) }
        return ok && s.count <= 16 ? "\"\(s)\"" : "(unprintable)"
    }
}
