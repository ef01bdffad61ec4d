/// Decides, for one `text/event-stream` response, whether something between the relay and
/// the app buffers the stream (carrier and corporate proxies that hold `text/event-stream`
/// until the response ends), so that the kit must read the answer over long-poll instead
/// (`conformance/CLIENT_RULES.md` "Buffering proxies"; vectors `conformance/buffering.json`).
///
/// Pure: no I/O; every time is an argument in ms on one clock. Feed it the response's
/// head, each read of its body (bytes and the number of complete events the read
/// completed) and its end; call `tick(now:)` at `deadline`.
///
/// Two signs, each impossible on a streaming path:
/// * **Silent after the head**: the head arrived at `H` and no body byte by
///   `H + firstByteBoundMs` (20 s). The relay writes each event as it comes (`retry:` in the
///   first event's block) and a `: ping` after any silence of `RELAY_HEARTBEAT` (15 s, checked each
///   second, PROTOCOL.md §4.5), so a streaming path shows a byte within 16 s of the head
///   even when a hop holds a write that small; 4 s of margin covers slow mobile round trips
///   and a TCP retransmission. The bound is the same after a `POST` and a resume: the time
///   to the first event depends on the upstream (a model may think for minutes, with pings),
///   only the heartbeat is the relay's promise.
/// * **Whole body at the end**: every event of the response arrived in one read, that read
///   carried at least `burstMinEvents` (3) events, it came at least `burstMinWaitMs` (5 s)
///   after the request was sent, and the body ended at most `burstEndWindowMs` (1 s) after
///   it (a read that completes the terminal `done`/`error` is the end: nothing follows a
///   terminal event, PROTOCOL.md §4.2). Reads without events (the `retry:` line, pings) do
///   not count. A resume of a finished stream also gets its replay in one read at the end,
///   but within a round trip of the request, hence the 5 s.
///
/// Once events arrive in two reads, or the body ends without either sign, the verdict is
/// `.stream` and stays.
public struct ProxyBufferingDetector: Sendable, Equatable {
    /// Why a response was judged buffered.
    public enum Reason: String, Sendable, Equatable {
        /// Head, then no body byte within `firstByteBoundMs`.
        case silentAfterHeaders
        /// The whole body in one read at the end.
        case wholeBodyAtEnd
    }

    /// The detector's conclusion so far.
    public enum Verdict: Sendable, Equatable {
        /// Not known yet.
        case undecided
        /// The response streams: stay on SSE.
        case stream
        /// The response is buffered: finish the answer over long-poll and stay on it.
        case longPoll(Reason)
    }

    /// Longest wait from the response head to its first body byte on a streaming path, ms:
    /// `RELAY_HEARTBEAT` 15 s + the 1 s check + 4 s margin.
    public static let firstByteBoundMs: Int64 = 20_000
    /// Events that must arrive in the single read to call it a whole body.
    public static let burstMinEvents = 3
    /// Shortest time from the request to the single read for a whole body, ms.
    public static let burstMinWaitMs: Int64 = 5_000
    /// Longest time from the single read to the body's end for a whole body, ms.
    public static let burstEndWindowMs: Int64 = 1_000

    /// The conclusion so far.
    public private(set) var verdict: Verdict = .undecided
    private let sentAt: Int64
    private var headersAt: Int64?
    private var sawByte = false
    private var eventReads = 0
    private var burst: (at: Int64, events: Int)?

    /// - Parameter sentAt: when the request was sent, ms.
    public init(sentAt: Int64) {
        self.sentAt = sentAt
    }

    public static func == (a: Self, b: Self) -> Bool {
        a.verdict == b.verdict && a.sentAt == b.sentAt && a.headersAt == b.headersAt && a.sawByte == b.sawByte
            && a.eventReads == b.eventReads && a.burst?.at == b.burst?.at && a.burst?.events == b.burst?.events
    }

    /// When `tick(now:)` must be called (the first-byte bound), ms, or `nil`.
    public var deadline: Int64? {
        guard verdict == .undecided, !sawByte, let h = headersAt else { return nil }
        return h + Self.firstByteBoundMs
    }

    /// The response head arrived (a `200 text/event-stream`).
    public mutating func headers(at: Int64) {
        if headersAt == nil { headersAt = at }
    }

    /// Time passed: decides `silentAfterHeaders` once the bound is reached without a byte.
    @discardableResult
    public mutating func tick(now: Int64) -> Verdict {
        if let d = deadline, now >= d { verdict = .longPoll(.silentAfterHeaders) }
        return verdict
    }

    /// A read of the body: `bytes` > 0 bytes that completed `events` events;
    /// `terminal` when one of them is `done` or `error` (the body ends with that read).
    @discardableResult
    public mutating func read(at: Int64, bytes: Int, events: Int, terminal: Bool = false) -> Verdict {
        tick(now: at)
        guard verdict == .undecided else { return verdict }
        if bytes > 0 { sawByte = true }
        if events > 0 {
            eventReads += 1
            if eventReads == 1 {
                burst = (at, events)
            } else {
                verdict = .stream
                return verdict
            }
        }
        return terminal ? ended(at: at) : verdict
    }

    /// The body ended (cleanly or not) at `at`.
    @discardableResult
    public mutating func ended(at: Int64) -> Verdict {
        tick(now: at)
        guard verdict == .undecided else { return verdict }
        if eventReads == 1, let b = burst, b.events >= Self.burstMinEvents,
           b.at - sentAt >= Self.burstMinWaitMs, at - b.at <= Self.burstEndWindowMs {
            verdict = .longPoll(.wholeBodyAtEnd)
        } else {
            verdict = .stream
        }
        return verdict
    }
}
