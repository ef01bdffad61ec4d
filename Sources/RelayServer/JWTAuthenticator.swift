import RelayAuth
import RelayCore

/// The production `Authenticator` (DESIGN §5): exactly one `Authorization: Bearer
/// <JWT>` header, verified by `JWTVerifier` (signature with the one configured
/// algorithm, `exp`/`nbf` with leeway, `sub`, `sid`/`session_id`, optional
/// `iss`/`aud`). Every failure is 401 `unauthorized`.
public struct JWTAuthenticator: Authenticator {
    /// The configured verifier (one algorithm, key, issuer/audience, leeway).
    public let verifier: JWTVerifier

    public init(verifier: JWTVerifier) {
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
