/// The completion webhook's delivery rule (docs/PROTOCOL.md §13): what one attempt's
/// answer means, and after a failure whether and when the next attempt comes. Pure: the
/// random draw for the jitter is passed in.
///
/// * A `2xx` answer is a delivery (Standard Webhooks 1.0.0, "Delivery": any 2xx).
/// * `410 Gone` means the receiver does not want this message: it is dropped at once, not
///   retried (the specification lets a sender treat 410 as "stop sending"; the relay stops
///   for the one message, the next answer's webhook is tried again).
/// * Anything else — another status, a connection refused or reset, a timeout — is a
///   failure: retried after `backoffMs` until `maxAttempts` attempts were made, then dropped.
struct CompletionWebhookRetry: Sendable, Equatable {
    /// Attempts per message, ≥ 1 (`RELAY_COMPLETION_WEBHOOK_MAX_ATTEMPTS`).
    let maxAttempts: Int
    /// Delay before the first retry, ms (`RELAY_COMPLETION_WEBHOOK_RETRY_BASE`).
    let baseMs: Int
    /// Longest delay between two attempts, ms.
    let capMs: Int

    /// The longest delay between two attempts unless told otherwise: 10 min.
    static let defaultCapMs = 600_000

    init(maxAttempts: Int, baseMs: Int, capMs: Int = CompletionWebhookRetry.defaultCapMs) {
        self.maxAttempts = max(1, maxAttempts)
        self.baseMs = max(1, baseMs)
        self.capMs = max(self.baseMs, capMs)
    }

    /// How one attempt ended.
    enum Attempt: Equatable {
        /// The receiver answered with this HTTP status.
        case answered(status: Int)
        /// No answer: refused, reset, timed out (`reason`: for the log).
        case noAnswer(reason: String)
    }

    /// What follows an attempt.
    enum Next: Equatable {
        /// Delivered: the message is done.
        case delivered
        /// Try again after this long, ms.
        case retry(afterMs: Int)
        /// Given up: `gone` (410) or `exhausted` (the last attempt failed).
        case drop(Drop)
    }

    /// Why a message was given up.
    enum Drop: String, Equatable {
        case gone, exhausted
    }

    /// What follows attempt number `attempt` (1 for the first) that ended as `result`.
    /// - Parameter random: a uniform 64-bit draw for the jitter.
    func next(afterAttempt attempt: Int, _ result: Attempt, random: UInt64) -> Next {
        if case .answered(let status) = result {
            if (200...299).contains(status) { return .delivered }
            if status == 410 { return .drop(.gone) }
        }
        guard attempt < maxAttempts else { return .drop(.exhausted) }
        return .retry(afterMs: backoffMs(retry: attempt, random: random))
    }

    /// The delay before retry number `retry` (1 for the first retry), ms: exponential,
    /// `baseMs × 2^(retry−1)` capped at `capMs`, with "equal jitter" — uniform in
    /// [d/2, d] — so receivers that came back are not hit by every relay at once, and a
    /// retry never comes sooner than half the nominal delay.
    func backoffMs(retry: Int, random: UInt64) -> Int {
        let shift = min(max(0, retry - 1), 30)
        let nominal = min(capMs, baseMs.multipliedReportingOverflow(by: 1 << shift).overflow ? capMs : baseMs << shift)
        let half = nominal / 2
        let span = UInt64(nominal - half + 1)
        return half + Int(random % span)
    }
}
