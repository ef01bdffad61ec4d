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
/// or `read`. Every script here touches only that slot. Loop thread only.
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

    /// The outcome of `reserve`.
    public enum Reservation: Sendable, Equatable {
        /// Reserved (or already reserved under this id): tokens held for the request.
        case granted(tokens: Int)
        /// Fewer than the minimum remain; `remaining` = limit − used − reserved.
        case refused(remaining: Int)
        /// This request id was already settled (its stream ran before): resume it.
        case settled
    }

    /// Reserves for request `id` (idempotent per id): `min(prompt + wanted, limit − used −
    /// reserved)` when at least `min(minimum, wanted)` completion tokens fit (`Scripts` text:
    /// ``BudgetLedger/reserveScript``; the same rule as `BudgetArithmetic.grant`).
    public func reserve(key: String, id: RequestID, nowMs: Int64, limit: Int, promptEstimate: Int,
                        wantedCompletion: Int, minimumCompletion: Int,
                        done: @escaping (Result<Reservation, RedisFailure>) -> Void) {
        scripts.run(BudgetLedger.reserveScript, keys: [key, BudgetLedger.expiriesKey(key)],
                    args: [id.value, String(nowMs), String(nowMs + BudgetLedger.reservationLapseMs), String(limit),
                           String(promptEstimate), String(wantedCompletion), String(minimumCompletion),
                           String(BudgetLedger.ttlMs)]) { r in
            if let f = r.failure { return done(.failure(f)) }
            guard let a = r.array, a.count == 2, let kind = a[0].int, let n = a[1].int else {
                return done(.failure(RedisFailure(code: .other("ERR"), message: "unexpected reserve reply")))
            }
            switch kind {
            case 1: done(.success(.granted(tokens: Int(n))))
            case 2: done(.success(.settled))
            default: done(.success(.refused(remaining: Int(n))))
            }
        }
    }

    /// Settles request `id`: releases its reservation and adds `tokens` to `used`, once
    /// (a second settlement of the same id changes nothing). `done` gets `true` when
    /// this call settled it.
    public func settle(key: String, id: RequestID, tokens: Int, done: ((Result<Bool, RedisFailure>) -> Void)? = nil) {
        scripts.run(BudgetLedger.settleScript, keys: [key, BudgetLedger.expiriesKey(key)],
                    args: [id.value, String(max(0, tokens)), String(BudgetLedger.ttlMs)]) { r in
            if let f = r.failure { done?(.failure(f)); return }
            done?(.success((r.int ?? -1) >= 0))
        }
    }

    /// What `extend` did.
    public enum Extension: Sendable, Equatable {
        /// The reservation grew by the tokens asked for.
        case extended
        /// The budget's limit leaves fewer tokens than asked for; nothing changed.
        case refused(remaining: Int)
        /// No reservation is held under the id (it lapsed, or the id was settled).
        case noReservation
    }

    /// Grows request `id`'s reservation by `tokens` when the budget's `limit` still has them
    /// free (`limit − used − reserved ≥ tokens`), atomically, and pushes its lapse time
    /// out: a continuation's re-sent prompt (docs/PROTOCOL.md §4.5, §9.2) is reserved
    /// before it is sent, so a continued answer is charged within the limit.
    public func extend(key: String, id: RequestID, tokens: Int, limit: Int, nowMs: Int64,
                       done: @escaping (Result<Extension, RedisFailure>) -> Void) {
        scripts.run(BudgetLedger.extendScript, keys: [key, BudgetLedger.expiriesKey(key)],
                    args: [id.value, String(max(0, tokens)), String(limit), String(nowMs + BudgetLedger.reservationLapseMs)]) { r in
            if let f = r.failure { return done(.failure(f)) }
            guard let a = r.array, a.count == 2, let kind = a[0].int, let n = a[1].int else {
                return done(.failure(RedisFailure(code: .other("ERR"), message: "unexpected extend reply")))
            }
            switch kind {
            case 1: done(.success(.extended))
            case 0: done(.success(.refused(remaining: Int(n))))
            default: done(.success(.noReservation))
            }
        }
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

    /// `used` and `reserved` (lapsed reservations purged first).
    public func read(key: String, nowMs: Int64, done: @escaping (Result<(used: Int, reserved: Int), RedisFailure>) -> Void) {
        scripts.run(BudgetLedger.readScript, keys: [key, BudgetLedger.expiriesKey(key)], args: [String(nowMs)]) { r in
            if let f = r.failure { return done(.failure(f)) }
            let a = r.array ?? []
            done(.success((used: Int(a.first?.int ?? 0), reserved: Int(a.count > 1 ? a[1].int ?? 0 : 0))))
        }
    }

    /// Every script of the ledger (loaded after each connection).
    public static var allScripts: [String] { [reserveScript, settleScript, readScript, extendScript] }

    /// Releases reservations lapsed at ARGV[purgeArg] (unix ms). KEYS: hash, expiries.
    private static func purge(nowArg: Int) -> String {
        """
        for _, r in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[\(nowArg)])) do
          local g = redis.call('HGET', KEYS[1], 'r:' .. r)
          if g then
            redis.call('HINCRBY', KEYS[1], 'reserved', -tonumber(g))
            redis.call('HDEL', KEYS[1], 'r:' .. r)
          end
          redis.call('ZREM', KEYS[2], r)
        end
        """
    }

    /// KEYS: hash, expiries. ARGV: id, now ms, lapse ms, limit, prompt estimate, wanted
    /// completion, minimum completion, ttl ms. Returns {1, tokens} granted (also for a
    /// repeated id), {0, remaining} refused, {2, 0} already settled.
    public static let reserveScript = purge(nowArg: 2) + """

    local held = redis.call('HGET', KEYS[1], 'r:' .. ARGV[1])
    if held then return {1, tonumber(held)} end
    if redis.call('HEXISTS', KEYS[1], 's:' .. ARGV[1]) == 1 then return {2, 0} end
    local used = tonumber(redis.call('HGET', KEYS[1], 'used') or '0')
    local reserved = tonumber(redis.call('HGET', KEYS[1], 'reserved') or '0')
    local remaining = tonumber(ARGV[4]) - used - reserved
    if remaining < 0 then remaining = 0 end
    local prompt = tonumber(ARGV[5])
    local wanted = tonumber(ARGV[6])
    local grant = math.min(prompt + wanted, remaining)
    if grant - prompt < math.max(1, math.min(tonumber(ARGV[7]), wanted)) then return {0, remaining} end
    redis.call('HSET', KEYS[1], 'r:' .. ARGV[1], grant)
    redis.call('HINCRBY', KEYS[1], 'reserved', grant)
    redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
    redis.call('PEXPIRE', KEYS[1], ARGV[8])
    redis.call('PEXPIRE', KEYS[2], ARGV[8])
    return {1, grant}
    """

    /// KEYS: hash, expiries. ARGV: id, tokens charged, ttl ms. Returns the tokens charged,
    /// or -1 when the id was settled before.
    public static let settleScript = """
    if redis.call('HEXISTS', KEYS[1], 's:' .. ARGV[1]) == 1 then return -1 end
    local g = redis.call('HGET', KEYS[1], 'r:' .. ARGV[1])
    if g then
      redis.call('HINCRBY', KEYS[1], 'reserved', -tonumber(g))
      redis.call('HDEL', KEYS[1], 'r:' .. ARGV[1])
    end
    redis.call('ZREM', KEYS[2], ARGV[1])
    redis.call('HINCRBY', KEYS[1], 'used', ARGV[2])
    redis.call('HSET', KEYS[1], 's:' .. ARGV[1], ARGV[2])
    redis.call('PEXPIRE', KEYS[1], ARGV[3])
    return tonumber(ARGV[2])
    """

    /// KEYS: hash, expiries. ARGV: id, tokens, limit, lapse ms. Returns {1, 0} extended,
    /// {0, remaining} refused, {-1, 0} when no reservation is held under the id.
    public static let extendScript = """
    local held = redis.call('HGET', KEYS[1], 'r:' .. ARGV[1])
    if not held then return {-1, 0} end
    local used = tonumber(redis.call('HGET', KEYS[1], 'used') or '0')
    local reserved = tonumber(redis.call('HGET', KEYS[1], 'reserved') or '0')
    local remaining = tonumber(ARGV[3]) - used - reserved
    if remaining < tonumber(ARGV[2]) then return {0, math.max(0, remaining)} end
    redis.call('HINCRBY', KEYS[1], 'r:' .. ARGV[1], ARGV[2])
    redis.call('HINCRBY', KEYS[1], 'reserved', ARGV[2])
    redis.call('ZADD', KEYS[2], 'XX', ARGV[4], ARGV[1])
    return {1, 0}
    """

    /// KEYS: hash, expiries. ARGV: now ms. Returns {used, reserved}.
    public static let readScript = purge(nowArg: 1) + """

    return {tonumber(redis.call('HGET', KEYS[1], 'used') or '0'), tonumber(redis.call('HGET', KEYS[1], 'reserved') or '0')}
    """
}
