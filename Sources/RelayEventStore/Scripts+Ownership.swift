import RelayCore
import RelayRedis

/// The scripts of stream ownership (docs/DATA_MODEL.md §6, §6.1): lease expiry, takeover,
/// the taker's fenced appends, and the owner's lease refresh and release.
extension Scripts {
    /// Ends a running stream whose owner lease lapsed with the given `error` event, fenced
    /// and published with `PUBLISH` (`Lua/expireLease.lua`; KEYS events, meta, live, lease,
    /// text, offsets).
    public static let expireLease = LuaScript<ExpireLeaseReply>(file: "expireLease.lua", bytes: PackageResources.expireLease_lua)

    /// `expireLease` for a Redis Cluster: the live channel is a sharded channel, published
    /// with `SPUBLISH` (Redis 7); nothing else differs (`Lua/expireLeaseSharded.lua`).
    public static let expireLeaseSharded = LuaScript<ExpireLeaseReply>(file: "expireLeaseSharded.lua",
                                                                        bytes: PackageResources.expireLeaseSharded_lua)

    /// The reply of `expireLease` and `expireLeaseSharded`.
    public struct ExpireLeaseReply: ScriptReply, Equatable {
        /// What the script found: the seq it appended (`ended`), nothing to do
        /// (`ownerAlive`: not running, lease held, or sealed and the caller has no keys), or
        /// no stream (`vanished`).
        public var expiry: LeasePolicy.Expiry
        /// With `ended`: the stream's budget hash ('' when none was recorded).
        public var budgetKey: String
        /// With `ended`: the prompt estimate stored at creation, tokens.
        public var promptEstimate: Int

        public init(reply: RedisReply) throws(RedisFailure) {
            let a = try ScriptReplyArray(reply, of: "expireLease.lua", counts: [1, 3])
            let n = try a.int(1)
            expiry = LeasePolicy.expiry(fromReply: n)
            switch (n, a.count) {
            case (1..., 3):
                budgetKey = try a.string(2)
                promptEstimate = Int(try a.string(3)) ?? 0
            case (-1, 1), (0, 1):
                budgetKey = ""
                promptEstimate = 0
            default:
                throw a.unexpected
            }
        }
    }

    /// Takes over a running stream whose owner lease lapsed, bumping its ownership epoch
    /// and fencing it (`Lua/takeover.lua`; KEYS events, meta, lease, text, offsets, request).
    public static let takeover = LuaScript<TakeoverReply>(file: "takeover.lua", bytes: PackageResources.takeover_lua)

    /// The reply of `takeover`, as stored (nothing opened: `EventLog.takeover` opens what
    /// is sealed at rest).
    public enum TakeoverReply: ScriptReply, Equatable {
        /// The stream does not exist (reply {-1}).
        case vanished
        /// Its lease is held (reply {0}).
        case ownerAlive
        /// It cannot be continued: limit reached, no stored request, or text not rebuildable
        /// (reply {-2}).
        case notContinuable
        /// It is sealed at rest and the taker has no keys; nothing changed (reply {-3}).
        case needsKeys
        /// It has ended already (reply {3, …}).
        case ended(TakeoverEnded)
        /// This instance took it over (reply {1, …}).
        case taken(TakeoverTaken)

        public init(reply: RedisReply) throws(RedisFailure) {
            let a = try ScriptReplyArray(reply, of: "takeover.lua", counts: [1, 7, 13])
            switch (try a.int(1), a.count) {
            case (-1, 1): self = .vanished
            case (0, 1): self = .ownerAlive
            case (-2, 1): self = .notContinuable
            case (-3, 1): self = .needsKeys
            case (3, 7):
                self = .ended(TakeoverEnded(state: try a.string(2), budgetKey: try a.string(3),
                                            prompt: Int(try a.string(4)) ?? 0,
                                            lastSeq: UInt64(try a.string(5)) ?? 0,
                                            finalEntry: EventLog.events(from: try a.element(6)),
                                            atRest: try a.string(7)))
            case (1, 13):
                let epoch = try a.int(2), top = try a.int(3), continuations = try a.int(7)
                guard epoch >= 1, top >= 0, continuations >= 1 else { throw a.unexpected }
                self = .taken(TakeoverTaken(epoch: UInt64(epoch), topSeq: UInt64(top), request: try a.string(4),
                                            prefix: try a.string(5), entries: EventLog.events(from: try a.element(6)),
                                            continuations: Int(continuations), owner: try a.string(8),
                                            sid: try a.string(9), priorPrompt: Int(try a.string(10)) ?? 0,
                                            offsets: try a.bytes(11), wholeText: try a.bytes(12), atRest: try a.string(13)))
            default:
                throw a.unexpected
            }
        }
    }

