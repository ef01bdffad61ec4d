import RelayAuth
import RelayCore
import RelayRedis
import RelayEventStore
import RelayBudgets
import RelayHTTP

/// Admission of a new generation (`POST /api/chat/stream`, docs/PROTOCOL.md §3, §9), in this
/// order, each step atomic in Redis and idempotent per request id, so concurrent
/// retries of one `X-Request-Id` all end on the one stream:
///
/// 1. the session's revocation marker and, for a client-chosen id, whether the stream
///    exists (one pipelined round trip): an existing stream is resumed (200) whatever
///    the session limit;
/// 2. a session slot (`Scripts.admit`, key by owner and `sid`): `429 too_many_streams`;
/// 3. the budget reservation (`BudgetLedger.reserve`): `429 token_budget_exhausted`;
/// 4. the stream's meta (`Scripts.create`); a twin that lost the race resumes it.
///
/// Slot and reservation are taken before the meta, so no twin ever sees a stream that
/// is created and then discarded. Revocation is checked again after registration
/// (`StreamHub.recheckRevocation`). Nothing upstream exists until `admitted` runs, so
/// a refused request costs no upstream call. Loop thread only.
final class StreamAdmission {
    /// What the caller asks for (tokens).
    struct Request {
        /// The scoped id (`RequestID.scoped(by:)`).
        var id: RequestID
        /// Whether the client chose the id (`X-Request-Id`).
        var explicitID: Bool
        /// `OwnerHash` of the caller's `sub`.
        var ownerHash: String
        /// `BudgetArithmetic.estimatePromptTokens` of the messages.
        var promptEstimate: Int
        /// `BudgetArithmetic.wantedCompletion` of the request.
        var wantedCompletion: Int
        /// The request after the relay's policy, kept with the stream for a takeover
        /// (`StoredRequest`, with `max_tokens` clamped to the grant).
        var chat: ChatRequest
    }

    /// How an admission ended for the caller.
    enum Outcome {
        /// Admitted: the stream exists, holds a session slot and a reservation.
        case admitted(GenerationBudget)
        /// The id already exists (or was used) and the client named it: resume it.
        case existing
    }

    private let gate: RequestGuard
    private let log: EventLog
    private let ledger: BudgetLedger
    private let metrics: Metrics
    private var context: ServerContext { gate.context }
    private var sessions: SessionStore { gate.sessions }

    init(gate: RequestGuard, log: EventLog, ledger: BudgetLedger) {
        self.gate = gate
        self.log = log
        self.ledger = ledger
        self.metrics = gate.metrics
    }

    /// Admits `req` for `who`, or answers the refusal on `ex`. `then` runs when the
    /// request was admitted (even if the client has gone meanwhile: a generation that
    /// holds a reservation runs and settles) or names an existing stream (exchange open).
    func admit(_ ex: HTTPExchange, _ req: Request, who: Identity, then: @escaping (Outcome) -> Void) {
        let step = { [weak self] (revoked: Result<Bool, RedisFailure>, existing: Result<StreamInfo?, RedisFailure>) in
            guard let self, ex.isOpen else { return }
            switch (revoked, existing) {
            case (.failure, _), (_, .failure):
                return self.gate.fail(ex, .notReady("Redis is not available"))
            case (.success(true), _):
                return self.gate.fail(ex, .unauthorized("session revoked"))
            case (.success(false), .success(.some)):
                return then(.existing)
            case (.success(false), .success(nil)):
                self.takeSlot(ex, req, who: who, then: then)
            }
        }
        guard req.explicitID else { return sessions.isRevoked(sid: who.sid) { step($0, .success(nil)) } }
        var revoked: Result<Bool, RedisFailure> = .success(false)
        sessions.isRevoked(sid: who.sid) { revoked = $0 }
        log.open(req.id) { step(revoked, $0) }
    }

