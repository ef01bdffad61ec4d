import RelayRedis

/// The token budgets' Lua scripts (docs/DATA_MODEL.md §9): each a file,
/// `Sources/RelayBudgets/Lua/<name>.lua`, embedded at build time (SwiftPM `.embedInCode`)
/// and declared here as `BudgetScripts.<name>` with the type its reply decodes into. Each
/// gets KEYS budget hash, expiries (`BudgetLedger.key`, `BudgetLedger.expiriesKey`: one
/// slot) and touches nothing else; the file's header names its ARGV (with units) and replies.
public enum BudgetScripts {
    /// Reserves tokens for a request at admission, idempotent per id (`Lua/reserve.lua`;
    /// ARGV id, now unix ms, lapse unix ms, limit, prompt, wanted, minimum (tokens), ttl ms).
    public static let reserve = LuaScript<BudgetLedger.Reservation>(file: "reserve.lua", bytes: PackageResources.reserve_lua)

    /// Settles a request once: releases its reservation, charges `used` (`Lua/settle.lua`;
    /// ARGV id, tokens, ttl ms).
    public static let settle = LuaScript<SettleReply>(file: "settle.lua", bytes: PackageResources.settle_lua)

    /// Grows a request's reservation within the limit and pushes its lapse out
    /// (`Lua/extend.lua`; ARGV id, tokens, limit (tokens), lapse unix ms).
    public static let extend = LuaScript<BudgetLedger.Extension>(file: "extend.lua", bytes: PackageResources.extend_lua)

    /// A budget's `used` and `reserved`, lapsed reservations released first
    /// (`Lua/read.lua`; ARGV now unix ms).
    public static let read = LuaScript<BudgetLedger.Usage>(file: "read.lua", bytes: PackageResources.read_lua)

    /// Every script of the ledger (loaded after each connection, `EventLog.connected`).
    public static let all: [LuaSource] = [reserve.source, settle.source, read.source, extend.source]

    /// The reply of `settle`.
    public enum SettleReply: ScriptReply, Equatable {
        /// Settled by this call, charging `tokens` (reply tokens ≥ 0).
        case settled(tokens: Int)
        /// The id was settled before; nothing changed (reply -1).
        case alreadySettled

        public init(reply: RedisReply) throws(RedisFailure) {
            guard let n = reply.int, n >= -1 else { throw .unexpectedReply("settle.lua", reply) }
            self = n == -1 ? .alreadySettled : .settled(tokens: Int(n))
        }
    }
}

extension BudgetLedger {
    /// The outcome of `reserve`: the reply of `BudgetScripts.reserve`.
    public enum Reservation: ScriptReply, Equatable {
        /// Reserved (or already reserved under this id): tokens held for the request
        /// (reply {1, tokens}).
        case granted(tokens: Int)
        /// Fewer than the minimum remain; `remaining` = limit − used − reserved, tokens
        /// (reply {0, remaining}).
        case refused(remaining: Int)
        /// This request id was already settled (its stream ran before): resume it
        /// (reply {2, 0}).
        case settled

        public init(reply: RedisReply) throws(RedisFailure) {
            let a = try ScriptReplyArray(reply, of: "reserve.lua", counts: [2])
            let n = Int(try a.int(2))
            switch try a.int(1) {
            case 1: self = .granted(tokens: n)
            case 0: self = .refused(remaining: n)
            case 2: self = .settled
            default: throw a.unexpected
            }
        }
    }

    /// What `extend` did: the reply of `BudgetScripts.extend`.
    public enum Extension: ScriptReply, Equatable {
        /// The reservation grew by the tokens asked for (reply {1, 0}).
        case extended
        /// The budget's limit leaves fewer tokens than asked for; nothing changed
        /// (reply {0, remaining}; remaining in tokens, ≥ 0).
        case refused(remaining: Int)
        /// No reservation is held under the id: it lapsed, or the id was settled (reply {-1, 0}).
        case noReservation

        public init(reply: RedisReply) throws(RedisFailure) {
            let a = try ScriptReplyArray(reply, of: "extend.lua", counts: [2])
            switch try a.int(1) {
            case 1: self = .extended
            case 0: self = .refused(remaining: Int(try a.int(2)))
            case -1: self = .noReservation
            default: throw a.unexpected
            }
        }
    }

    /// A budget's totals: the reply of `BudgetScripts.read`.
    public struct Usage: ScriptReply, Equatable {
        /// Tokens charged (settled) this period.
        public var used: Int
        /// Tokens held by live reservations.
        public var reserved: Int

        public init(used: Int, reserved: Int) {
            self.used = used
            self.reserved = reserved
        }

        public init(reply: RedisReply) throws(RedisFailure) {
            let a = try ScriptReplyArray(reply, of: "read.lua", counts: [2])
            used = Int(try a.int(1))
            reserved = Int(try a.int(2))
        }
    }
}
