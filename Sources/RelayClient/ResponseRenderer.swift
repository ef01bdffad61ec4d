import Foundation
import RelayCore

/// One UI update of an answer: newly released text and everything the UI needs to
/// draw it. Emitted only when something visible changed.
public struct RenderUpdate: Sendable, Equatable {
    /// Text released by this update (append it to what is on screen).
    public var appended: String
    /// All text released so far (`appended` included).
    public var text: String
    /// Direction and line height; decided before the first text, then fixed.
    /// `nil` only on updates that carry no text yet (e.g. an empty completion).
    public var layout: TextLayout?
    /// "Drafting clause 3 of 7…" progress on long drafts, else `nil`.
    public var progress: DraftProgress.Snapshot?
    /// `true` while the typing indicator should show (nothing rendered yet).
    public var showsTypingIndicator: Bool
    /// Set on the last update of an answer: how it ended (for haptics and buttons).
    public var completion: Completion?
    /// Why the text was released, when it was.
    public var reason: RenderBuffer.Reason?
    /// `true` only on the last update of an answer the relay cut at the caller's token
    /// budget (`done` with `finish_reason: "length"` and `"budget_limited": true`,
    /// `conformance/CLIENT_RULES.md` "Budget-limited answers"): the app shows "Answer
    /// shortened: this month's token budget is used up".
    public var budgetLimited: Bool

    public init(appended: String, text: String, layout: TextLayout?, progress: DraftProgress.Snapshot?,
                showsTypingIndicator: Bool, completion: Completion?, reason: RenderBuffer.Reason?,
                budgetLimited: Bool = false) {
        self.appended = appended
        self.text = text
        self.layout = layout
        self.progress = progress
        self.showsTypingIndicator = showsTypingIndicator
        self.completion = completion
        self.reason = reason
        self.budgetLimited = budgetLimited
    }
}

/// Turns the events of one answer into `RenderUpdate`s: the render buffer, direction
/// detection, draft progress, typing indicator and completion together. Pure: times are
/// ms arguments; the stream calls `tick(now:)` every ≤ 50 ms.
///
/// Text only: a typed part (`StreamEvent.part`, docs/PROTOCOL.md §5.5) releases nothing,
/// flushes nothing, is not sampled for the direction and does not count toward the draft
/// progress or the first token; the stream hands parts to the app through `AnswerParts`.
public struct ResponseRenderer: Sendable {
    /// All text released so far.
    public private(set) var text = ""
    /// Delta events received (one per token on the relay's wire). Text only: parts are
    /// not counted here (see `partTokensReceived`).
    public private(set) var tokensReceived = 0
    /// Reasoning and tool-call argument pieces received (`AnswerPart.countsAsToken`, one
    /// token each): generated tokens that are not text (docs/PROTOCOL.md §5.5). They are in
    /// a `done`'s `completion_tokens` but not in the text, so the draft progress leaves them
    /// out of the usage it reads. Units: tokens.
    public private(set) var partTokensReceived = 0
    /// When the first delta arrived, ms.
    public private(set) var firstTokenAt: Int64?
    /// How the answer ended, once it has.
    public private(set) var completion: Completion?
    /// Usage reported by `done`.
    public private(set) var usage: Usage?
    /// `true` once a `done` said the answer was cut by the token budget
    /// (`"budget_limited": true`, see `BudgetLimitedFlag`).
    public private(set) var budgetLimited = false
    /// The text layout, once decided.
    public var layout: TextLayout? { direction.layout }
    /// `true` while the app is in the background (updates paused).
    public var isBackground: Bool { buffer.isBackground }
    /// The typing indicator model.
    public private(set) var typing: TypingIndicator

    private var buffer: RenderBuffer
    private var direction = DirectionDetector()
    private var progress: DraftProgress
    /// Text the buffer released before the direction was decided: nothing is shown
    /// before the decision (`conformance/CLIENT_RULES.md`), so it waits here.
    private var held: RenderBuffer.Flush?

    /// - Parameters:
    ///   - now: when the request was sent, ms.
    ///   - expectedSections: the number of clauses when the app knows it.
    public init(now: Int64, expectedSections: Int? = nil) {
        buffer = RenderBuffer(now: now)
        typing = TypingIndicator(startedAt: now)
        progress = DraftProgress(expectedTotal: expectedSections)
    }

