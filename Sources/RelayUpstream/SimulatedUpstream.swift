import Glibc
import RelayCore
import RelayLoop

/// The embedded default upstream (docs/UPSTREAMS.md): streams a bundled original document
/// token by token at a fixed rate (tokens/s), then `done` with usage.
///
/// The same model always yields the same text, so a resumed answer can be compared
/// byte for byte with an uninterrupted one. `max_tokens` (and summary mode's cap)
/// cut the answer early with `finish_reason: "length"`.
public final class SimulatedUpstream: Upstream {
    private let count: Int
    private let event: (Int, UInt64) -> StreamEvent
    /// Completion tokens among the first n events (`usage.completion_tokens`).
    private let tokensIn: (Int) -> Int
    private let finishReason: String
    private let promptTokens: Int
    private let tokensPerSecond: Double
    private let loop: EventLoop
    // The state read per tick is marked `@exclusivity(unchecked)`: confined to the loop thread, and no
    // mutation of it spans a call out, so the run-time exclusivity check
    // (`swift_beginAccess`, about 75 instructions per access) guards nothing.
    @exclusivity(unchecked) private var timer: LoopTimer?
    @exclusivity(unchecked) private var emit: ((StreamEvent) -> Void)?
    @exclusivity(unchecked) private var sent = 0
    @exclusivity(unchecked) private var startMs: UInt64 = 0
    /// `start()`'s CLOCK_REALTIME, µs: the origin of each token's due time.
    @exclusivity(unchecked) private var startWallMicros: UInt64 = 0

    /// - Parameters:
    ///   - tokens: the answer, already tokenized.
    ///   - maxTokens: cap on tokens emitted (`nil`: the whole document).
    ///   - promptTokens: reported as `usage.prompt_tokens`.
    ///   - tokensPerSecond: emission rate, tokens/s (> 0).
    public convenience init(tokens: [String], maxTokens: Int?, promptTokens: Int, tokensPerSecond: Double, loop: EventLoop) {
        let cap = min(tokens.count, maxTokens ?? Int.max)
        self.init(count: cap, finishReason: cap < tokens.count ? "length" : "stop", promptTokens: promptTokens,
                  tokensPerSecond: tokensPerSecond, loop: loop) { tokens[$0] }
    }

    /// A paced source of `count` tokens: `token(i)` (i from 0) is called when token i
    /// is due, then `done` with `finishReason`.
    public convenience init(count: Int, finishReason: String, promptTokens: Int, tokensPerSecond: Double, loop: EventLoop,
                            token: @escaping (Int) -> String) {
        self.init(count: count, finishReason: finishReason, promptTokens: promptTokens, tokensPerSecond: tokensPerSecond,
                  loop: loop, scheduledToken: { i, _ in token(i) })
    }

    /// A paced source of `count` tokens: `scheduledToken(i, due)` (i from 0) is called
    /// when token i is emitted, with its due time `due` (CLOCK_REALTIME µs: `start()` +
    /// (i + 1) / `tokensPerSecond` s), which is later than the call when a tick emits a
    /// token ahead of time (at least one per tick) and earlier when the loop was late.
    public convenience init(count: Int, finishReason: String, promptTokens: Int, tokensPerSecond: Double, loop: EventLoop,
                            scheduledToken: @escaping (Int, UInt64) -> String) {
        self.init(count: count, finishReason: finishReason, promptTokens: promptTokens, tokensPerSecond: tokensPerSecond,
                  loop: loop, tokensIn: { $0 }, scheduledEvent: { i, due in .delta(scheduledToken(i, due)) })
    }

    /// A paced source of `count` events of any kind (deltas and parts): `scheduledEvent(i,
    /// due)` as `scheduledToken` above; `tokensIn(n)` is the completion tokens among the
    /// first n events (reported as usage).
    public init(count: Int, finishReason: String, promptTokens: Int, tokensPerSecond: Double, loop: EventLoop,
                tokensIn: @escaping (Int) -> Int, scheduledEvent: @escaping (Int, UInt64) -> StreamEvent) {
        self.count = max(0, count)
        self.event = scheduledEvent
        self.tokensIn = tokensIn
        self.finishReason = finishReason
        self.promptTokens = promptTokens
        self.tokensPerSecond = tokensPerSecond
        self.loop = loop
    }

