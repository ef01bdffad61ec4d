import RelayAuth
import RelayCore
import RelayRedis

/// Admission of a new generation (`POST /api/chat/stream`): the session's revocation
/// marker and the caller's token budget (one pipelined round trip), then the stream's
/// creation under its id (`Scripts.create`), then a session slot
/// (`RELAY_MAX_STREAMS_PER_SESSION`, `Scripts.admit`). Nothing upstream exists until
/// `admitted` runs, so a refused request costs no upstream call. Loop thread only.
///
/// Every refusal is answered here (plain HTTP, before the stream). A refusal after the
/// id was created gives the id back (`EventLog.discard`).
final class StreamAdmission {
    /// How an admission ended for the caller.
    enum Outcome {
        /// Admitted: the stream exists with this budget key and holds a session slot.
        case admitted(budgetKey: String)
        /// The id already exists and the client named it: resume it instead.
        case existing
    }

    private let gate: RequestGuard
    private let log: EventLog
    private var context: ServerContext { gate.context }
    private var sessions: SessionStore { gate.sessions }

    init(gate: RequestGuard, log: EventLog) {
        self.gate = gate
        self.log = log
    }

    /// Admits `id` for `who`, or answers the refusal on `ex`. `then` runs only when the
    /// exchange is still open and the request was admitted or names an existing stream.
    func admit(_ ex: HTTPExchange, id: RequestID, who: Identity, explicitID: Bool,
               then: @escaping (Outcome) -> Void) {
        let period = BudgetPolicy.period(now: context.nowMs() / 1000)
        let limit = context.budgets.limit(forTier: who.tier)
        var revoked: Result<Bool, RedisFailure> = .success(false)
        sessions.isRevoked(sid: who.sid) { revoked = $0 }
        sessions.budgetUsed(user: who.user, period: period) { [weak self] used in
            guard let self, ex.isOpen else { return }
            switch (revoked, used) {
            case (.failure, _), (_, .failure):
                return self.gate.fail(ex, .notReady("Redis is not available"))
            case (.success(true), _):
                return self.gate.fail(ex, .unauthorized("session revoked"))
            case (.success(false), .success(let u)):
                if u >= limit {
                    return self.gate.fail(ex, APIError(.tokenBudgetExhausted, "the \(self.context.budgets.effectiveTier(who.tier)) tier's \(limit) tokens for \(period) are used up"))
                }
                self.create(ex, id: id, who: who, explicitID: explicitID,
                            budgetKey: StreamKeys.budget(user: who.user, period: period), then: then)
            }
        }
    }

    /// Creates the stream, then takes a session slot.
    private func create(_ ex: HTTPExchange, id: RequestID, who: Identity, explicitID: Bool, budgetKey: String,
                        then: @escaping (Outcome) -> Void) {
        log.create(id, owner: who.user, sid: who.sid, instance: context.instance, nowMs: UInt64(context.nowMs())) { [weak self] r in
            guard let self, ex.isOpen else { return }
            switch r {
            case .failure(let f):
                self.gate.fail(ex, .notReady("Redis is not available (\(f.isDisconnect ? "disconnected" : "error"))"))
            case .success(false):
                if explicitID {
                    then(.existing)
                } else {
                    self.gate.fail(ex, .internalError("request id collision; retry"))
                }
            case .success(true):
                let max = self.context.config.maxStreamsPerSession
                self.sessions.admit(sid: who.sid, id: id, nowMs: self.context.nowMs(), leaseMs: EventLog.leaseMs,
                                    max: max) { [weak self] admitted in
                    guard let self else { return }
                    guard case .success(true) = admitted, ex.isOpen else {
                        // Give the id back: nothing was generated under it.
                        self.log.discard(id)
                        if !ex.isOpen { return }
                        if case .failure = admitted { return self.gate.fail(ex, .notReady("Redis is not available")) }
                        return self.gate.fail(ex, APIError(.tooManyStreams, "at most \(max) answers may be generated at once per session"))
                    }
                    then(.admitted(budgetKey: budgetKey))
                }
            }
        }
    }
}
