import RelayCore

/// Who is calling: the `sub` (user, owner of streams), the session id, the budget
/// tier, and the token's expiry (unix seconds) when it has one (docs/TOKENS.md).
public struct Identity: Sendable, Equatable {
    /// The `sub` claim: the user, owner of the streams it creates.
    public var user: String
    /// The `sid` (or `session_id`) claim: the session, unit of revocation and stream limits.
    public var sid: String
    /// The `tier` claim (budget tier); `nil`: the default tier.
    public var tier: String?
    /// The `exp` claim, unix seconds; live streams end with `token_expired` after it (+ leeway).
    public var expiresAt: Int64?

    public init(user: String, sid: String, tier: String? = nil, expiresAt: Int64? = nil) {
        self.user = user
        self.sid = sid
        self.tier = tier
        self.expiresAt = expiresAt
    }
}

/// Checks the `Authorization` header of every connect and reconnect.
public protocol Authenticator: Sendable {
    /// - Parameters:
    ///   - authorization: every value of the `Authorization` header, in order.
    ///   - now: unix seconds.
    /// - Throws: `APIError` 401 `unauthorized` (missing, malformed, expired, bad signature).
    func authenticate(authorization: [String], now: Int64) throws -> Identity
}
