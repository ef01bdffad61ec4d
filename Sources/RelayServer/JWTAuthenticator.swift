import RelayAuth
import RelayCore

/// The production `Authenticator` (docs/TOKENS.md): exactly one `Authorization: Bearer
/// <JWT>` header, verified by a `TokenVerifier`: `JWTVerifier` (one configured algorithm
/// and key) or `JWKSVerifier` (keys of a JWKS); both check `exp`/`nbf` with
/// leeway, `sub`, `sid`/`session_id`, optional `iss`/`aud`. Every failure is 401
/// `unauthorized`.
public struct JWTAuthenticator: Authenticator {
    /// The configured verifier (keys, algorithms, issuer/audience, leeway).
    public let verifier: any TokenVerifier

    public init(verifier: any TokenVerifier) {
        self.verifier = verifier
    }

    /// - Throws: `APIError` 401 `unauthorized` for every bearer or token failure.
    public func authenticate(authorization: [String], now: Int64) throws -> Identity {
        do {
            let token = try BearerToken.extract(authorizationValues: authorization)
            let c = try verifier.verify(token, now: now)
            return Identity(user: c.sub, sid: c.sid, tier: c.tier, expiresAt: c.exp)
        } catch let e as AuthError {
            throw e.apiError
        }
    }
}
