import RelayRedis

/// The completion webhooks' outbox scripts (docs/DATA_MODEL.md §13, `CompletionWebhookOutbox`):
/// every one but `outboxSubject` gets the outbox's six keys (`CompletionWebhookOutbox.keys`:
/// due, msgs, attempts, claims, sent, needkeys) and reads Redis's clock (`TIME`).
extension Scripts {
    /// Queues a message, once per id (`Lua/outboxEnqueue.lua`; ARGV id, record, delay ms).
    public static let outboxEnqueue = LuaScript<OutboxEnqueueReply>(file: "outboxEnqueue.lua", bytes: PackageResources.outboxEnqueue_lua)

    /// The reply of `outboxEnqueue`.
    public struct OutboxEnqueueReply: ScriptReply, Equatable {
        /// `true` when queued; `false` when the id was queued already, or was delivered or
        /// given up.
        public var queued: Bool

        public init(reply: RedisReply) throws(RedisFailure) {
            queued = try reply.flag(of: "outboxEnqueue.lua")
        }
    }

    /// Claims due messages for one instance (`Lua/outboxClaim.lua`; ARGV claim ms, token,
    /// limit, sent memory ms, has keys, keyless patience ms).
    public static let outboxClaim = LuaScript<OutboxClaimReply>(file: "outboxClaim.lua", bytes: PackageResources.outboxClaim_lua)

    /// The reply of `outboxClaim`.
    public struct OutboxClaimReply: ScriptReply, Equatable {
        /// The messages claimed, in the order they were due. A message whose record does
        /// not read as `<scoped request id> <ended unix ms> <sub>` is left out (its claim
        /// lapses; nothing can be sent for it).
        public var claimed: [CompletionWebhookOutbox.Claimed]

        public init(reply: RedisReply) throws(RedisFailure) {
            let a = try ScriptReplyArray(reply, of: "outboxClaim.lua")
            guard a.count % 3 == 0 else { throw a.unexpected }
            claimed = []
            for n in stride(from: 1, to: a.count, by: 3) {
                let id = try a.string(n), record = try a.string(n + 1), attempts = try a.string(n + 2)
                let parts = record.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
                guard parts.count == 3, let ended = Int64(parts[1]) else { continue }
                claimed.append(CompletionWebhookOutbox.Claimed(id: id, scopedID: String(parts[0]), sub: String(parts[2]),
                                                               endedMs: ended, attempts: Int(attempts) ?? 0))
            }
        }
    }

    /// Settles a claimed message under its claim token (`Lua/outboxSettle.lua`; ARGV id,
    /// token, outcome `done`/`retry`/`later`/`needkeys`, after ms).
    public static let outboxSettle = LuaScript<OutboxSettleReply>(file: "outboxSettle.lua", bytes: PackageResources.outboxSettle_lua)

    /// The reply of `outboxSettle`.
    public struct OutboxSettleReply: ScriptReply, Equatable {
        /// `true` when settled; `false` when the claim is no longer the caller's (it lapsed
        /// and another instance claimed the message; nothing changed).
        public var settled: Bool

        public init(reply: RedisReply) throws(RedisFailure) {
            settled = try reply.flag(of: "outboxSettle.lua")
        }
    }

    /// What the sender needs of a message's stream before an attempt, on the stream's slot
    /// (`Lua/outboxSubject.lua`; KEYS meta, events, delivered).
    public static let outboxSubject = LuaScript<OutboxSubjectReply>(file: "outboxSubject.lua", bytes: PackageResources.outboxSubject_lua)

    /// The reply of `outboxSubject`, as stored (the final event not opened).
    public enum OutboxSubjectReply: ScriptReply, Equatable {
        /// The meta is gone: the stream expired (reply {}).
        case gone
        /// The stream's `state`; its top entry's event as stored ('' when none); whether a
        /// client read its final event (`StreamKeys.delivered`); the meta's at-rest mode
        /// field ('' when none).
        case stream(state: String, storedFinalEvent: String, read: Bool, atRest: String)

        public init(reply: RedisReply) throws(RedisFailure) {
            let a = try ScriptReplyArray(reply, of: "outboxSubject.lua", counts: [0, 4])
            if a.count == 0 { self = .gone; return }
            self = .stream(state: try a.string(1), storedFinalEvent: try a.string(2), read: try a.element(3).flag(of: "outboxSubject.lua"),
                           atRest: try a.string(4))
        }
    }
}
