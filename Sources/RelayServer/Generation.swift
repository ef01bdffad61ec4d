import RelayCore
import RelayRedis
import RelayUpstream

/// One generation (DESIGN §1 "Generation", the producer): upstream adapter →
/// sequencer (seq 1, 2, 3 …) → ordered appends to the Redis event log. It keeps
/// running when its client disconnects, until `done`, an upstream error, a cancel or
/// a revocation. Loop thread only.
final class Generation {
    let id: RequestID
    let owner: String
    let sid: String
    let budgetKey: String?
    unowned let host: GenerationHost
    private let upstream: Upstream
    private let appender: StreamAppender
    private(set) var seq: UInt64 = 0
    private(set) var finished = false
    let startedMs: UInt64
    private var firstTokenMs: UInt64?
    private var completionTokens = 0

    init(id: RequestID, owner: String, sid: String, budgetKey: String?, upstream: Upstream, host: GenerationHost) {
        self.id = id
        self.owner = owner
        self.sid = sid
        self.budgetKey = budgetKey
        self.upstream = upstream
        self.host = host
        self.startedMs = host.loop.nowMs
        self.appender = StreamAppender(log: host.log, loop: host.loop, id: id)
        appender.onPermanentFailure = { [weak self] f in self?.appendFailed(f) }
        appender.onDrained = { [weak self] in
            guard let self, self.finished else { return }
            self.host.generationEnded(self)
        }
    }

    /// Starts the upstream call.
    func start() {
        upstream.start { [weak self] e in
            guard let self else { return }
            if case .error = e, !self.finished { self.host.upstreamFailed() }
            self.emit(e)
        }
    }

    private func emit(_ e: StreamEvent) {
        guard !finished else { return }
        seq += 1
        var text = ""
        var finalState: StreamState?
        var budget: (key: String, tokens: Int)?
        switch e {
        case .delta(let t):
            text = t
            completionTokens += 1
            if firstTokenMs == nil {
                firstTokenMs = host.loop.nowMs
                host.firstToken(afterSeconds: Double(firstTokenMs! - startedMs) / 1000)
            }
        case .done(let reason, let usage):
            finalState = reason == "cancelled" ? .cancelled : .done
            if let k = budgetKey { budget = (k, usage.totalTokens) }
        case .error:
            finalState = .failed
        }
        if finalState != nil { finished = true }
        appender.append(seq: seq, json: e.json, text: text, finalState: finalState?.rawValue, budget: budget)
        host.appended(events: 1)
    }

    /// Stops the upstream and ends the stream with `done` (`finish_reason:
    /// "cancelled"`) and the partial usage (issue 4: Stop generating).
    func cancel() {
        guard !finished else { return }
        let usage = upstream.cancel()
        emit(.done(finishReason: "cancelled", usage: usage))
    }

    /// Stops the upstream and ends the stream with `error` (revocation, drain timeout).
    func abort(_ e: APIError) {
        guard !finished else { return }
        _ = upstream.cancel()
        emit(e.asEvent)
    }

    private func appendFailed(_ f: RedisFailure) {
        // The stream expired or was ended elsewhere: nothing more can be stored.
        if !finished { _ = upstream.cancel() }
        finished = true
        Log.warn("generation stopped: stream no longer accepts appends", ["requestId": id.value, "reason": f.message])
        host.generationEnded(self)
    }
}
