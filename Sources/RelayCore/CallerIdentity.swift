/// Who asked for an answer, as the relay authenticated them (docs/PROTOCOL.md §2.2): what an
/// agent backend upstream is told, in a signed header, so it owns prompts, tools and retrieval
/// per user while the relay owns delivery (docs/AGENTS.md, "Your own backend"). Never read
/// from a request body: the relay sets it from the verified token.
public struct CallerIdentity: Sendable, Equatable {
    /// The token's `sub`.
    public var sub: String
    /// The session id (`sid`).
    public var sid: String
    /// The effective budget tier.
    public var tier: String
    /// The client's request id (`X-Request-Id`), unscoped.
    public var requestID: String

    public init(sub: String, sid: String, tier: String, requestID: String) {
        self.sub = sub
        self.sid = sid
        self.tier = tier
        self.requestID = requestID
    }
}
