import RelayCore

/// The connection rules of one chat response as a pure state machine (issue 5 item 3,
/// DESIGN §8). The networking layer reports what happened and performs the returned
/// `Action`; every time is an argument in ms, so tests drive it with a virtual clock.
///
/// * A drop (network error, or the body ending without `done`/`error`) waits
///   `backoffMs` — 1 s, or 3 s when `NetworkAdvice` saw RTT > 500 ms — then reconnects
///   with `Last-Event-ID`. At most 3 reconnections in a row without an event in between;
///   the next drop ends in `needsResume` (a manual Resume re-sends the whole request).
/// * No resume once the stream has been idle (no event) for more than 5 minutes: the
///   relay keeps a stream's events for 300 s (DESIGN §3), so it ends in `needsResume`.
/// * 60 s without any event (and no `done`) is the hard timeout: the answer is
///   complete as it stands and a retry is offered (`timedOut`). The clock starts when
///   the request is sent and restarts at every event.
/// * A non-200 response or a content type other than `text/event-stream` fails at once,
///   without reconnecting. `done` and `error` events are terminal.
/// * `stop()` ends the response as `stopped`; a connection loss after it is ignored —
///   a user stop is never a network failure.
public struct ReconnectPolicy: Sendable, Equatable {
    /// Where the response stands.
    public enum State: Sendable, Equatable {
        /// Not started.
        case idle
        /// A request is in flight; `attempt` 0 is the original request, 1…3 reconnections.
        case connecting(attempt: Int)
        /// A 200 `text/event-stream` response is being read.
        case streaming
        /// Waiting until `until` (ms) before reconnection `attempt`.
        case waiting(attempt: Int, until: Int64)
        /// Over; nothing more will be sent or received.
        case ended(Completion)
    }

    /// What the networking layer must do next.
    public enum Action: Sendable, Equatable {
        /// Nothing.
        case none
        /// Send the whole request (`POST /api/chat/stream`).
        case sendRequest
        /// Reconnect: `GET /api/chat/stream/{requestId}` with `Last-Event-ID: lastEventId`
        /// (when no event was received yet, re-send the `POST` with the same
        /// `X-Request-Id`, which resumes the stream the relay may already have started).
        case reconnect(lastEventId: UInt64)
        /// Call `tick(now:)` at or after `until` (ms).
        case wait(until: Int64)
        /// Cancel the connection, send `DELETE /api/chat/stream/{requestId}`, then finish.
        case stop
        /// Cancel any open connection; the response ended with this completion.
        case finish(Completion)
    }

    /// Reconnections in a row (without an event between them) before `needsResume`.
    public static let maxAttempts = 3
    /// Idle time after which a stream can no longer be resumed, ms (5 min).
    public static let idleLimitMs: Int64 = 300_000
    /// Time without an event (and no `done`) after which the answer is complete, ms.
    public static let hardTimeoutMs: Int64 = 60_000

    /// The current state.
    public private(set) var state: State = .idle
    /// The `seq` of the last event received (0 for none), kept in memory only.
    public private(set) var lastEventId: UInt64 = 0
    /// Reconnections and resumes made so far (for telemetry).
    public private(set) var reconnections = 0
    /// Wait before each reconnection, ms; set from `NetworkAdvice.reconnectBackoffMs`.
    public var backoffMs: Int64

    private var failuresInARow = 0
    private var lastEventAt: Int64 = 0

    public init(backoffMs: Int64 = NetworkAdvice.normalBackoffMs) {
        self.backoffMs = backoffMs
    }

    /// `true` once the response has ended.
    public var isEnded: Bool {
        if case .ended = state { return true }
        return false
    }

    /// When the caller must next call `tick(now:)`: the reconnect time while waiting,
    /// else the hard-timeout deadline; `nil` when idle or ended.
    public var nextDeadline: Int64? {
        switch state {
        case .idle, .ended: return nil
        case .waiting(_, let until): return min(until, lastEventAt + Self.hardTimeoutMs)
        case .connecting, .streaming: return lastEventAt + Self.hardTimeoutMs
        }
    }