    private func takeSlot(_ ex: HTTPExchange, _ req: Request, who: Identity, then: @escaping (Outcome) -> Void) {
        let max = context.streams.maxStreamsPerSession
        sessions.admit(owner: req.ownerHash, sid: who.sid, id: req.id, nowMs: context.nowMs(), leaseMs: EventLog.leaseMs,
                       max: max) { [weak self] r in
            guard let self, ex.isOpen else { return }
            switch r {
            case .failure: self.gate.fail(ex, .notReady("Redis is not available"))
            case .success(false): self.gate.fail(ex, APIError(.tooManyStreams, "at most \(max) answers may be generated at once per session"))
            case .success(true): self.reserve(ex, req, who: who, then: then)
            }
        }
    }

    private func reserve(_ ex: HTTPExchange, _ req: Request, who: Identity, then: @escaping (Outcome) -> Void) {
        let period = BudgetPolicy.period(now: context.nowMs() / 1000)
        let limit = context.budgets.limit(forTier: who.tier)
        let key = BudgetLedger.key(ownerHash: req.ownerHash, period: period)
        ledger.reserve(key: key, id: req.id, nowMs: context.nowMs(), limit: limit, promptEstimate: req.promptEstimate,
                       wantedCompletion: req.wantedCompletion,
                       minimumCompletion: context.streams.budgetMinimumTokens) { [weak self] r in
            guard let self else { return }
            switch r {
            case .failure:
                if ex.isOpen { self.gate.fail(ex, .notReady("Redis is not available")) }
                // A slot taken for a random id is given back; a client-chosen id's slot
                // may be a twin's, so it lapses by itself (lease, a few seconds).
                if !req.explicitID { self.sessions.release(owner: req.ownerHash, sid: who.sid, id: req.id) }
            case .success(.settled):
                if ex.isOpen { then(.existing) }
            case .success(.refused(let remaining)):
                if !req.explicitID { self.sessions.release(owner: req.ownerHash, sid: who.sid, id: req.id) }
                if ex.isOpen {
                    self.gate.fail(ex, APIError(.tokenBudgetExhausted, "the \(self.context.budgets.effectiveTier(who.tier)) tier's \(limit) tokens for \(period) are used up or reserved (\(remaining) left)"))
                }
            case .success(.granted(let tokens)):
                self.metrics.add(.budgetReservations)
                let grant = BudgetArithmetic.grant(reservedTokens: tokens, promptEstimate: req.promptEstimate,
                                                   wantedCompletion: req.wantedCompletion)
                self.create(ex, req, who: who, budget: GenerationBudget(key: key, promptEstimate: req.promptEstimate, grant: grant),
                            limit: limit, then: then)
            }
        }
    }

    /// Creates the stream's meta; a twin that lost the race resumes the winner's stream.
    private func create(_ ex: HTTPExchange, _ req: Request, who: Identity, budget: GenerationBudget, limit: Int,
                        then: @escaping (Outcome) -> Void) {
        var sent = req.chat
        sent.maxTokens = budget.grant.maxTokens
        let stored = StoredRequest(request: sent, budgetKey: budget.key, promptEstimate: budget.promptEstimate,
                                   reservedTokens: budget.grant.reserved, limitedByBudget: budget.grant.limitedByBudget,
                                   budgetLimit: limit)
        log.create(req.id, owner: who.user, sid: who.sid, instance: context.instance, nowMs: UInt64(context.nowMs()),
                   budgetKey: budget.key, promptEstimate: budget.promptEstimate, request: stored) { [weak self] r in
            guard let self else { return }
            switch r {
            case .failure(let f):
                // Whether the meta was written is unknown: the reservation and slot
                // lapse by themselves rather than free a twin's.
                if ex.isOpen { self.gate.fail(ex, .notReady("Redis is not available (\(f.isDisconnect ? "disconnected" : "error"))")) }
            case .success(false):
                guard ex.isOpen else { return }
                if req.explicitID { return then(.existing) }
                self.gate.fail(ex, .internalError("request id collision; retry"))
            case .success(true):
                then(.admitted(budget))
            }
        }
    }
}
