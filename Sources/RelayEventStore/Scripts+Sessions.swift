import RelayCore
import RelayRedis

/// The scripts of instances, sessions and cancels (docs/DATA_MODEL.md §6.2, §7, §8).
extension Scripts {
    /// A worker's heartbeat in `relay:instances`, telling whether it had been missing or
    /// lapsed (`Lua/heartbeat.lua`; ARGV name, expiry unix ms, now unix ms).
    public static let heartbeat = LuaScript<HeartbeatReply>(file: "heartbeat.lua", bytes: PackageResources.heartbeat_lua)

    /// The reply of `heartbeat`.
    public struct HeartbeatReply: ScriptReply, Equatable {
        /// `true` when the heartbeat was missing or its previous expiry had passed (other
        /// instances' sweeps may have forgotten its streams): reply 1.
        public var wasMissingOrLapsed: Bool

        public init(reply: RedisReply) throws(RedisFailure) {
            wasMissingOrLapsed = try reply.flag(of: "heartbeat.lua")
        }
    }

    /// Removes a heartbeat from `relay:instances` only while it is still lapsed
    /// (`Lua/removeLapsedInstance.lua`; ARGV name, now unix ms).
    public static let removeLapsedInstance = LuaScript<RemoveLapsedInstanceReply>(file: "removeLapsedInstance.lua",
                                                                                   bytes: PackageResources.removeLapsedInstance_lua)

    /// The reply of `removeLapsedInstance`.
    public struct RemoveLapsedInstanceReply: ScriptReply, Equatable {
        /// `true` when the heartbeat was lapsed and is removed; `false` when it was missing
        /// or current.
        public var removed: Bool

        public init(reply: RedisReply) throws(RedisFailure) {
            removed = try reply.flag(of: "removeLapsedInstance.lua")
        }
    }

    /// Admits a generation for a session unless it already runs the most allowed
    /// (`Lua/admit.lua`; KEYS the session's sorted set; ARGV id, now unix ms, lapse unix ms, max).
    public static let admit = LuaScript<AdmitReply>(file: "admit.lua", bytes: PackageResources.admit_lua)

    /// The reply of `admit`.
    public enum AdmitReply: ScriptReply, Equatable {
        /// Admitted, or admitted before under the same request id (reply 1).
        case admitted
        /// The session runs the most generations allowed; nothing written (reply 0).
        case atLimit

        public init(reply: RedisReply) throws(RedisFailure) {
            self = try reply.flag(of: "admit.lua") ? .admitted : .atLimit
        }
    }

    /// A `DELETE` of a stream: reads its owner and state, and leaves the cancel marker
    /// when no stream exists yet or it runs (`Lua/requestCancel.lua`; KEYS meta, cancel
    /// marker; ARGV owner, marker ms).
    public static let requestCancel = LuaScript<EventLog.CancelRequest>(file: "requestCancel.lua", bytes: PackageResources.requestCancel_lua)
}

extension EventLog {
    /// What `requestCancel` found: the reply of `Scripts.requestCancel`.
    public enum CancelRequest: ScriptReply, Equatable {
        /// No stream of the id exists (yet): the marker was left (reply `pending`).
        case pending
        /// The caller's stream, in this state (`running`: the marker was left too; the
        /// caller publishes the cancel). `nil` for a state this version does not know.
        case stream(StreamState?)
        /// The id names another owner's stream; nothing written (reply `other`).
        case otherOwner

        public init(reply: RedisReply) throws(RedisFailure) {
            switch reply.string {
            case "pending": self = .pending
            case "other": self = .otherOwner
            case let state?: self = .stream(StreamState(rawValue: state))
            case nil: throw .unexpectedReply("requestCancel.lua", reply)
            }
        }
    }
}
