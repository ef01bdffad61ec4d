import RelayCore
import RelayLoop

/// An `Upstream` reading a streaming HTTP API answer (`text/event-stream`) through libcurl,
/// parsed incrementally by `RelayCore.SSEParser` and mapped by a `Dialect` (OpenAI, Anthropic).
///
/// Guarantees (an upstream failure never leaves a client hanging: docs/UPSTREAMS.md): after
/// `start`, the adapter emits deltas and parts (reasoning, tool calls, sources: docs/PROTOCOL.md
/// §5.5, mapped by the dialect), then exactly one terminal event, unless `cancel()` comes first:
/// * `done` on the format's end marker (the rest of the response is drained so the
///   connection can be reused); also when the stream closes after a finish reason was seen
///   but without the end marker (lenient with servers that omit `[DONE]`);
/// * `error(502, "upstream_error", …)` on: connect failure, a non-2xx answer (`upstream 429
///   rate_limit_error: …`), a 2xx answer that is not `text/event-stream` (HTML, JSON),
///   a chunk that is not JSON, the dialect's error shape, a tool call against the rules of
///   §5.5 (`ToolCallAssembler`: arguments that are not JSON, over 1 MiB, a call never started
///   or never ended), a line longer than `maxLineBytes`, more than `maxEventBytes` without a
///   complete event, or a close before the end;
/// * `error(504, "upstream_timeout", …)` when no byte arrives for `idleTimeoutMs`, or the
///   connect times out.
/// Each failure aborts the transfer (its connection is closed).
///
/// Upstream text never kills an answer (docs/UPSTREAMS.md): invalid UTF-8 becomes U+FFFD (in
/// `SSEParser` and `LenientJSON`); an escaped surrogate half at the end of one delta is paired
/// with a half at the start of the next (`SurrogateJoiner`), and a half that stays unpaired
/// becomes U+FFFD (a high half still held at the end is emitted as a U+FFFD delta before the
/// terminal event); reasoning pieces are joined the same way, apart from the text, and so are
/// each tool call's argument pieces; a chunk that is valid JSON of an undocumented shape is
/// skipped. Both are counted in `skippedChunks` / `replacedSurrogateHalves` and in the
/// factory's shared `UpstreamTextCounters`.
///
/// A continuation (made with a `ContinuationSeam`) emits only what follows the answer so
/// far: leading text that repeats the whitespace held back from the prefill is dropped, and
/// a refusal of the continuation's request (`ContinuationRefusal`: 400, 422) ends with
/// `error(503, "upstream_lost", …)` instead of `upstream_error`.
final class SSEStreamUpstream<Dialect: UpstreamDialect>: Upstream, UpstreamTransferDelegate {
    private enum Phase { case waiting, streaming, errorBody(status: Int) }

    private let request: UpstreamTransfer.Request
    private let multi: CurlMulti
    private let config: HTTPUpstreamConfig
    private var dialect: Dialect
    private let estimatedPromptTokens: Int
    private let counters: UpstreamTextCounters
    private var joiner = SurrogateJoiner()
    /// Joins the reasoning pieces' surrogate halves, apart from the text's.
    private var reasoningJoiner = SurrogateJoiner()
    /// For a continuation: drops the whitespace the text so far already ends with
    /// (`ContinuationSeam`); `nil` for a first call.
    private var seam: ContinuationSeam?
    private var emit: ((StreamEvent) -> Void)?
    private var transfer: UpstreamTransfer?
    private var idleTimer: LoopTimer?
    /// Reports a failure to start on the next loop turn.
    private var failure: LoopTimer?
    private var parser: SSEParser
    private var phase = Phase.waiting
    private var errorBody: [UInt8] = []
    private var bytesSinceEvent = 0
    private var countedCompletionTokens = 0
    /// The dialect's replaced argument halves already added to `counters`.
    private var countedArgumentHalves = 0
    /// Body pieces delivered by libcurl so far (how split the stream arrived).
    private(set) var bodyPieces = 0
    /// Chunks of this stream skipped as valid JSON of an undocumented shape.
    private(set) var skippedChunks = 0
    /// Unpaired surrogate halves of this stream replaced by U+FFFD (text, reasoning and
    /// tool-call arguments).
    var replacedSurrogateHalves: Int {
        joiner.replacedHalves + reasoningJoiner.replacedHalves + dialect.replacedArgumentHalves
    }

    init(request: UpstreamTransfer.Request, multi: CurlMulti, config: HTTPUpstreamConfig,
         dialect: Dialect, estimatedPromptTokens: Int, counters: UpstreamTextCounters,
         seam: ContinuationSeam? = nil) {
        self.counters = counters
        self.seam = seam
        self.request = request
        self.multi = multi
        self.config = config
        self.dialect = dialect
        self.estimatedPromptTokens = estimatedPromptTokens
        parser = SSEParser(maxLineBytes: config.maxLineBytes)
    }

