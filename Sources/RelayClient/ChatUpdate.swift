import Foundation
import RelayCore

/// The state of the connection behind a `RelayStream`.
public enum ConnectionStatus: Sendable, Equatable {
    /// Sending the request (`POST`) to `url`.
    case connecting(url: URL)
    /// Receiving the event stream.
    case streaming
    /// The connection dropped; reconnection `attempt` (1–3) follows in `delayMs`.
    case waitingToReconnect(attempt: Int, delayMs: Int64)
    /// Reconnecting to `url`, resuming after event `lastEventId`.
    case reconnecting(attempt: Int, url: URL, lastEventId: UInt64)
    /// The client reads over long-poll from now on (`reason`: the buffering proxy it
    /// detected; `nil` when `readMode` is `.longPoll`); this answer goes on after event
    /// `lastEventId`.
    case longPoll(reason: ProxyBufferingDetector.Reason?, lastEventId: UInt64)
}

/// One element of a `RelayStream`'s `AsyncSequence`, in order of occurrence.
public enum ChatUpdate: Sendable, Equatable {
    /// New text and everything the UI needs to draw it; the last one carries the
    /// `completion`.
    case render(RenderUpdate)
    /// A typed part arrived (reasoning, a tool call's start, argument piece or end, a
    /// source, app data; docs/PROTOCOL.md §5.5), with the answer's parts so far. Sent as
    /// each part event arrives, in seq order, once per part across resumes; never part of
    /// the text, so never buffered or paused like `render`.
    case parts(PartsUpdate)
    /// The connection changed state.
    case connection(ConnectionStatus)
    /// Advice from the network conditions the app reported (first, when it says anything).
    case advice(NetworkAdvice)
    /// The budget after this answer's `done` usage (when the client knows the budget).
    case budget(BudgetState)
    /// The telemetry record of the answer; always the last element.
    case telemetry(TelemetryRecord)
}