    /// Starts the response: send the request.
    public mutating func start(now: Int64) -> Action {
        guard case .idle = state else { return .none }
        return begin(now: now)
    }

    /// The manual Resume / Retry after `needsResume`, a timeout or a retryable failure:
    /// re-send the whole request (the answer starts over). `.none` in other states.
    public mutating func resume(now: Int64) -> Action {
        guard case .ended(let c) = state, c.offersRetry else { return .none }
        reconnections += 1
        return begin(now: now)
    }

    private mutating func begin(now: Int64) -> Action {
        state = .connecting(attempt: 0)
        lastEventId = 0
        lastEventAt = now
        failuresInARow = 0
        return .sendRequest
    }

    /// Response headers arrived. `error` is the decoded `{"error":{…}}` body of a
    /// non-200 response, when there is one.
    public mutating func responseOpened(status: Int, contentType: String?, error: APIError? = nil, now: Int64) -> Action {
        guard case .connecting = state else { return .none }
        guard status == 200 else {
            let e = error ?? APIError(status: status, code: "http_\(status)", message: "HTTP \(status)")
            return end(.failed(status: status, code: e.code, message: e.message))
        }
        guard Self.isEventStream(contentType) else {
            return end(.failed(status: status, code: "bad_content_type",
                               message: "expected text/event-stream, got \(contentType ?? "none")"))
        }
        state = .streaming
        return .none
    }

    /// An event arrived with its SSE `id` (`seq`) and, when decodable, its content.
    public mutating func eventReceived(seq: UInt64?, event: StreamEvent?, now: Int64) -> Action {
        guard case .streaming = state else { return .none }
        if let seq { lastEventId = seq }
        lastEventAt = now
        failuresInARow = 0
        switch event {
        case .done(let reason, _)?:
            return end(reason == "cancelled" ? .stopped : .finished(finishReason: reason))
        case .error(let status, let code, let message)?:
            return end(.failed(status: status, code: code, message: message))
        case .delta?, nil:
            return .none
        }
    }

    /// The connection failed or its body ended without `done`/`error`.
    public mutating func connectionLost(now: Int64) -> Action {
        switch state {
        case .connecting, .streaming:
            if now - lastEventAt > Self.idleLimitMs || failuresInARow >= Self.maxAttempts {
                return end(.needsResume)
            }
            failuresInARow += 1
            let until = now + backoffMs
            state = .waiting(attempt: failuresInARow, until: until)
            return .wait(until: until)
        case .idle, .waiting, .ended:
            return .none
        }
    }

    /// Time passed: reconnects when the backoff is over, ends on the hard timeout.
    public mutating func tick(now: Int64) -> Action {
        switch state {
        case .waiting(let attempt, let until):
            if now - lastEventAt > Self.idleLimitMs { return end(.needsResume) }
            if now - lastEventAt >= Self.hardTimeoutMs { return end(.timedOut) }
            guard now >= until else { return .none }
            state = .connecting(attempt: attempt)
            reconnections += 1
            return .reconnect(lastEventId: lastEventId)
        case .connecting, .streaming:
            if now - lastEventAt >= Self.hardTimeoutMs { return end(.timedOut) }
            return .none
        case .idle, .ended:
            return .none
        }
    }

    /// The user pressed Stop: cancel and `DELETE`. `.none` when already ended.
    public mutating func stop() -> Action {
        switch state {
        case .ended: return .none
        case .idle:
            state = .ended(.stopped)
            return .finish(.stopped)
        default:
            state = .ended(.stopped)
            return .stop
        }
    }

    private mutating func end(_ c: Completion) -> Action {
        state = .ended(c)
        return .finish(c)
    }

    /// `true` for `text/event-stream`, parameters and case ignored (RFC 9110 §8.3.1).
    public static func isEventStream(_ contentType: String?) -> Bool {
        guard let ct = contentType else { return false }
        let media = ct.split(separator: ";", maxSplits: 1).first.map(String.init) ?? ""
        return media.trimming(" \t").lowercased() == "text/event-stream"
    }
}
