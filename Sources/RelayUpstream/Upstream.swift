import RelayCore
import RelayLoop

/// One running upstream call (one generation's source of events), confined to its
/// worker's loop thread.
///
/// The adapter maps its upstream format to `delta` / `done` / `error` events
/// (docs/UPSTREAMS.md) and hands them to the `emit` closure given to `start`, in order. It
/// emits exactly one terminal event (`done` or `error`) last, unless `cancel()` is
/// called first; after `cancel()` it emits nothing more.
///
/// Lifetime: the caller's `emit` may hold the caller strongly (the generation
/// holds its upstream: a cycle). An adapter releases `emit` when it emits its terminal
/// event and in `cancel()`, which breaks it; `cancel()` may be called again after the
/// end, and then does nothing but report the usage.
public protocol Upstream: AnyObject {
    /// Starts the call; `emit` runs on the loop thread for each event.
    func start(emit: @escaping (StreamEvent) -> Void)
    /// Stops at once (aborting any transfer) and returns the usage so far
    /// (completion tokens counted from the deltas emitted when the upstream did not
    /// report them). Emits nothing.
    func cancel() -> Usage
}

/// Creates the `Upstream` for a request. One factory per worker (it may hold
/// per-worker resources such as a libcurl multi handle).
///
/// Two phases, so the relay takes no upstream resources for a request it refuses:
/// `prepare` checks the request (before admission), `UpstreamPlan.make` creates the
/// call (only after the request was admitted).
public protocol UpstreamFactory: AnyObject {
    /// Checks `request` and fixes everything its call needs; takes no resources.
    /// - Throws: `APIError` (400 `invalid_request`) for a model this upstream does not serve.
    func prepare(_ request: ChatRequest) throws -> UpstreamPlan
    /// Fixes the call that continues `soFar` (see the extension's default, which refuses).
    /// - Throws: `ContinuationUnsupported`, or `APIError` as `prepare`.
    func prepareContinuation(_ request: ChatRequest, soFar: AnswerSoFar) throws -> UpstreamPlan
}

/// A checked request, ready to become an `Upstream` on a worker loop.
public struct UpstreamPlan {
    private let build: (EventLoop) throws -> Upstream
    /// - Parameter build: creates the call on the given loop (called at most once).
    public init(_ build: @escaping (EventLoop) throws -> Upstream) { self.build = build }
    /// Creates the upstream call (not started).
    /// - Throws: `APIError` 500 `internal_error` when the transport cannot be set up.
    public func make(loop: EventLoop) throws -> Upstream { try build(loop) }
}

/// The answer so far of a generation whose owner was lost, for a continuation
/// (docs/PROTOCOL.md, "Takeover"): the new call must produce only what follows it.
public struct AnswerSoFar: Sendable, Equatable {
    /// Every event stored so far, seq 1 first: deltas and parts (`AnswerPart`), no
    /// terminal event.
    public let events: [StreamEvent]
    /// The text of every `delta` stored so far, concatenated (UTF-8; parts left out).
    public let text: String
    /// Completion tokens already generated (the deltas, reasoning and argument pieces
    /// stored so far, or the upstream's count when it reported one), tokens.
    public let completionTokens: Int
    /// Whether any stored event is a part (reasoning, a tool call, a source, data).
    public var hasParts: Bool { events.contains { if case .part = $0 { return true } else { return false } } }

    /// - Parameters:
    ///   - events: the stored events so far, in seq order.
    ///   - completionTokens: tokens generated so far (≥ 0).
    public init(events: [StreamEvent], completionTokens: Int) {
        self.events = events
        self.text = events.reduce(into: "") { s, e in if case .delta(let t) = e { s += t } }
        self.completionTokens = completionTokens
    }

    /// An answer so far of text alone: one `delta` holding `text`.
    public init(text: String, completionTokens: Int) {
        self.events = text.isEmpty ? [] : [.delta(text)]
        self.text = text
        self.completionTokens = completionTokens
    }
}

/// Thrown by `UpstreamFactory.prepareContinuation` when this upstream cannot continue an
/// answer (it does not honour a final assistant message, or is configured not to): the
/// stream then ends with `upstream_lost`, as when no takeover happens.
public struct ContinuationUnsupported: Error, Sendable, Equatable {
    /// Why, for the log (e.g. "upstream openai: continuation off").
    public let reason: String
    public init(reason: String) { self.reason = reason }
}

extension UpstreamFactory {
    /// Checks `request` for a continuation of `soFar` and fixes the call that produces only
    /// the rest of the answer, on the same model and within the same granted `maxTokens`
    /// (the remaining `maxTokens - soFar.completionTokens`). Takes no resources.
    ///
    /// The default refuses: an upstream continues only where it says how.
    /// - Throws: `ContinuationUnsupported` when this upstream cannot continue;
    ///   `APIError` as `prepare` does.
    public func prepareContinuation(_ request: ChatRequest, soFar: AnswerSoFar) throws -> UpstreamPlan {
        throw ContinuationUnsupported(reason: "upstream \(type(of: self)) does not continue answers")
    }

    /// `prepare` then `make` in one step (tools and tests).
    public func makeUpstream(for request: ChatRequest, loop: EventLoop) throws -> Upstream {
        try prepare(request).make(loop: loop)
    }
}
