import RelayCore
@testable import RelayEventStore
import RelayUpstream
import RelayBudgets
@testable import RelayServer

/// A `GenerationHost` for one relay instance on an `InMemoryAnswerStore`, with a clock the
/// test moves (`nowMs`, loop ms): it gives each generation an `InMemoryAnswerWriter`,
/// records what the generation reports (acknowledged events, settlements, endings), and
/// answers an ownership check after a stall the way `OwnerLeases.confirm` does, from the
/// store's fenced lease refresh, when the test calls `confirmOwnership()`.
final class InMemoryGenerationHost: GenerationHost {
    let store: InMemoryAnswerStore
    let instance: String
    var nowMs: UInt64
    private(set) var acknowledged: [SequencedEvent] = []
    private(set) var settlements: [(id: String, tokens: Int)] = []
    private(set) var ended: [ObjectIdentifier] = []
    private(set) var retained: [RetentionOutcome] = []
    private(set) var upstreamFailures = 0
    /// Generations that asked to confirm their ownership and were not answered yet.
    private(set) var awaitingOwnership: [Generation] = []
    private(set) var ownershipAsked = 0

    init(store: InMemoryAnswerStore, instance: String, nowMs: UInt64 = 10_000) {
        self.store = store
        self.instance = instance
        self.nowMs = nowMs
    }

    func writer(for id: RequestID, continuing taken: EventLog.TakenStream?) -> any AnswerWriter {
        InMemoryAnswerWriter(store: store, id: id, instance: instance, taken: taken) { [unowned self] in self.nowMs }
    }

    func firstToken(afterSeconds s: Double) {}
    func upstreamFailed() { upstreamFailures += 1 }
    func appended(events: Int) {}
    func settle(_ g: Generation, tokens: Int) { settlements.append((g.id.value, tokens)) }
    func generationEnded(_ g: Generation) { ended.append(ObjectIdentifier(g)) }
    func acknowledged(_ g: Generation, event: SequencedEvent) { acknowledged.append(event) }
    func wallMs() -> UInt64 { 1_700_000_000_000 + nowMs }
    func answerRetained(_ outcome: RetentionOutcome) { retained.append(outcome) }

    func confirmOwnership(_ g: Generation) {
        ownershipAsked += 1
        awaitingOwnership.append(g)
    }

    /// Answers the ownership checks asked so far from the store's fenced lease refresh
    /// (`OwnerLeases.confirm`): taken over → the generation stops; ended elsewhere → it stops
    /// without sending more; held → it goes on, the lease known for another period.
    func confirmOwnership() {
        let waiting = awaitingOwnership
        awaitingOwnership.removeAll()
        for g in waiting where !g.finished {
            switch store.refreshLease(g.id, instance: instance, epoch: g.ownershipEpoch, nowMs: nowMs) {
            case .takenOver: g.leaseTakenOver()
            case .notRunning: g.endedElsewhere()
            case .held: g.ownershipConfirmed(untilMs: LeasePolicy.knownUntil(sentAtMs: nowMs, leaseMs: store.leaseMs))
            }
        }
    }

    func hasEnded(_ g: Generation) -> Bool { ended.contains(ObjectIdentifier(g)) }

    /// A generation of `id` on this host, granted `maxTokens` completion tokens against a
    /// prompt estimate of `prompt` tokens; `taken`: a takeover it continues.
    func generation(_ id: RequestID, upstream: Upstream, maxTokens: Int = 1_000, prompt: Int = 10,
                    remaining: Int = .max, taken: EventLog.TakenStream? = nil) -> Generation {
        let grant = BudgetArithmetic.grant(promptEstimate: prompt, wantedCompletion: maxTokens, remaining: remaining,
                                           minimumCompletion: 1)!
        return Generation(id: id, owner: "o", ownerHash: "oh", sid: "s",
                          budget: GenerationBudget(key: "budget", promptEstimate: prompt, grant: grant),
                          upstream: upstream, host: self, taken: taken)
    }
}

/// An upstream the test drives: `start` keeps `emit`, `send` emits an event, `cancel` stops
/// it and reports the prompt and the deltas sent (as `Upstream` promises).
final class ScriptedUpstream: Upstream {
    let promptTokens: Int
    private var emit: ((StreamEvent) -> Void)?
    private(set) var started = false
    private(set) var cancelled = false
    private(set) var deltasSent = 0

    init(promptTokens: Int = 10) { self.promptTokens = promptTokens }

    func start(emit: @escaping (StreamEvent) -> Void) {
        started = true
        self.emit = emit
    }

    /// Emits `e` (nothing after a terminal event or a cancel).
    func send(_ e: StreamEvent) {
        guard let emit else { return }
        if case .delta = e { deltasSent += 1 } else { self.emit = nil }
        emit(e)
    }

    /// Emits `n` deltas `"<prefix>1 "`, `"<prefix>2 "`, ….
    func sendDeltas(_ n: Int, prefix: String) {
        for i in 1...n { send(.delta("\(prefix)\(i) ")) }
    }

    /// Ends with `done` and the usage so far.
    func finish() {
        send(.done(finishReason: "stop", usage: Usage(promptTokens: promptTokens, completionTokens: deltasSent)))
    }

    func cancel() -> Usage {
        cancelled = true
        emit = nil
        return Usage(promptTokens: promptTokens, completionTokens: deltasSent)
    }
}
