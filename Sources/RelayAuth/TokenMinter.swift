import CJWT
import RelayCore

/// Mints relay session tokens with libjwt (RFC 7519 JWT, RFC 7515 JWS compact form),
/// for `stream-relay mint-token`, demos and tests.
public enum TokenMinter {
    /// Signs an HS256 token with claims `{"sub","sid","tier"?,"iat": now,"exp": now + ttlSeconds}`
    /// and header `{"alg":"HS256","typ":"JWT"}`.
    ///
    /// - Parameters:
    ///   - secret: shared secret, at least 32 bytes (RFC 7518 §3.2).
    ///   - sub: user id, non-empty. - sid: session id, non-empty.
    ///   - tier: budget tier, or nil to omit the claim; non-empty when given.
    ///   - ttlSeconds: lifetime in seconds, 1...31_536_000 (one year).
    ///   - now: issue time, unix seconds.
    /// - Returns: the compact token `header.payload.signature`.
    /// - Throws: ``AuthConfigurationError`` for a short secret, empty `sub`/`sid`/`tier`,
    ///   a TTL out of range, or a libjwt failure.
    public static func hs256(secret: [UInt8], sub: String, sid: String, tier: String?, ttlSeconds: Int, now: Int64) throws -> String {
        guard secret.count >= JWTAlgorithm.minimumSecretBytes else {
            throw AuthConfigurationError("HS256 secret must be at least \(JWTAlgorithm.minimumSecretBytes) bytes, got \(secret.count)")
        }
        let json = try claimsJSON(sub: sub, sid: sid, tier: tier, ttlSeconds: ttlSeconds, now: now)
        return try LibJWT.encode(algorithm: JWT_ALG_HS256, key: secret, claimsJSON: json)
    }

    /// Signs a token with a private JWK (RFC 7517; docs/TOKENS.md): header `{"alg", "typ":"JWT", "kid"}`
    /// with the key's `alg` (or `algorithm` when given; it must fit the key) and `kid`,
    /// claims as ``hs256(secret:sub:sid:tier:ttlSeconds:now:)``.
    /// - Throws: ``AuthConfigurationError`` for a public key, an `alg` that does not fit
    ///   the key, bad claims arguments or a libjwt failure.
    public static func jwk(_ key: JSONWebKey, algorithm: JWKAlgorithm? = nil, sub: String, sid: String, tier: String?,
                           ttlSeconds: Int, now: Int64) throws -> String {
        guard let alg = algorithm ?? key.algorithms.first else {
            throw AuthConfigurationError("the JWK allows no algorithm")
        }
        guard key.algorithms.contains(alg) else {
            throw AuthConfigurationError("alg \(alg.rawValue) does not fit the JWK (\(key.keyType.rawValue))")
        }
        let pem: String
        do { pem = try JWKKeyBuilder.privatePEM(key) } catch { throw AuthConfigurationError("\(error)") }
        let json = try claimsJSON(sub: sub, sid: sid, tier: tier, ttlSeconds: ttlSeconds, now: now)
        return try LibJWT.encode(algorithm: LibJWT.algorithm(alg), key: Array(pem.utf8), claimsJSON: json, kid: key.kid)
    }

    private static func claimsJSON(sub: String, sid: String, tier: String?, ttlSeconds: Int, now: Int64) throws -> String {
        guard !sub.isEmpty else { throw AuthConfigurationError("sub must not be empty") }
        guard !sid.isEmpty else { throw AuthConfigurationError("sid must not be empty") }
        if let tier, tier.isEmpty { throw AuthConfigurationError("tier must not be empty when given") }
        guard (1...31_536_000).contains(ttlSeconds) else {
            throw AuthConfigurationError("ttl must be 1...31536000 seconds, got \(ttlSeconds)")
        }
        var json = "{\"sub\":\(JSONText.quoted(sub)),\"sid\":\(JSONText.quoted(sid))"
        if let tier { json += ",\"tier\":\(JSONText.quoted(tier))" }
        json += ",\"iat\":\(now),\"exp\":\(now + Int64(ttlSeconds))}"
        return json
    }
}
