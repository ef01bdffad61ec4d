import RelayCore

/// Adaptive coalescing of live deltas for one client on a slow link (docs/PROTOCOL.md §4).
///
/// A client whose socket keeps up gets one SSE event per token, written at once. When a
/// client's unsent output (the connection's output buffer plus the socket's not-yet-sent
/// bytes) passes `highWaterBytes`, the link is judged backed up: from then on its deltas
/// are held and written as **one larger `delta` carrying the highest seq** once per
/// `flushIntervalMs`, and only while the backlog is at or under `highWaterBytes` again.
/// It is the lossless catch-up's rule (docs/LOSSLESS_RESUME.md): a client that resumes
/// from the merged event's id misses nothing, because the merged content is exactly the
/// concatenation of the held deltas' contents.
///
/// Without a minimum interval a 4 KB/s link would be filled with per-event framing
/// (≈ 50 bytes of `id:`/`data:`/JSON/chunk header for ≈ 5 bytes of token), so coalescing
/// stays on. Every `probeMs` (4 s, doubling to 32 s each time the link is found backed up
/// again within a probe interval) a client whose backlog is empty goes back to one event
/// per token; a link that has recovered stays there.
///
/// A terminal event (`done`/`error`) or any non-delta event is never held: what is held
/// is written, merged, before it. Pure: the caller passes the backlog (bytes) and its
/// loop's time (ms), writes what each call returns in order, and calls `tick` every
/// `tickMs` while `isCoalescing`.
public struct SlowLinkCoalescer: Sendable {
    /// Thresholds and intervals.
    public struct Limits: Sendable, Equatable {
        /// Backlog (unsent bytes) above which the link counts as backed up.
        public var highWaterBytes: Int
        /// At most one merged event per this interval, ms.
        public var flushIntervalMs: UInt64
        /// First probe back to one event per token after this long, ms; doubles up to `maxProbeMs`.
        public var probeMs: UInt64
        /// Longest probe interval, ms.
        public var maxProbeMs: UInt64
        /// Held JSON bytes at which the held deltas are written at once, backlog or
        /// not, so that what a client's connection holds stays bounded by the
        /// slow-consumer limit (the merged write then counts toward it).
        public var maxHeldBytes: Int

        public init(highWaterBytes: Int = 1_024, flushIntervalMs: UInt64 = 250, probeMs: UInt64 = 4_000, maxProbeMs: UInt64 = 32_000,
                    maxHeldBytes: Int = 64 * 1024) {
            self.maxHeldBytes = maxHeldBytes
            self.highWaterBytes = highWaterBytes
            self.flushIntervalMs = flushIntervalMs
            self.probeMs = probeMs
            self.maxProbeMs = maxProbeMs
        }
    }

    /// What to write now, in order, and how many deltas were folded into another one
    /// (a merge of k deltas counts k − 1; metrics).
    public struct Output: Sendable, Equatable {
        public var events: [SequencedEvent]
        public var merged: Int
        public init(events: [SequencedEvent] = [], merged: Int = 0) {
            self.events = events
            self.merged = merged
        }
    }

    public let limits: Limits
    /// Held deltas, oldest first.
    private var held: [SequencedEvent] = []
    /// JSON bytes of `held`.
    public private(set) var heldBytes = 0
    /// Deltas are being held and merged (the link was found backed up).
    public private(set) var isCoalescing = false
    private var lastFlushMs: UInt64 = 0
    private var probeAtMs: UInt64 = 0
    private var probeIntervalMs: UInt64
    /// When the last probe went back to one event per token (nil: none yet).
    private var lastProbeMs: UInt64?

    public init(limits: Limits = Limits()) {
        self.limits = limits
        self.probeIntervalMs = limits.probeMs
    }

    /// How often the caller calls `tick` while `isCoalescing`, ms.
    public var tickMs: UInt64 { max(1, limits.flushIntervalMs / 5) }

    /// Deltas held now.
    public var heldCount: Int { held.count }

