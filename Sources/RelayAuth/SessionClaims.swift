/// The claims the relay uses from a verified JWT (RFC 7519 §4).
public struct SessionClaims: Sendable, Equatable {
    /// `sub`: the user; owner of the streams it creates. Non-empty.
    public var sub: String
    /// The session: claim `sid`, or `session_id` when `sid` is absent. Non-empty.
    public var sid: String
    /// `tier`: the budget tier, or nil when absent (the default tier applies).
    public var tier: String?
    /// `exp`: expiry, unix seconds (NumericDate, RFC 7519 §2; fractions truncated toward −∞).
    public var exp: Int64
    /// `iat`: issued-at, unix seconds, when present (informational, not checked).
    public var issuedAt: Int64?

    /// Memberwise; the verifier guarantees non-empty `sub` and `sid`.
    public init(sub: String, sid: String, tier: String?, exp: Int64, issuedAt: Int64?) {
        self.sub = sub
        self.sid = sid
        self.tier = tier
        self.exp = exp
        self.issuedAt = issuedAt
    }
}