    /// An event given as the JSON text of its SSE `data:` line (docs/PROTOCOL.md §5): decoded with
    /// `StreamEvent(jsonData:)`, and a `done`'s `budget_limited` with `BudgetLimitedFlag`.
    /// - Throws: `StreamEventDecodingError` when it is not a relay event.
    public mutating func receive(json: Data, now: Int64) throws -> RenderUpdate? {
        let event = try StreamEvent(jsonData: json)
        return receive(event, budgetLimited: BudgetLimitedFlag.isSet(inEventJSON: json), now: now)
    }

    /// An event of the stream. Returns the update it causes, if any.
    /// - Parameter budgetLimited: the `done` event's `budget_limited` (ignored for other
    ///   events); the final update then carries `budgetLimited`.
    public mutating func receive(_ event: StreamEvent, budgetLimited: Bool = false, now: Int64) -> RenderUpdate? {
        guard completion == nil else { return nil }
        switch event {
        case .delta(let s):
            tokensReceived += 1
            if firstTokenAt == nil { firstTokenAt = now }
            direction.feed(s)
            progress.append(s)
            return release(buffer.append(s, now: now), now: now)
        case .done(let reason, let u, _):
            usage = u
            self.budgetLimited = budgetLimited
            return finish(reason == .cancelled ? .stopped : .finished(finishReason: reason.rawValue), now: now)
        case .error(let status, let code, let message):
            return finish(.failed(status: status, code: code, message: message), now: now)
        case .part(let p):
            if p.countsAsToken { partTokensReceived += 1 }
            return nil
        }
    }

    /// The 50 ms timer.
    public mutating func tick(now: Int64) -> RenderUpdate? {
        guard completion == nil else { return nil }
        return release(buffer.tick(now: now), now: now)
    }

    /// Ends the answer (`done`, `error`, stop, timeout, needsResume): releases all
    /// buffered text (unless in the background) and carries `completion`.
    public mutating func finish(_ c: Completion, now: Int64) -> RenderUpdate? {
        guard completion == nil else { return nil }
        completion = c
        progress.finish()
        direction.decideNow()
        if let u = release(buffer.finish(now: now), now: now) { return u }
        if buffer.isBackground { return nil }
        return RenderUpdate(appended: "", text: text, layout: direction.layout, progress: currentProgress(),
                            showsTypingIndicator: false, completion: c, reason: nil,
                                budgetLimited: budgetLimited)
    }

    /// The app went to the background: updates pause.
    public mutating func enterBackground() { buffer.enterBackground() }

    /// The app came back: everything buffered is replayed in one update.
    public mutating func enterForeground(now: Int64) -> RenderUpdate? {
        guard buffer.isBackground else { return nil }
        if let u = release(buffer.enterForeground(now: now), now: now) { return u }
        if let c = completion {
            return RenderUpdate(appended: "", text: text, layout: direction.layout, progress: currentProgress(),
                                showsTypingIndicator: false, completion: c, reason: nil,
                                budgetLimited: budgetLimited)
        }
        return nil
    }

    /// The progress for the text's tokens: the deltas received, or the `done`'s completion
    /// tokens less the part pieces when that is more (a coalesced delta stands for several
    /// tokens, docs/PROTOCOL.md §4.3).
    private func currentProgress() -> DraftProgress.Snapshot? {
        progress.snapshot(tokensReceived: max(tokensReceived, (usage?.completionTokens ?? 0) - partTokensReceived))
    }

    /// Shows `f` (and text held before the decision) once the direction is decided and
    /// the app is in the foreground; holds it otherwise.
    private mutating func release(_ f: RenderBuffer.Flush?, now: Int64) -> RenderUpdate? {
        if let f {
            held = RenderBuffer.Flush(text: (held?.text ?? "") + f.text, reason: f.reason)
        }
        guard direction.layout != nil, !buffer.isBackground, let h = held, !h.text.isEmpty else { return nil }
        held = nil
        return update(for: h, now: now)
    }

    private mutating func update(for f: RenderBuffer.Flush, now: Int64) -> RenderUpdate {
        let layout = direction.decideNow()
        text += f.text
        typing.textRendered(now: now)
        let done = buffer.isFinished ? completion : nil
        return RenderUpdate(appended: f.text, text: text, layout: layout, progress: currentProgress(),
                            showsTypingIndicator: false, completion: done, reason: f.reason,
                            budgetLimited: done != nil && budgetLimited)
    }
}
