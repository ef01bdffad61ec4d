import RelayAuth
import RelayCore
import RelayRedis
import RelayBudgets
import RelayHTTP

/// `GET /api/budget` and `POST /admin/sessions/{sid}/revoke` (docs/PROTOCOL.md §9). Loop
/// thread only.
final class AccountRoutes {
    private let gate: RequestGuard
    private let ledger: BudgetLedger
    private var context: ServerContext { gate.context }

    init(gate: RequestGuard, ledger: BudgetLedger) {
        self.gate = gate
        self.ledger = ledger
    }

    /// `GET /api/budget` (docs/PROTOCOL.md §9): `{"tier","limit","used","reserved","remaining","period"}`,
    /// tokens of the caller's tier in the current calendar month (UTC); `reserved` is
    /// held by running generations, `remaining = max(0, limit − used − reserved)`.
    func budget(_ ex: HTTPExchange) {
        guard let who = gate.authenticate(ex) else { return }
        let period = BudgetPolicy.period(now: context.nowMs() / 1000)
        let tier = context.budgets.effectiveTier(who.tier)
        let limit = context.budgets.limit(forTier: who.tier)
        let key = BudgetLedger.key(ownerHash: OwnerHash.of(who.user), period: period)
        gate.checkSession(ex, who) { [weak self] in
            guard let self else { return }
            self.ledger.read(key: key, nowMs: self.context.nowMs()) { r in
                guard ex.isOpen else { return }
                guard case .success(let b) = r else { return ex.respond(.notReady("Redis is not available")) }
                let body = "{\"tier\":\(JSONText.quoted(tier)),\"limit\":\(limit),\"used\":\(b.used),\"reserved\":\(b.reserved),\"remaining\":\(max(0, limit - b.used - b.reserved)),\"period\":\(JSONText.quoted(period))}"
                ex.respond(status: 200, contentType: "application/json", body: body)
            }
        }
    }

    /// `POST /admin/sessions/{sid}/revoke` (docs/PROTOCOL.md §9): admin key only (constant-time
    /// check; 401 alike when the key is wrong or admin routes are off). 202, idempotent.
    /// The caller has been checked against the admin key already (`Router`).
    func revokeSession(_ ex: HTTPExchange, sid: String) {
        guard !sid.isEmpty, sid.utf8.count <= 256, !sid.unicodeScalars.contains(where: { $0.value < 0x20 }) else {
            return gate.fail(ex, .invalidRequest("bad session id"))
        }
        gate.sessions.revoke(sid: sid, ttlMs: context.config.revocationTTLms) { r in
            guard ex.isOpen else { return }
            switch r {
            case .failure: ex.respond(.notReady("Redis is not available"))
            case .success:
                Log.info("session revoked", ["sidHash": Log.shortHash(sid)])
                ex.respond(status: 202, contentType: "application/json", body: "{\"revoked\":true}")
            }
        }
    }
}
