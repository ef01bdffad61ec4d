import RelayCore
import RelayRedis

/// Token budgets in Redis (docs/DATA_MODEL.md §9): one hash per user and period in its
/// own hash slot, `relay:budget:{u:<ownerHash>}:<YYYY-MM>`, with fields `used`,
/// `reserved`, `r:<requestId>` (a live reservation, tokens) and `s:<requestId>` (a
/// settlement, tokens charged), plus the sorted set `…:expiries` (same slot; member
/// request id, score = unix ms when the reservation lapses unless its owner refreshes
/// it). Reservations are taken at admission (`reserve`), refreshed while the
/// generation runs, and settled once on every ending (`settle`); a reservation whose
/// owner died without anyone settling it lapses and is purged by the next `reserve`
/// or `read`. Every script (`BudgetScripts`, `Lua/<name>.lua`) touches only that slot.
/// Loop thread only.
public final class BudgetLedger {
    private let connection: any RedisCommandChannel
    private let scripts: ScriptRunner
    /// The refresh command, written in place (loop thread).
    private let command = RESPCommand(capacity: 256)

    /// A reservation lapses this long after its last refresh, ms (the owner refreshes
    /// it with its lease, every `EventLog.leaseMs / 3`).
    public static let reservationLapseMs: Int64 = 30_000
    /// TTL of a budget hash, ms (about 40 days: past the end of its month).
    public static let ttlMs = 40 * 86_400_000

    public init(connection: any RedisCommandChannel, scripts: ScriptRunner) {
        self.connection = connection
        self.scripts = scripts
    }

    /// The budget hash of a user (`OwnerHash`) for a `YYYY-MM` period.
    public static func key(ownerHash: String, period: String) -> String { "relay:budget:{u:\(ownerHash)}:\(period)" }
    /// The reservation expiries of a budget hash (same hash slot).
    public static func expiriesKey(_ budgetKey: String) -> String { budgetKey + ":expiries" }

    /// Reserves for request `id` (idempotent per id): `min(prompt + wanted, limit − used −
    /// reserved)` when at least `min(minimum, wanted)` completion tokens fit
    /// (`BudgetScripts.reserve`; the same rule as `BudgetArithmetic.grant`). Tokens
    /// throughout; `nowMs` unix ms. `done` gets the `Reservation`.
    public func reserve(key: String, id: RequestID, nowMs: Int64, limit: Int, promptEstimate: Int,
                        wantedCompletion: Int, minimumCompletion: Int,
                        done: @escaping (Result<Reservation, RedisFailure>) -> Void) {
        scripts.run(BudgetScripts.reserve, keys: [key, BudgetLedger.expiriesKey(key)],
                    args: [id.value, String(nowMs), String(nowMs + BudgetLedger.reservationLapseMs), String(limit),
                           String(promptEstimate), String(wantedCompletion), String(minimumCompletion),
                           String(BudgetLedger.ttlMs)], done: done)
    }

    /// Settles request `id` (`BudgetScripts.settle`): releases its reservation and adds
    /// `tokens` to `used`, once (a second settlement of the same id changes nothing).
    /// `done` gets `true` when this call settled it.
    public func settle(key: String, id: RequestID, tokens: Int, done: ((Result<Bool, RedisFailure>) -> Void)? = nil) {
        scripts.run(BudgetScripts.settle, keys: [key, BudgetLedger.expiriesKey(key)],
                    args: [id.value, String(max(0, tokens)), String(BudgetLedger.ttlMs)]) { r in
            done?(r.map { $0 != .alreadySettled })
        }
    }

    /// Grows request `id`'s reservation by `tokens` when the budget's `limit` still has them
    /// free (`limit − used − reserved ≥ tokens`), atomically, and pushes its lapse time
    /// out: a continuation's re-sent prompt (docs/PROTOCOL.md §4.5, §9.2) is reserved
    /// before it is sent, so a continued answer is charged within the limit
    /// (`BudgetScripts.extend`; tokens; `nowMs` unix ms). `done` gets the `Extension`.
    public func extend(key: String, id: RequestID, tokens: Int, limit: Int, nowMs: Int64,
                       done: @escaping (Result<Extension, RedisFailure>) -> Void) {
        scripts.run(BudgetScripts.extend, keys: [key, BudgetLedger.expiriesKey(key)],
                    args: [id.value, String(max(0, tokens)), String(limit), String(nowMs + BudgetLedger.reservationLapseMs)],
                    done: done)
    }

    /// Pushes a running generation's reservation lapse time out: `ZADD <expiriesKey> XX
    /// <nowMs + reservationLapseMs> <id>` (unix ms), reply unread. `expiriesKey`:
    /// `expiriesKey(_:)` of its budget hash, kept by the owner (this runs for every running
    /// generation every `EventLog.leaseMs / 3`).
    public func refresh(expiriesKey: String, id: RequestID, nowMs: Int64) {
        let c = command
        c.start(argumentCount: 5)
        c.add(constant: "ZADD")
        c.add(expiriesKey)
        c.add(constant: "XX")
        c.add(Int(nowMs + BudgetLedger.reservationLapseMs))
        c.add(id.value)
        connection.send(c, view: RedisReplyView.unread)
    }

    /// `used` and `reserved`, tokens, lapsed reservations released first
    /// (`BudgetScripts.read`; `nowMs` unix ms).
    public func read(key: String, nowMs: Int64, done: @escaping (Result<Usage, RedisFailure>) -> Void) {
        scripts.run(BudgetScripts.read, keys: [key, BudgetLedger.expiriesKey(key)], args: [String(nowMs)], done: done)
    }

    /// Every script of the ledger (loaded after each connection): `BudgetScripts.all`.
    public static var allScripts: [LuaSource] { BudgetScripts.all }
}