    deinit {
        idleTimer?.cancel()
        failure?.cancel()
        transfer?.abort()
    }

    // MARK: Upstream

    func start(emit: @escaping (StreamEvent) -> Void) {
        guard self.emit == nil, transfer == nil else { return }
        self.emit = emit
        idleTimer = LoopTimer(loop: multi.loop) { [unowned self] in
            self.fail(.upstreamTimeout, "no data from the upstream for \(self.config.idleTimeoutMs) ms")
        }
        do {
            let t = try UpstreamTransfer(request: request, multi: multi)
            t.delegate = self
            try t.start()
            transfer = t
            armIdle()
        } catch {
            // Never emit from inside start(): report on the next loop turn.
            failure = LoopTimer(loop: multi.loop) { [unowned self] in
                self.fail(.upstreamError, "cannot start the upstream request: \(error)")
            }
            failure?.schedule(afterMs: 0)
        }
    }

    func cancel() -> Usage {
        let u = partialUsage
        emit = nil
        stopTransfer(drain: false)
        return u
    }

    /// Usage reported by the upstream, completed with estimates where it reported nothing:
    /// prompt tokens estimated from the request's text, completion tokens counted from the
    /// emitted deltas, reasoning and argument pieces.
    var usage: Usage {
        Usage(promptTokens: dialect.promptTokens ?? estimatedPromptTokens,
              completionTokens: dialect.completionTokens ?? countedCompletionTokens)
    }

    /// Usage of a stream stopped midway: as `usage`, but completion tokens are at least the
    /// count of the deltas and pieces emitted (a count reported at the start, such as Anthropic's
    /// `message_start` `output_tokens: 1`, is not the final one).
    var partialUsage: Usage {
        Usage(promptTokens: dialect.promptTokens ?? estimatedPromptTokens,
              completionTokens: max(dialect.completionTokens ?? 0, countedCompletionTokens))
    }

    // MARK: UpstreamTransferDelegate

    func transfer(_ t: UpstreamTransfer, didReceive bytes: UnsafeRawBufferPointer) -> Bool {
        guard emit != nil else { return false }
        bodyPieces += 1
        armIdle()
        if case .waiting = phase {
            let status = t.responseStatus
            if !(200..<300).contains(status) {
                phase = .errorBody(status: status)
            } else if let ct = t.contentType, !ct.lowercased().hasPrefix("text/event-stream") {
                let what = UpstreamErrorBody.isHTML(contentType: ct, text: "") ? "an HTML page" : "\(ct)"
                fail(.upstreamError, "upstream \(status) answered with \(what) instead of text/event-stream")
                return false
            } else {
                phase = .streaming
            }
        }
        switch phase {
        case .errorBody(let status):
            let room = config.maxErrorBodyBytes - errorBody.count
            errorBody.append(contentsOf: bytes.prefix(max(0, room)))
            if bytes.count > room {
                failWithStatus(status, contentType: t.contentType)
                return false
            }
            return true
        case .streaming:
            return consume(bytes)
        case .waiting:
            return false
        }
    }

    func transfer(_ t: UpstreamTransfer, didCompleteWith completion: UpstreamTransfer.Completion) {
        guard emit != nil else { return }
        transfer = nil
        switch (completion, phase) {
        case (_, .errorBody(let status)):
            failWithStatus(status, contentType: t.contentType)
        case (.finished(let status), .waiting):
            if (200..<300).contains(status) {
                fail(.upstreamError, "upstream \(status) answered with an empty body")
            } else {
                failWithStatus(status, contentType: t.contentType)
            }
        case (.failed(let code, let message), .waiting):
            if code == 28 {  // CURLE_OPERATION_TIMEDOUT: the connect timeout
                fail(.upstreamTimeout, "upstream connect timed out: \(message)")
            } else {
                fail(.upstreamError, "upstream connection failed: \(message)")
            }
        case (.finished, .streaming), (.failed, .streaming):
            parser.finish()
            if let reason = dialect.finishReason {
                guard apply(dialect.streamEnded()), emit != nil else { return }
                finish(.done(finishReason: FinishReason(rawValue: reason), usage: usage), drain: false)
            } else {
                var why = "upstream closed the stream before its end"
                if case .failed(_, let m) = completion { why += " (\(m))" }
                fail(.upstreamError, why)
            }
        }
    }

    // MARK: stream body