    /// Emits one token per `1/tokensPerSecond` s on the loop thread (several per tick
    /// when the rate exceeds the timer's 1 ms resolution), then `done`.
    public func start(emit: @escaping (StreamEvent) -> Void) {
        self.emit = emit
        startMs = loop.nowMs
        startWallMicros = Self.wallMicros()
        let period = max(1.0, 1000.0 / tokensPerSecond)
        // A strong capture (no weak reference, so no refcount side table): the
        // cycle upstream → timer → handler → upstream is broken where the timer is dropped,
        // after the terminal event (`tick`) and in `cancel()`, which the generation calls on
        // every other ending (`Generation.teardown`). `self` is the handler's whole context.
        timer = LoopTimer(loop: loop, repeating: true) { self.tick() }
        timer?.schedule(afterMs: UInt64(period.rounded()))
    }

    private func tick() {
        guard let emit else { return }
        let elapsed = Double(loop.nowMs &- startMs)
        let due = min(count, Int(elapsed * tokensPerSecond / 1000.0))
        let n = min(max(due, sent + 1), count)  // at least one token per tick
        while sent < n {
            emit(event(sent, startWallMicros &+ UInt64(Double(sent + 1) * 1_000_000 / tokensPerSecond)))
            sent += 1
        }
        if sent >= count {
            timer?.cancel()
            timer = nil
            self.emit = nil
            emit(.done(finishReason: FinishReason(rawValue: finishReason), usage: Usage(promptTokens: promptTokens, completionTokens: tokensIn(sent))))
        }
    }

    /// CLOCK_REALTIME, µs.
    static func wallMicros() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return UInt64(ts.tv_sec) * 1_000_000 + UInt64(ts.tv_nsec) / 1_000
    }

    /// Stops the timer; returns the tokens emitted so far as usage.
    public func cancel() -> Usage {
        timer?.cancel()
        timer = nil
        emit = nil
        return Usage(promptTokens: promptTokens, completionTokens: tokensIn(sent))
    }
}

/// Makes `SimulatedUpstream`s: `"model": "simulated"` (or none) streams the English NDA
/// draft, `"simulated-ar"` the Arabic legal text, `"simulated-tools"` the built-in agent
/// answer (`SimulatedAgentAnswer`: reasoning, two tool calls, a source, text). Tokenized
/// once per factory.
public final class SimulatedUpstreamFactory: UpstreamFactory {
    private let tokensPerSecond: Double
    private let summaryMaxTokens: Int
    private var cache: [String: [String]] = [:]

    /// - Parameters:
    ///   - tokensPerSecond: emission rate, tokens/s.
    ///   - summaryMaxTokens: `max_tokens` cap in summary mode (default 400).
    public init(tokensPerSecond: Double, summaryMaxTokens: Int = 400) {
        self.tokensPerSecond = tokensPerSecond
        self.summaryMaxTokens = summaryMaxTokens
    }

    /// - Throws: `APIError` 400 `invalid_request` for a model other than `simulated`, `simulated-ar`, `simulated-tools`,
    ///   `simulated-bench`, `simulated-bench-parts`.
    public func prepare(_ request: ChatRequest) throws -> UpstreamPlan {
        let model = request.model ?? SimulatedDocuments.englishModel
        let rate = tokensPerSecond
        if model == SimulatedDocuments.benchModel {
            return UpstreamPlan { loop in BenchUpstream.make(maxTokens: request.maxTokens, tokensPerSecond: rate, loop: loop) }
        }
        if model == SimulatedDocuments.benchPartsModel {
            return UpstreamPlan { loop in BenchPartsAnswer.make(maxTokens: request.maxTokens, tokensPerSecond: rate, loop: loop) }
        }
        if model == SimulatedAgentAnswer.model {
            return agentAnswer(request, after: 0, promptTokens: request.estimatedPromptTokens)
        }
        let (tokens, maxTokens) = try document(for: request, model: model)
        // The relay's documented estimate (docs/PROTOCOL.md §9), so budgets settle exactly.
        let prompt = request.estimatedPromptTokens
        return UpstreamPlan { loop in
            SimulatedUpstream(tokens: tokens, maxTokens: maxTokens, promptTokens: prompt, tokensPerSecond: rate, loop: loop)
        }
    }

