import Foundation
import RelayCore

/// The connection rules of one chat response as a pure state machine
/// (`conformance/CLIENT_RULES.md` "Reconnect decisions"). The networking layer
/// reports what happened and performs the returned `Action`; every time is an argument
/// in ms and every random draw `r` in [0, 1) an argument too, so tests drive it with a
/// virtual clock and fixed values, and the waits below are computed here from `r`.
///
/// * A **drop** (network error, connection refused or reset, or the body ending without
///   `done`/`error`) waits, then reconnects with `Last-Event-ID` on the next base URL.
///   `backoffMs` is 1 s, or 3 s when `NetworkAdvice` saw RTT > 500 ms. The first
///   reconnection of a streak (none since the last event, or since the request was sent)
///   waits a **full jitter** `floor(r × (backoffMs + 1))`, uniform over 0…`backoffMs` ms
///   (AWS Architecture Blog, "Exponential Backoff And Jitter"), so clients dropped at one
///   instant — an instance killed under them — come back spread over the whole backoff;
///   the 2nd and 3rd in a row wait `backoffMs + floor(r × 251)` (0–250 ms of jitter), so a
///   link that stays down does not use up the 3 tries in a second. At most 3
///   reconnections in a row without an event in between; the next failure ends in
///   `needsResume` (a manual Resume re-sends the whole request).
/// * **502, 503, 504** are drops that wait `max(Retry-After × 1000, backoffMs) +
///   floor(r × 251)` on any attempt (RFC 9110 §10.2.3; the relay already draws its
///   `Retry-After` per response, PROTOCOL.md §4.3) and rotate the base URL; they count toward the 3. The relay answers
///   only 503 before a stream (a draining relay, or one at its connection cap); its 502/504
///   codes are in-stream `error` events (PROTOCOL.md §8.2), so a 502/504 response is a
///   gateway or load balancer in front of it whose instance is down or timed out.
/// * **`token_expired`** (an `error` event, or a 401 `token_expired`/`unauthorized` answer
///   to a reconnection) asks the token provider for a fresh token (`freshTokenNeeded`)
///   and reconnects from `lastEventId` after the jitter only (`floor(r × 251)` ms); it counts toward the 3. Once
///   per expiry: a 401 to the reconnection made with the fresh token fails the answer.
///   `session_revoked` is terminal.
/// * No resume once more than 5 minutes have passed since the last event (`now` must
///   come from a clock that advances while the device sleeps): the relay keeps a
///   stream's events for 300 s (docs/DATA_MODEL.md §12), so it ends in `needsResume` —
///   unless the app was in the background since that event (`LateResumeRule`): then the
///   answer may have finished meanwhile, and the relay keeps finished answers for
///   `RELAY_ANSWER_RETENTION` (docs/PROTOCOL.md §6.5), so once in the foreground the kit
///   makes one **late resume** from `lastEventId` at once; its `404` (or `204`) ends in
///   `needsResume`, its `200` renders the rest.
/// * **Hard timeout**: 60 s without any event (and no `done`), counting only time spent
///   in the foreground while connecting or connected → `timedOut` (complete as it
///   stands, retry offered).
/// * **Background**: a drop while in the background waits; `enterForeground` within 5
///   minutes of the last event reconnects at once from `lastEventId`.
/// * Other non-200 responses, or a content type other than `text/event-stream`, fail at
///   once. `done` and other `error` events are terminal.
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
        /// The connection dropped while the app was in the background: waiting for
        /// `enterForeground`.
        case suspended
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
        /// Ask the token provider for a fresh token first when `freshTokenNeeded`.
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
    /// Time since the last event after which a stream can no longer be resumed, ms (5 min).
    public static let idleLimitMs: Int64 = 300_000
    /// Foreground, connected time without an event (and no `done`) after which the answer is complete, ms.
    public static let hardTimeoutMs: Int64 = 60_000
    /// Upper bound of the random jitter added to a reconnection wait that is not the
    /// first of its streak (and to 502/503/504 and `token_expired` waits), ms.
    public static let maxJitterMs: Int64 = 250

    /// The jitter added to a wait, ms: `floor(r × 251)`, 0…250 (`r` in [0, 1); a value
    /// outside is clamped into it, a non-finite one counts as 0).
    public static func jitterMs(random r: Double) -> Int64 {
        scaled(r, upTo: maxJitterMs)
    }

    /// The wait before the reconnection that follows a drop (not a 502/503/504 or
    /// `token_expired`), ms. `reconnectionsInARow` is the streak before this drop (0 when
    /// an event came since the last reconnection, or none was made since the request):
    /// 0 → full jitter `floor(r × (backoffMs + 1))`, uniform over 0…`backoffMs`; 1 or
    /// more → `backoffMs + jitterMs(random: r)`.
    public static func dropWaitMs(backoffMs: Int64, reconnectionsInARow: Int, random r: Double) -> Int64 {
        reconnectionsInARow == 0 ? scaled(r, upTo: max(0, backoffMs)) : backoffMs + jitterMs(random: r)
    }

    /// `floor(r × (upTo + 1))` for `r` clamped into [0, 1): uniform over 0…`upTo`.
    private static func scaled(_ r: Double, upTo: Int64) -> Int64 {
        guard r.isFinite, r > 0 else { return 0 }
        return min(upTo, Int64(min(r, 1.0.nextDown) * Double(upTo + 1)))
    }

    /// The current state.
    public private(set) var state: State = .idle
    /// The `seq` of the last event received (0 for none), kept in memory only.
    public private(set) var lastEventId: UInt64 = 0
    /// Reconnections and resumes made so far (for telemetry).
    public private(set) var reconnections = 0
    /// Wait before each reconnection, ms; set from `NetworkAdvice.reconnectBackoffMs`.
    public var backoffMs: Int64

    /// `true` when the next connection must use a token the provider has just been
    /// asked for again (after `token_expired`).
    public private(set) var freshTokenNeeded = false
    /// The length of the current (or last) reconnection wait, ms.
    public private(set) var waitMs: Int64 = 0
    /// `true` while the app is in the foreground.
    public private(set) var isForeground = true
    /// Reads go over long-poll (the relay's catch-up read): every read is a resume, so a
    /// 401 to any of them is treated as a 401 to a reconnection.
    public private(set) var polling = false

    private var failuresInARow = 0
    private var lastEventAt: Int64 = 0
    /// The app was in the background at some moment since the last event (`LateResumeRule`).
    private var backgroundSinceEvent = false
    /// The late resume was made and no event has come since.
    public private(set) var lateResumed = false
    /// The connection in flight uses a token fetched for an expiry and no event has
    /// confirmed it yet: another 401 is final.
    private var refreshedForExpiry = false
    /// Foreground time spent connecting or connected, ms (the hard timeout's clock).
    private var activeMs: Int64 = 0
    private var activeSince: Int64?
    private var activeAtLastEvent: Int64 = 0

    public init(backoffMs: Int64 = NetworkAdvice.normalBackoffMs) {
        self.backoffMs = backoffMs
    }

    /// `true` once the response has ended.
    public var isEnded: Bool {
        if case .ended = state { return true }
        return false
    }

    /// When the caller must next call `tick(now:)` at the latest, assuming the app stays
    /// as it is: the reconnect time while waiting, the hard-timeout deadline while
    /// connecting or connected in the foreground; `nil` otherwise.
    public var nextDeadline: Int64? {
        switch state {
        case .waiting(_, let until): return until
        case .connecting, .streaming:
            guard let since = activeSince else { return nil }
            return since + (activeAtLastEvent + Self.hardTimeoutMs - activeMs)
        case .idle, .suspended, .ended: return nil
        }
    }

    /// Foreground, connected time since the last event, ms.
    public func activeSinceLastEvent(now: Int64) -> Int64 {
        activeMs + (activeSince.map { now - $0 } ?? 0) - activeAtLastEvent
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
        activeMs = 0
        activeSince = nil
        activeAtLastEvent = 0
        set(.connecting(attempt: 0), now: now)
        lastEventId = 0
        lastEventAt = now
        failuresInARow = 0
        freshTokenNeeded = false
        refreshedForExpiry = false
        polling = false
        backgroundSinceEvent = !isForeground
        lateResumed = false
        return .sendRequest
    }

    /// Changes state, opening or closing the hard timeout's clock.
    private mutating func set(_ s: State, now: Int64) {
        state = s
        let active: Bool
        switch s {
        case .connecting, .streaming: active = isForeground
        default: active = false
        }
        if active, activeSince == nil {
            activeSince = now
        } else if !active, let since = activeSince {
            activeMs += now - since
            activeSince = nil
        }
    }

    /// Response headers arrived. `error` is the decoded `{"error":{…}}` body of a
    /// non-200 response, when there is one; `retryAfterMs` its `Retry-After`, in ms.
    /// `random`: a draw `r` in [0, 1) from the caller's random source (uniform in
    /// production), which sets the jitter of a reconnection wait (`jitterMs(random:)`).
    public mutating func responseOpened(status: Int, contentType: String?, error: APIError? = nil,
                                        retryAfterMs: Int64? = nil, random: Double = 0, now: Int64) -> Action {
        guard case .connecting(let attempt) = state else { return .none }
        guard status == 200 else {
            let e = error ?? APIError(status: status, code: ErrorCode(rawValue: "http_\(status)"), message: "HTTP \(status)")
            if Self.isRetryableGatewayStatus(status) {
                return drop(now: now, waitMs: max(retryAfterMs ?? 0, backoffMs) + Self.jitterMs(random: random))
            }
            if status == 401, attempt > 0 || polling, e.code == "token_expired" || e.code == "unauthorized", !refreshedForExpiry {
                return tokenExpired(now: now, random: random)
            }
            if lateResumed, LateResumeRule.expired(status: status) { return end(.needsResume, now: now) }
            return end(.failed(status: status, code: e.code, message: e.message), now: now)
        }
        guard Self.isEventStream(contentType) else {
            return end(.failed(status: status, code: "bad_content_type",
                               message: "expected text/event-stream, got \(contentType ?? "none")"), now: now)
        }
        set(.streaming, now: now)
        return .none
    }

    /// The next long-poll read is being sent: after the previous one ended without the
    /// terminal event, or to finish a buffered SSE response from `lastEventId`
    /// (`ProxyBufferingDetector`). Not a reconnection: no wait, not counted, and the hard
    /// timeout keeps running. No effect unless connecting or streaming.
    public mutating func pollSent(now: Int64) {
        switch state {
        case .connecting, .streaming:
            polling = true
            set(.connecting(attempt: 0), now: now)
        case .idle, .waiting, .suspended, .ended:
            break
        }
    }

    /// The head of a long-poll response: `200 application/json` (events follow) or `204`
    /// (none yet) → reading; `204` with `Stream-Closed: true` (`closed`) → the answer ended
    /// without its terminal event reaching the kit: failed (`streamClosed`). A `200` of
    /// another type fails (`bad_content_type`). Other statuses exactly as
    /// `responseOpened(status:…)` (call it after their error body): a 401 is treated as on
    /// a resume. `random`: a draw in [0, 1), as for `responseOpened`.
    public mutating func pollOpened(status: Int, contentType: String?, closed: Bool, error: APIError? = nil,
                                    retryAfterMs: Int64? = nil, random: Double = 0, now: Int64) -> Action {
        guard case .connecting = state else { return .none }
        if status == 204, closed { return streamClosed(now: now) }
        if status == 204 || (status == 200 && Self.isJSON(contentType)) {
            set(.streaming, now: now)
            return .none
        }
        if status == 200 {
            return end(.failed(status: status, code: "bad_content_type",
                               message: "expected application/json, got \(contentType ?? "none")"), now: now)
        }
        return responseOpened(status: status, contentType: contentType, error: error, retryAfterMs: retryAfterMs,
                              random: random, now: now)
    }

    /// A long-poll read said `Stream-Closed: true` but the terminal event never came:
    /// failed with status 204 and code `stream_closed`.
    public mutating func streamClosed(now: Int64) -> Action {
        if case .ended = state { return .none }
        return end(.failed(status: 204, code: "stream_closed", message: "the answer ended without its terminal event"), now: now)
    }

    /// An event arrived with its SSE `id` (`seq`) and, when decodable, its content.
    /// `random`: a draw in [0, 1) for the jitter of the wait after `token_expired`.
    public mutating func eventReceived(seq: UInt64?, event: StreamEvent?, random: Double = 0, now: Int64) -> Action {
        guard case .streaming = state else { return .none }
        if let seq { lastEventId = seq }
        lastEventAt = now
        activeAtLastEvent = activeMs + (activeSince.map { now - $0 } ?? 0)
        failuresInARow = 0
        refreshedForExpiry = false
        backgroundSinceEvent = !isForeground
        lateResumed = false
        switch event {
        case .done(let reason, _, _)?:
            return end(reason == .cancelled ? .stopped : .finished(finishReason: reason.rawValue), now: now)
        case .error(_, "token_expired", _)?:
            return tokenExpired(now: now, random: random)
        case .error(let status, let code, let message)?:
            return end(.failed(status: status, code: code, message: message), now: now)
        case .delta?, .part?, nil:
            return .none
        }
    }

    /// The connection failed (refused, reset, timed out) or its body ended without
    /// `done`/`error`. `random`: a draw `r` in [0, 1) from the caller's random source
    /// (uniform in production); the wait is `dropWaitMs(backoffMs:reconnectionsInARow:random:)`
    /// — full jitter over 0…`backoffMs` for the first reconnection of a streak,
    /// `backoffMs` + 0–250 ms after that.
    public mutating func connectionLost(random: Double = 0, now: Int64) -> Action {
        switch state {
        case .connecting, .streaming:
            return drop(now: now, waitMs: Self.dropWaitMs(backoffMs: backoffMs, reconnectionsInARow: failuresInARow,
                                                          random: random))
        case .idle, .waiting, .suspended, .ended:
            return .none
        }
    }

    /// A retryable failure: wait `waitMs`, or wait for the foreground when in the background.
    private mutating func drop(now: Int64, waitMs: Int64) -> Action {
        if failuresInARow >= Self.maxAttempts { return end(.needsResume, now: now) }
        switch lateRule(now: now) {
        case .proceed: break
        case .needsResume: return end(.needsResume, now: now)
        case .waitForForeground:
            set(.suspended, now: now)
            return .none
        case .lateResume: return lateResume(now: now)
        }
        guard isForeground else {
            set(.suspended, now: now)
            return .none
        }
        failuresInARow += 1
        self.waitMs = waitMs
        let until = now + waitMs
        set(.waiting(attempt: failuresInARow, until: until), now: now)
        return .wait(until: until)
    }

    /// The token expired: ask the provider once, reconnect after the jitter only.
    private mutating func tokenExpired(now: Int64, random: Double) -> Action {
        freshTokenNeeded = true
        refreshedForExpiry = true
        return drop(now: now, waitMs: Self.jitterMs(random: random))
    }

    /// The networking layer asked the provider for the fresh token.
    public mutating func freshTokenFetched() {
        freshTokenNeeded = false
    }

    /// Time passed: reconnects when the wait is over, ends on the hard timeout or the idle limit.
    public mutating func tick(now: Int64) -> Action {
        switch state {
        case .waiting(let attempt, let until):
            switch lateRule(now: now) {
            case .proceed: break
            case .needsResume: return end(.needsResume, now: now)
            case .waitForForeground:
                failuresInARow -= 1   // not attempted: the foreground makes the late resume
                set(.suspended, now: now)
                return .none
            case .lateResume:
                failuresInARow -= 1   // this wait's attempt becomes the late resume
                return lateResume(now: now)
            }
            guard now >= until else { return .none }
            if !isForeground {
                failuresInARow -= 1   // not attempted: the foreground makes it
                set(.suspended, now: now)
                return .none
            }
            set(.connecting(attempt: attempt), now: now)
            reconnections += 1
            return .reconnect(lastEventId: lastEventId)
        case .connecting, .streaming:
            if activeSinceLastEvent(now: now) >= Self.hardTimeoutMs { return end(.timedOut, now: now) }
            return .none
        case .idle, .suspended, .ended:
            return .none
        }
    }

    /// The app went to the background: the hard timeout's clock pauses; a drop from
    /// now on waits for the foreground.
    public mutating func enterBackground(now: Int64) {
        isForeground = false
        backgroundSinceEvent = true
        set(state, now: now)
    }

    /// The app is back. After a drop in the background: reconnect at once from
    /// `lastEventId` when the last event is at most 5 minutes old, else `needsResume`.
    public mutating func enterForeground(now: Int64) -> Action {
        isForeground = true
        guard case .suspended = state else {
            set(state, now: now)
            return .none
        }
        if failuresInARow >= Self.maxAttempts { return end(.needsResume, now: now) }
        switch lateRule(now: now) {
        case .proceed, .waitForForeground: break
        case .needsResume: return end(.needsResume, now: now)
        case .lateResume: return lateResume(now: now)
        }
        failuresInARow += 1
        reconnections += 1
        set(.connecting(attempt: failuresInARow), now: now)
        return .reconnect(lastEventId: lastEventId)
    }

    /// `LateResumeRule` for this moment.
    private func lateRule(now: Int64) -> LateResumeRule.Decision {
        LateResumeRule.decide(idleMs: now - lastEventAt, backgroundSinceLastEvent: backgroundSinceEvent,
                              lateResumeMade: lateResumed, foreground: isForeground)
    }

    /// Makes the late resume: reconnect at once from `lastEventId`, counted as a reconnection.
    private mutating func lateResume(now: Int64) -> Action {
        lateResumed = true
        failuresInARow += 1
        reconnections += 1
        set(.connecting(attempt: failuresInARow), now: now)
        return .reconnect(lastEventId: lastEventId)
    }

    /// The user pressed Stop: cancel and `DELETE`. `.none` when already ended.
    public mutating func stop(now: Int64 = 0) -> Action {
        switch state {
        case .ended: return .none
        case .idle:
            set(.ended(.stopped), now: now)
            return .finish(.stopped)
        default:
            set(.ended(.stopped), now: now)
            return .stop
        }
    }

    private mutating func end(_ c: Completion, now: Int64) -> Action {
        set(.ended(c), now: now)
        return .finish(c)
    }

    /// `Retry-After` as ms: delay-seconds, or an HTTP-date relative to `date`
    /// (RFC 9110 §10.2.3); `nil` when absent or unreadable.
    public static func retryAfterMs(_ value: String?, date: Date = Date()) -> Int64? {
        guard let v = value?.trimming(" \t"), !v.isEmpty else { return nil }
        if let s = Int64(v), s >= 0 { return min(s, 3_600) * 1_000 }
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "GMT")
        f.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let d = f.date(from: v) else { return nil }
        return min(max(0, Int64(d.timeIntervalSince(date) * 1000)), 3_600_000)
    }

    /// `true` for the statuses that are retryable drops: 503 (`not_ready`, or a gateway's)
    /// and 502/504, which only a gateway or load balancer in front of the relay sends.
    public static func isRetryableGatewayStatus(_ status: Int) -> Bool {
        status == 502 || status == 503 || status == 504
    }

    /// `true` for `application/json`, parameters and case ignored (RFC 9110 §8.3.1).
    public static func isJSON(_ contentType: String?) -> Bool {
        guard let ct = contentType else { return false }
        let media = ct.split(separator: ";", maxSplits: 1).first.map(String.init) ?? ""
        return media.trimming(" \t").lowercased() == "application/json"
    }

    /// `true` for `text/event-stream`, parameters and case ignored (RFC 9110 §8.3.1).
    public static func isEventStream(_ contentType: String?) -> Bool {
        guard let ct = contentType else { return false }
        let media = ct.split(separator: ";", maxSplits: 1).first.map(String.init) ?? ""
        return media.trimming(" \t").lowercased() == "text/event-stream"
    }
}