    private func consume(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let items: [SSEParser.Item]
        do {
            items = try parser.feed(bytes)
        } catch {
            fail(.upstreamError, "upstream sent an SSE line longer than \(config.maxLineBytes) bytes")
            return false
        }
        if items.contains(where: { if case .event = $0 { return true } else { return false } }) {
            bytesSinceEvent = 0
        } else {
            bytesSinceEvent += bytes.count
            if bytesSinceEvent > config.maxEventBytes {
                fail(.upstreamError, "upstream sent more than \(config.maxEventBytes) bytes without completing an event")
                return false
            }
        }
        for item in items {
            guard emit != nil else { break }  // a terminal event was emitted, or cancel() was called
            guard case .event(let message) = item else { continue }  // comments: keep-alives
            let steps: [DialectStep]
            do {
                steps = try dialect.step(message)
            } catch {
                fail(.upstreamError, "malformed \(Dialect.name) stream chunk: \(error.reason)")
                return false
            }
            guard apply(steps) else { return false }
        }
        return true
    }

    /// Emits what `steps` mean, in order, until a terminal event. At `.end` the dialect's
    /// `streamEnded()` steps come first, then `done`.
    /// - Returns: `false` when the stream failed (the transfer is to be aborted).
    private func apply(_ steps: [DialectStep]) -> Bool {
        for step in steps {
            guard emit != nil else { return true }  // ended, or cancel() was called by a consumer
            switch step {
            case .delta(let units):
                emitText(joined(units.units))
            case .reasoning(let units):
                emitReasoning(joinedReasoning(units.units))
            case .part(let part):
                emitPart(part)
            case .skip:
                skippedChunks += 1
                counters.addSkippedChunk()
            case .end:
                guard apply(dialect.streamEnded()) else { return false }
                finish(.done(finishReason: dialect.finishReason.map(FinishReason.init(rawValue:)) ?? .stop, usage: usage), drain: true)
            case .fail(let why):
                fail(.upstreamError, why)
                return false
            }
        }
        return true
    }

    // MARK: ending

    private func armIdle() {
        idleTimer?.schedule(afterMs: UInt64(max(1, config.idleTimeoutMs)))
    }

    private func failWithStatus(_ status: Int, contentType: String?) {
        let why = UpstreamErrorBody.describe(status: status, body: errorBody, contentType: contentType)
        if seam != nil, ContinuationRefusal.isRefusal(status: status) {
            fail(.upstreamLost, "the upstream refused to continue the answer: \(why)")
        } else {
            fail(.upstreamError, why)
        }
    }

    private func fail(_ code: ErrorCode, _ message: String) {
        finish(APIError(code, message).asEvent, drain: false)
    }

    /// The text completed by the next delta's units (`nil`: the end of the stream), counting
    /// replaced halves.
    private func joined(_ units: [UInt16]?) -> String {
        let before = joiner.replacedHalves
        let text = units.map { joiner.append($0) } ?? joiner.finish()
        counters.addReplacedHalves(joiner.replacedHalves - before)
        return text
    }

    /// The reasoning completed by the next piece's units (`nil`: the end of the stream),
    /// joined apart from the text (docs/UPSTREAMS.md), counting replaced halves.
    private func joinedReasoning(_ units: [UInt16]?) -> String {
        let before = reasoningJoiner.replacedHalves
        let text = units.map { reasoningJoiner.append($0) } ?? reasoningJoiner.finish()
        counters.addReplacedHalves(reasoningJoiner.replacedHalves - before)
        return text
    }

    private func emitText(_ joinedText: String) {
        var text = joinedText
        if !text.isEmpty, seam != nil { text = seam!.pass(text) }
        guard let emit, !text.isEmpty else { return }
        countedCompletionTokens += max(1, SimulatedTokenizer.estimateTokens(text))
        emit(.delta(text))
    }

    private func emitReasoning(_ text: String) {
        guard !text.isEmpty else { return }
        emitPart(.reasoning(text))
    }

    /// Emits a part; reasoning and argument pieces count as completion tokens like a delta's
    /// text (docs/PROTOCOL.md §5.5: at least one each), for the usage estimated when the
    /// upstream reports none.
    private func emitPart(_ part: AnswerPart) {
        guard let emit else { return }
        switch part {
        case .reasoning(let text), .toolCallDelta(_, let text):
            countedCompletionTokens += max(1, SimulatedTokenizer.estimateTokens(text))
        default:
            break
        }
        let halves = dialect.replacedArgumentHalves
        counters.addReplacedHalves(halves - countedArgumentHalves)
        countedArgumentHalves = halves
        emit(.part(part))
    }

    /// Emits the terminal event once, after stopping the transfer (so nothing re-enters).
    /// A surrogate half still held by the joiner goes out first as a U+FFFD delta (unless the
    /// consumer cancels on it).
    private func finish(_ event: StreamEvent, drain: Bool) {
        guard emit != nil else { return }
        emitReasoning(joinedReasoning(nil))
        guard emit != nil else { return }
        emitText(joined(nil))
        guard let e = emit else { return }
        emit = nil
        stopTransfer(drain: drain)
        e(event)
    }

    private func stopTransfer(drain: Bool) {
        idleTimer?.cancel()
        failure?.cancel()
        if let t = transfer {
            transfer = nil
            t.delegate = nil
            if drain { t.drain() } else { t.abort() }
        }
    }
}
