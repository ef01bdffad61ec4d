import RelayAuth
import RelayCore
import RelayLoop
import RelayUpstream
import RelayEventStore
import RelayBudgets

/// Continues a stream this worker took over after its owner's lease lapsed
/// (docs/PROTOCOL.md §4.5, docs/DATA_MODEL.md §6.1): reads the stored request
/// (`StoredRequest`), asks the upstream for the rest of the answer
/// (`UpstreamFactory.prepareContinuation` with the text so far), and runs it as a
/// `Generation` that appends after the stored top seq under the new ownership epoch, on
/// the same budget reservation. The re-sent prompt is charged as real usage (added to
/// the meta's `prompt` at once, so a later takeover or lease expiry charges it too).
/// When the stream cannot be continued (an upstream without continuation, an unreadable
/// request), the same generation ends it at once with `upstream_lost`, charged what was
/// generated. Loop thread only.
enum StreamTakeover {
    /// Starts the continuation of `taken` (stream `id`) on `hub`'s worker.
    static func continueStream(_ id: RequestID, _ taken: EventLog.TakenStream, hub: StreamHub, upstreams: UpstreamFactory) {
        guard hub.generations[id.value] == nil else { return }
        hub.metrics.add(.takeovers)
        var plan: UpstreamPlan?
        var why = ""
        var stored: StoredRequest?
        var promptEstimate = 0
        do {
            let s = try StoredRequest.decode(taken.request)
            stored = s
            plan = try upstreams.prepareContinuation(s.request, soFar: AnswerSoFar(events: taken.events, completionTokens: taken.tokens))
            promptEstimate = continuationPrompt(s.request, soFar: taken.text)
        } catch let e as ContinuationUnsupported {
            why = e.reason
        } catch {
            why = "\(error)"
        }
        var upstream: Upstream?
        if let p = plan {
            do { upstream = try p.make(loop: hub.loop) } catch { why = "\(error)" }
        }
        guard let upstream else {
            return refuse(id, taken, stored, hub: hub, why: why,
                          message: "the relay instance generating this answer stopped and the upstream cannot continue it; retry the request")
        }
        // The re-sent prompt is reserved within the owner's limit before it is sent
        // (docs/PROTOCOL.md §9.2): a continuation never charges past the budget.
        guard let s = stored, !s.budgetKey.isEmpty else {
            return start(id, taken, stored, upstream, promptEstimate: promptEstimate, hub: hub)
        }
        hub.ledger.extend(key: s.budgetKey, id: id, tokens: promptEstimate, limit: s.budgetLimit, nowMs: Int64(hub.wallMs())) { r in
            switch r {
            case .success(.extended):
                start(id, taken, stored, upstream, promptEstimate: promptEstimate, hub: hub)
            case .success(let refusal):
                _ = upstream.cancel()
                refuse(id, taken, stored, hub: hub, why: "budget: \(refusal), \(promptEstimate) tokens asked",
                       message: "the relay instance generating this answer stopped, and the token budget cannot cover continuing it; retry the request")
            case .failure(let f):
                _ = upstream.cancel()
                refuse(id, taken, stored, hub: hub, why: "budget not reserved: \(f.message)",
                       message: "the relay instance generating this answer stopped and its continuation could not be reserved; retry the request")
            }
        }
    }

    /// The generation that continues `taken`, on the same reservation; `promptEstimate`
    /// is what this continuation adds to the charge (0 when it is not continued).
    private static func generation(_ id: RequestID, _ taken: EventLog.TakenStream, _ stored: StoredRequest?,
                                   _ upstream: Upstream, promptEstimate: Int, hub: StreamHub) -> Generation {
        let grant = stored.map {
            BudgetArithmetic.Grant(reserved: $0.reservedTokens, maxTokens: $0.request.maxTokens ?? Int.max,
                                   limitedByBudget: $0.limitedByBudget)
        } ?? BudgetArithmetic.Grant(reserved: 0, maxTokens: Int.max, limitedByBudget: false)
        let budget = GenerationBudget(key: stored?.budgetKey ?? "", promptEstimate: promptEstimate, grant: grant)
        let g = Generation(id: id, owner: taken.owner, ownerHash: OwnerHash.of(taken.owner), sid: taken.sid, budget: budget,
                           upstream: upstream, host: hub, taken: taken)
        hub.register(g)
        return g
    }

    /// Takes the answer's session slot again (`SessionStore.admit`, idempotent per id),
    /// then starts the continuation. The lost owner's slot lapsed with its lease, so the
    /// continuation holds one like any running answer (`RELAY_MAX_STREAMS_PER_SESSION`,
    /// docs/PROTOCOL.md §4.5); when the session filled up meanwhile it is not continued.
    private static func start(_ id: RequestID, _ taken: EventLog.TakenStream, _ stored: StoredRequest?, _ upstream: Upstream,
                              promptEstimate: Int, hub: StreamHub) {
        guard hub.generations[id.value] == nil else { _ = upstream.cancel(); return }
        let max = hub.settings.maxStreamsPerSession
        hub.sessions.admit(owner: OwnerHash.of(taken.owner), sid: taken.sid, id: id, nowMs: Int64(hub.wallMs()),
                           leaseMs: EventLog.leaseMs, max: max) { r in
            guard case .success(true) = r else {
                _ = upstream.cancel()
                let full = (try? r.get()) == false
                return refuse(id, taken, stored, hub: hub,
                              why: full ? "the session runs \(max) other answers" : "session slot not taken: Redis failed",
                              message: full
                                ? "the relay instance generating this answer stopped, and the session already runs \(max) other answers; retry the request"
                                : "the relay instance generating this answer stopped and its continuation could not be admitted; retry the request")
            }
            guard hub.generations[id.value] == nil else { _ = upstream.cancel(); return }
            let g = generation(id, taken, stored, upstream, promptEstimate: promptEstimate, hub: hub)
            hub.log.addPromptCharge(id, tokens: promptEstimate)
            g.start()
        }
    }

    /// Ends a taken-over stream that is not continued with `upstream_lost`, charged what
    /// was generated.
    private static func refuse(_ id: RequestID, _ taken: EventLog.TakenStream, _ stored: StoredRequest?, hub: StreamHub,
                               why: String, message: String) {
        guard hub.generations[id.value] == nil else { return }
        hub.metrics.add(.continuationsRefused)
        Log.warn("taken-over stream cannot be continued: ended with upstream_lost", ["requestId": id.value, "reason": why])
        let g = generation(id, taken, stored, StoppedUpstream(), promptEstimate: 0, hub: hub)
        g.abort(APIError(.upstreamLost, message))
    }

    /// The relay's estimate of the prompt a continuation re-sends (docs/PROTOCOL.md §9):
    /// the request's messages plus the answer so far as a final assistant message, tokens.
    static func continuationPrompt(_ request: ChatRequest, soFar: String) -> Int {
        request.estimatedPromptTokens(continuing: soFar)   // the tools and images count too
    }
}

/// The upstream of a taken-over stream that cannot be continued: never started (the
/// generation ends it with `upstream_lost` at once), reports no usage of its own.
final class StoppedUpstream: Upstream {
    func start(emit: @escaping (StreamEvent) -> Void) {}
    func cancel() -> Usage { Usage(promptTokens: 0, completionTokens: 0) }
}