    /// The built-in agent answer (`SimulatedAgentAnswer`) from event `first` on, cut at the
    /// request's `max_tokens` (summary mode's cap applied) with `finish_reason: "length"`.
    private func agentAnswer(_ request: ChatRequest, after first: Int, promptTokens: Int) -> UpstreamPlan {
        var maxTokens = request.maxTokens
        if request.mode == .summary { maxTokens = min(maxTokens ?? summaryMaxTokens, summaryMaxTokens) }
        let all = SimulatedAgentAnswer.events
        let end = SimulatedAgentAnswer.count(maxTokens: maxTokens)
        let rest = first < end ? Array(all[first..<end]) : []
        let finish = end < all.count ? "length" : "stop"
        let before = SimulatedAgentAnswer.tokens(inFirst: first)
        let rate = tokensPerSecond
        return UpstreamPlan { loop in
            SimulatedUpstream(count: rest.count, finishReason: finish, promptTokens: promptTokens, tokensPerSecond: rate, loop: loop,
                              tokensIn: { SimulatedAgentAnswer.tokens(inFirst: first + $0) - before }) { i, _ in rest[i] }
        }
    }

    /// The model's document as tokens (tokenized once, cached) and the request's
    /// `max_tokens` with summary mode's cap applied.
    /// - Throws: `APIError` 400 `invalid_request` for a model without a document.
    private func document(for request: ChatRequest, model: String) throws -> (tokens: [String], maxTokens: Int?) {
        guard let doc = SimulatedDocuments.document(forModel: model) else {
            throw APIError.invalidRequest("unknown model \"\(model)\" (the simulated upstream serves simulated, simulated-ar, simulated-tools)")
        }
        let tokens: [String]
        if let t = cache[model] {
            tokens = t
        } else {
            tokens = SimulatedTokenizer.tokens(doc)
            cache[model] = tokens
        }
        var maxTokens = request.maxTokens
        if request.mode == .summary { maxTokens = min(maxTokens ?? summaryMaxTokens, summaryMaxTokens) }
        return (tokens, maxTokens)
    }

    /// Continues an answer from the next token exactly (docs/UPSTREAMS.md): the document's
    /// tokens after the first `soFar.completionTokens`, up to the same `max_tokens` (summary
    /// mode's cap included), so the continued answer is byte-identical to an uninterrupted
    /// one. `usage.prompt_tokens` is the relay's estimate of the re-sent prompt (the
    /// messages plus the text so far as an assistant message, docs/PROTOCOL.md §9).
    /// - Throws: `ContinuationUnsupported` when `soFar.text` is not the document's first
    ///   `soFar.completionTokens` tokens, or for `simulated-bench` and `simulated-bench-parts`; `APIError` as `prepare`.
    public func prepareContinuation(_ request: ChatRequest, soFar: AnswerSoFar) throws -> UpstreamPlan {
        let model = request.model ?? SimulatedDocuments.englishModel
        if model == SimulatedDocuments.benchModel || model == SimulatedDocuments.benchPartsModel {
            throw ContinuationUnsupported(reason: "the bench upstream does not continue answers")
        }
        if model == SimulatedAgentAnswer.model {
            // Event for event: the stored events must be the answer's first ones.
            let k = soFar.events.count
            let all = SimulatedAgentAnswer.events
            guard k <= all.count, Array(all[0..<k]) == soFar.events,
                  SimulatedAgentAnswer.tokens(inFirst: k) == soFar.completionTokens else {
                throw ContinuationUnsupported(reason: "the events so far are not the first \(k) of \(model)")
            }
            let prompt = request.estimatedPromptTokens(continuing: soFar.text)
            return agentAnswer(request, after: k, promptTokens: prompt)
        }
        let (tokens, maxTokens) = try document(for: request, model: model)
        let cap = min(tokens.count, maxTokens ?? Int.max)
        let k = soFar.completionTokens
        guard k >= 0, k <= cap, tokens[0..<k].joined() == soFar.text else {
            throw ContinuationUnsupported(reason: "the text so far is not the first \(k) tokens of \(model)")
        }
        let rest = Array(tokens[k..<cap])
        let finish = cap < tokens.count ? "length" : "stop"
        let prompt = request.estimatedPromptTokens(continuing: soFar.text)
        let rate = tokensPerSecond
        return UpstreamPlan { loop in
            SimulatedUpstream(count: rest.count, finishReason: finish, promptTokens: prompt, tokensPerSecond: rate, loop: loop) { rest[$0] }
        }
    }
}