    /// A stream `takeover` found ended, as stored.
    public struct TakeoverEnded: Sendable, Equatable {
        /// `done`, `cancelled` or `failed`.
        public var state: String
        /// The budget hash charged ('' for none).
        public var budgetKey: String
        /// Prompt tokens charged (the meta's `prompt`), tokens.
        public var prompt: Int
        /// The meta's `last_seq` (0 when none).
        public var lastSeq: UInt64
        /// The top entry (the final event), as stored; empty when none.
        public var finalEntry: [SequencedEvent]
        /// The meta's at-rest mode field ('' when none: `AtRestMode.of`).
        public var atRest: String
    }

    /// A stream `takeover` took over, as stored.
    public struct TakeoverTaken: Sendable, Equatable {
        /// The new ownership epoch (≥ 1).
        public var epoch: UInt64
        /// The top entry's seq (0 when none).
        public var topSeq: UInt64
        /// The stored request as stored (sealed in a sealed stream).
        public var request: String
        /// The plain text of the events before the oldest retained entry ('' when every
        /// event is retained, or in a sealed stream: then cut from `wholeText`).
        public var prefix: String
        /// Every retained entry, as stored.
        public var entries: [SequencedEvent]
        /// Continuations of the stream, this one included.
        public var continuations: Int
        /// The meta's `owner`, the creator's `sub` ('' when missing).
        public var owner: String
        /// The meta's `sid`, the creator's session ('' when missing).
        public var sid: String
        /// Prompt tokens charged so far (the meta's `prompt`), tokens.
        public var priorPrompt: Int
        /// The whole offsets key: big-endian u32 end offsets, bytes, at byte 4 × seq (empty
        /// without lossless resume).
        public var offsets: [UInt8]
        /// The whole text key in a sealed stream (its records), else empty.
        public var wholeText: [UInt8]
        /// The meta's at-rest mode field ('' when none: `AtRestMode.of`).
        public var atRest: String
    }

    /// One non-final append of a taken-over stream, checked against the writer's epoch and
    /// fenced again (`Lua/appendFenced.lua`; KEYS events, meta). Error replies `NOSTREAM`,
    /// `FINISHED <state>`, `FINISHED taken` and `XSETID`'s refusal (`ERR`) come back as
    /// `RedisFailure`.
    public static let appendFenced = LuaScript<AppendFencedReply>(file: "appendFenced.lua", bytes: PackageResources.appendFenced_lua)

    /// The reply of `appendFenced`: the seq stored.
    public struct AppendFencedReply: ScriptReply, Equatable {
        /// The seq the event was appended at.
        public var seq: UInt64

        public init(reply: RedisReply) throws(RedisFailure) {
            guard let n = reply.int, n >= 1 else { throw .unexpectedReply("appendFenced.lua", reply) }
            seq = UInt64(n)
        }
    }

    /// Refreshes a running generation's owner lease only while the caller still owns the
    /// stream (`Lua/refreshLease.lua`; KEYS lease, meta; ARGV instance, lease ms, epoch).
    public static let refreshLease = LuaScript<EventLog.LeaseRefresh>(file: "refreshLease.lua", bytes: PackageResources.refreshLease_lua)

    /// Releases a lease only while it names the caller's instance (`Lua/releaseLease.lua`;
    /// KEYS lease; ARGV instance).
    public static let releaseLease = LuaScript<ReleaseLeaseReply>(file: "releaseLease.lua", bytes: PackageResources.releaseLease_lua)

    /// The reply of `releaseLease`.
    public struct ReleaseLeaseReply: ScriptReply, Equatable {
        /// `true` when the lease named the caller's instance and was deleted; `false` when
        /// it names another instance or is gone (nothing changed).
        public var released: Bool

        public init(reply: RedisReply) throws(RedisFailure) {
            released = try reply.flag(of: "releaseLease.lua")
        }
    }
}

extension EventLog {
    /// What a lease refresh found: the reply of `Scripts.refreshLease`.
    public enum LeaseRefresh: ScriptReply, Equatable {
        /// Refreshed: the caller still owns the stream (reply 1).
        case held
        /// The stream no longer runs: ended, or gone from Redis (reply 0).
        case notRunning
        /// Another instance took the stream over: a newer ownership epoch, or the lease
        /// names another instance (reply -1).
        case takenOver

        public init(reply: RedisReply) throws(RedisFailure) {
            switch reply.int {
            case 1: self = .held
            case 0: self = .notRunning
            case -1: self = .takenOver
            default: throw .unexpectedReply("refreshLease.lua", reply)
            }
        }
    }
}
