import CJWT
import RelayCore

/// The signed identity an agent backend upstream receives with each call (docs/AGENTS.md,
/// "Your own backend"): an HS256 JWT (RFC 7519) in `X-Relay-Identity`, which any JWT library
/// verifies with the shared secret (`RELAY_UPSTREAM_IDENTITY_SECRET`).
///
/// Claims: `iss` `stream-relay`, `aud` `agent-backend`, `sub`, `sid`, `tier`, `rid` (the
/// client's request id), `body_sha256` (hex SHA-256 of the request body the token goes with,
/// so it cannot be replayed with another body), `iat` and `exp` (`iat` + 300 s).
public enum UpstreamIdentityToken {
    /// The token's `iss` and `aud`.
    public static let issuer = "stream-relay"
    public static let audience = "agent-backend"
    /// Lifetime, seconds.
    public static let ttlSeconds: Int64 = 300

    /// Signs the identity of `caller` for the request body `body`.
    /// - Parameters: `secret` at least 32 bytes; `now` unix seconds.
    /// - Throws: ``AuthConfigurationError`` for a short secret or a libjwt failure.
    public static func sign(_ caller: CallerIdentity, body: [UInt8], secret: [UInt8], now: Int64) throws -> String {
        let hex = OpenSSLShim.sha256(body).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
        return try sign(caller, bodySHA256: hex, secret: secret, now: now)
    }

    /// Signs the identity of `caller` for a request body whose SHA-256 is `bodySHA256` (64 hex
    /// digits).
    /// - Parameters: `secret` at least 32 bytes; `now` unix seconds.
    /// - Throws: ``AuthConfigurationError`` for a short secret or a libjwt failure.
    public static func sign(_ caller: CallerIdentity, bodySHA256: String, secret: [UInt8], now: Int64) throws -> String {
        guard secret.count >= JWTAlgorithm.minimumSecretBytes else {
            throw AuthConfigurationError("the upstream identity secret must be at least \(JWTAlgorithm.minimumSecretBytes) bytes")
        }
        let q = JSONText.quoted
        let claims = "{\"iss\":\(q(issuer)),\"aud\":\(q(audience)),\"sub\":\(q(caller.sub)),\"sid\":\(q(caller.sid)),"
            + "\"tier\":\(q(caller.tier)),\"rid\":\(q(caller.requestID)),\"body_sha256\":\(q(bodySHA256)),"
            + "\"iat\":\(now),\"exp\":\(now + ttlSeconds)}"
        return try LibJWT.encode(algorithm: JWT_ALG_HS256, key: secret, claimsJSON: claims)
    }
}
