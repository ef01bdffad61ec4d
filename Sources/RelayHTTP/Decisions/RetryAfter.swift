import RelayCore

/// The `Retry-After` of the relay's overload answers (docs/PROTOCOL.md §4.3): a whole number
/// of seconds (RFC 9110 §10.2.3, `delay-seconds`) drawn uniformly from `minSeconds…maxSeconds`
/// for each response, so clients refused in the same moment (a full instance, a drain, a Redis
/// outage) spread their retries over the window instead of returning in lockstep.
///
/// Which answers carry it: every `503` (`not_ready`, `too_many_pending_requests`, and any other
/// 503 answered before a stream), and `429 too_many_streams` (a session slot frees when one of
/// its streams ends). `429 token_budget_exhausted` carries none: the budget returns with the
/// next month (docs/PROTOCOL.md §9), and a retry in seconds would only be refused again.
/// Pure: the caller passes the random source.
public struct RetryAfter: Sendable, Equatable {
    /// Shortest delay, seconds (≥ 1).
    public let minSeconds: Int
    /// Longest delay, seconds (≥ `minSeconds`).
    public let maxSeconds: Int

    /// The relay's window: 1–3 s.
    public static let overload = RetryAfter(minSeconds: 1, maxSeconds: 3)

    /// - Parameters: see the properties; clamped to `1 ≤ minSeconds ≤ maxSeconds`.
    public init(minSeconds: Int, maxSeconds: Int) {
        self.minSeconds = max(1, minSeconds)
        self.maxSeconds = max(self.minSeconds, maxSeconds)
    }

    /// Whether an answer with `status` and error `code` carries a `Retry-After`.
    public static func applies(status: Int, code: ErrorCode?) -> Bool {
        status == 503 || (status == 429 && code == .tooManyStreams)
    }

    /// The delay of one response, seconds, drawn from `random`.
    public func seconds<R: RandomNumberGenerator>(using random: inout R) -> Int {
        Int.random(in: minSeconds...maxSeconds, using: &random)
    }

    /// The header value of one response (`"1"`, `"2"` or `"3"` for `overload`).
    public func headerValue<R: RandomNumberGenerator>(using random: inout R) -> String {
        String(seconds(using: &random))
    }
}
