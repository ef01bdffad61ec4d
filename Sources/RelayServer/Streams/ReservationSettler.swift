import RelayCore
import RelayRedis
import RelayBudgets

/// Settles budget reservations (docs/DATA_MODEL.md §9): a generation's on its ending,
/// and a lost owner's when this worker ended its stream with `upstream_lost`.
/// `BudgetLedger.settle` charges each request id at most once, whichever instance
/// settles. A failed settlement is logged; the reservation then lapses. Loop thread only.
final class ReservationSettler {
    private let ledger: BudgetLedger
    private let metrics: Metrics

    init(ledger: BudgetLedger, metrics: Metrics) {
        self.ledger = ledger
        self.metrics = metrics
    }

    /// Charges `tokens` (prompt + completion) to budget hash `budgetKey` for request
    /// `id` and releases the rest of its reservation. Nothing for an empty key (a
    /// stream admitted without a budget).
    func settle(budgetKey: String, id: RequestID, tokens: Int) {
        guard !budgetKey.isEmpty else { return }
        ledger.settle(key: budgetKey, id: id, tokens: tokens) { [metrics] r in
            if case .success(true) = r { metrics.add(.budgetSettlements) }
            if case .failure(let f) = r {
                Log.warn("budget settlement failed; the reservation lapses", ["requestId": id.value, "reason": f.message])
            }
        }
    }

    /// Settles the stream of an owner that died (its lease lapsed and this worker
    /// appended `upstream_lost` at `endedAtSeq`): the prompt estimate stored with the
    /// stream plus one token per `delta` event before it
    /// (`BudgetArithmetic.chargeForLostStream`).
    func settleLostOwner(budgetKey: String, id: RequestID, promptEstimate: Int, endedAtSeq seq: UInt64) {
        settle(budgetKey: budgetKey, id: id,
               tokens: BudgetArithmetic.chargeForLostStream(promptEstimate: promptEstimate, lastSeqBefore: seq - 1))
    }
}