    /// Whether `offer` would hand a live event back alone and change nothing: the link
    /// is not coalescing and the backlog (bytes) is at or under the high-water mark. The
    /// caller then writes the event itself (the common case of a client that keeps up,
    /// with no `Output` built per event).
    public func passesThrough(unsentBytes: Int) -> Bool {
        !isCoalescing && unsentBytes <= limits.highWaterBytes
    }

    /// A live event in seq order. `unsentBytes`: the client's backlog now.
    public mutating func offer(_ e: SequencedEvent, unsentBytes: Int, nowMs: UInt64) -> Output {
        if !isCoalescing {
            guard unsentBytes > limits.highWaterBytes, SlowLinkCoalescer.content(of: e) != nil else { return Output(events: [e]) }
            startCoalescing(nowMs: nowMs)
            return hold(e)
        }
        guard SlowLinkCoalescer.content(of: e) != nil else {
            var out = flush()
            out.events.append(e)
            return out
        }
        return hold(e)
    }

    /// Called every `tickMs` while coalescing: writes the merged delta when the interval
    /// has passed and the backlog is back under the high-water mark; goes back to one
    /// event per token when a probe is due and the backlog is empty.
    public mutating func tick(unsentBytes: Int, nowMs: UInt64) -> Output {
        guard isCoalescing else { return Output() }
        if unsentBytes == 0 && nowMs >= probeAtMs {
            let out = flush()
            isCoalescing = false
            lastProbeMs = nowMs
            return out
        }
        guard !held.isEmpty, unsentBytes <= limits.highWaterBytes,
              nowMs &- lastFlushMs >= limits.flushIntervalMs else { return Output() }
        lastFlushMs = nowMs
        return flush()
    }

    /// Everything held, merged into one delta (before the relay writes anything else:
    /// a replay, an error it raises, the end).
    public mutating func flush() -> Output {
        guard let merged = SlowLinkCoalescer.merge(held) else { return Output() }
        let n = held.count
        held.removeAll(keepingCapacity: true)
        heldBytes = 0
        return Output(events: [merged], merged: n - 1)
    }

    private mutating func hold(_ e: SequencedEvent) -> Output {
        held.append(e)
        heldBytes += e.json.utf8.count
        return heldBytes >= limits.maxHeldBytes ? flush() : Output()
    }

    private mutating func startCoalescing(nowMs: UInt64) {
        isCoalescing = true
        lastFlushMs = nowMs
        if let p = lastProbeMs {
            // Backed up again soon after a probe: probe less often; else start over.
            probeIntervalMs = nowMs &- p < probeIntervalMs * 2 ? min(probeIntervalMs * 2, limits.maxProbeMs) : limits.probeMs
        }
        probeAtMs = nowMs + probeIntervalMs
    }

    private static let prefix = "{\"type\":\"delta\",\"content\":\""
    private static let suffix = "\"}"

    /// The escaped JSON content of a delta the relay wrote (`StreamEvent.delta(_).json`),
    /// `nil` for any other event or shape.
    static func content(of e: SequencedEvent) -> Substring? {
        let j = e.json
        guard j.hasPrefix(prefix), j.hasSuffix(suffix), j.utf8.count >= prefix.utf8.count + suffix.utf8.count else { return nil }
        let s = j.utf8.index(j.startIndex, offsetBy: prefix.utf8.count)
        let t = j.utf8.index(j.endIndex, offsetBy: -suffix.utf8.count)
        let c = j[s..<t]
        // A content ending in an odd run of backslashes would mean the closing quote
        // is escaped: not the shape we write.
        var backslashes = 0
        for b in c.utf8.reversed() { if b == UInt8(ascii: "\\") { backslashes += 1 } else { break } }
        return backslashes % 2 == 0 ? c : nil
    }

    /// One delta with the highest seq whose content is the held contents in order (JSON
    /// string escaping is per character, so the escaped contents concatenate).
    public static func merge(_ events: [SequencedEvent]) -> SequencedEvent? {
        guard let last = events.last else { return nil }
        if events.count == 1 { return last }
        var json = prefix
        for e in events { json += content(of: e) ?? "" }
        json += suffix
        return SequencedEvent(seq: last.seq, json: json)
    }
}
