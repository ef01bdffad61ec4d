import Foundation
import RelayClient
import RelayCore
import RelayLoop

/// One reader of a live answer in the `storm` scenario: a `GET /api/chat/stream/{id}`
/// through the load balancer that reconnects as the client kits do, by the kits' own
/// `RelayClient.ReconnectPolicy` (conformance/CLIENT_RULES.md "Reconnect decisions"): the
/// first reconnection after a drop waits a full jitter, uniform over 0–1,000 ms; a second
/// or third in a row 1,000 ms + 0–250 ms; a `502`/`503`/`504` `max(Retry-After, 1 s)` +
/// 0–250 ms; then `Last-Event-ID: <last seq>`; at most 3 reconnections in a row without an
/// event in between.
///
/// Checks every event it gets: the SSE `id` (the stream's `seq`) must be one more than the
/// last one received (a jump is a lost event, a repeat a duplicate), and so must the
/// delta index `n` the bench producer stamps (`BenchUpstream`). Times are CLOCK_REALTIME
/// µs (`nowMicros`), the clock of the producer's stamps.
final class StormReader {
    let index: Int
    let id: String
    let stats: StormStats
    private(set) var policy = ReconnectPolicy()
    private var parser = SSEParser()
    private var conn: HTTPConnection?
    private var timer: LoopTimer?
    private let loop: EventLoop
    private let target: Target
    private let sources: SourceAddresses

    /// Highest delta index received (`n`), and the last SSE id (`seq`) received.
    private(set) var lastN = 0
    private(set) var lastSeq: UInt64 = 0
    private(set) var connected = false
    /// `done` received.
    private(set) var finished = false
    /// The policy ended the answer without `done` (`needsResume`, a failure): why.
    private(set) var failed: String?
    /// Arrival of the last delta, µs.
    private(set) var lastArrival: UInt64 = 0

    /// The kill (µs): set by the scenario; from then on the reader records its storm.
    var killAt: UInt64?
    /// The first drop at or after the kill (µs): the reader was on the killed instance.
    private(set) var droppedAt: UInt64?
    /// When the request that reconnected it (200) was sent, µs.
    private(set) var resumedFrom: UInt64?
    /// Requests sent after the drop (the successful one included), and the `503`s among them.
    private(set) var attempts = 0
    private(set) var refusals503 = 0
    /// When the first reconnection after the drop was due by the policy's wait, and when
    /// it was sent, µs (their difference is the load generator's own lateness).
    private(set) var firstReconnectDue: UInt64?
    private(set) var firstReconnectSent: UInt64?
    /// When the reconnection's `200` head arrived, µs.
    private(set) var resumedAt: UInt64?
    /// Arrival of the last event produced by the reconnect time (stamp ≤ `resumedFrom`).
    private var lastReplayArrival: UInt64?
    /// Caught up (µs): the arrival of the stream's latest event at the reconnect (the last
    /// one stamped at or before the reconnect's request), or the reconnection's `200` head
    /// when the reader already had that event; known once a later event (or `done`) arrives.
    private(set) var caughtUpAt: UInt64?
    /// Arrival of the first event produced after the reconnect (a live one), µs.
    private(set) var firstLiveAt: UInt64?

    /// Delivery latency (arrival − the delta's stamp, µs) and the gap since this reader's
    /// previous delta (µs), for the scenario's before/during windows.
    var onDelta: ((StormReader, _ latencyMicros: UInt64, _ gapMicros: UInt64?, _ now: UInt64) -> Void)?

    init(index: Int, id: String, loop: EventLoop, target: Target, sources: SourceAddresses, stats: StormStats) {
        self.index = index
        self.id = id
        self.loop = loop
        self.target = target
        self.sources = sources
        self.stats = stats
    }

    /// Whether the reader was on the killed instance (dropped after the kill).
    var affected: Bool { droppedAt != nil }

    /// Opens the first read, from the stream's start (`Last-Event-ID: 0`, as a second
    /// device reading an answer does).
    func start() {
        _ = policy.start(now: Self.nowMs())
        // The policy's `.sendRequest` re-sends a POST; this reader joins an answer that
        // another client started, so its request is the resume from 0.
        open(lastEventID: "0")
    }

    /// Closes the connection and cancels a pending reconnection (end of the run).
    func close() {
        timer?.cancel()
        timer = nil
        conn?.close()
        conn = nil
        connected = false
    }

    static func nowMs() -> Int64 { Int64(monoMs()) }

    /// The kits' random draw `r`, uniform in [0, 1): the policy turns it into the wait.
    static func random() -> Double { Double.random(in: 0..<1) }

    private func open(lastEventID: String) {
        connected = false
        parser = SSEParser()
        let sentAt = nowMicros()
        if droppedAt != nil {
            attempts += 1
            if firstReconnectSent == nil { firstReconnectSent = sentAt }
        }
        guard let c = HTTPConnection(loop: loop, src: sources.take(), dst: target.dst) else {
            stats.connectFailures += 1
            perform(policy.connectionLost(random: Self.random(), now: Self.nowMs()))
            return
        }
        conn = c
        c.onHead = { [unowned self] status, head in
            let retryAfter = Self.header("retry-after", in: head).flatMap { Int64($0) }.map { $0 * 1000 }
            if status != 200 {
                self.stats.httpErrors[status, default: 0] += 1
                if status == 503 { self.refusals503 += 1 }
                self.conn?.close()
                self.conn = nil
            } else if self.droppedAt != nil, self.resumedFrom == nil {
                self.resumedFrom = sentAt
                self.resumedAt = nowMicros()
            }
            let action = self.policy.responseOpened(status: status, contentType: Self.header("content-type", in: head),
                                                    retryAfterMs: retryAfter, random: Self.random(), now: Self.nowMs())
            if status == 200 { self.connected = true }
            self.perform(action)
        }
        c.onBody = { [unowned self] buf in self.body(buf) }
        c.onResponseEnd = { [unowned self] in self.lost("response ended without done") }
        c.onClose = { [unowned self] why in self.lost(why ?? "closed") }
        c.send(target.subscribeRequest(id: id, create: false, maxTokens: 0, lastEventID: lastEventID))
    }

    private func lost(_ why: String) {
        conn?.close()
        conn = nil
        connected = false
        if finished || failed != nil { return }
        stats.drops[why, default: 0] += 1
        if let k = killAt, droppedAt == nil { droppedAt = max(k, nowMicros()) }
        perform(policy.connectionLost(random: Self.random(), now: Self.nowMs()))
    }

    private func perform(_ action: ReconnectPolicy.Action) {
        switch action {
        case .none, .sendRequest, .stop:
            return
        case .wait(let until):
            if droppedAt != nil, firstReconnectDue == nil {
                firstReconnectDue = nowMicros() + UInt64(max(0, until - Self.nowMs())) * 1000
            }
            schedule(until: until)
        case .reconnect(let last):
            open(lastEventID: last == 0 ? "0" : String(last))
        case .finish(let c):
            conn?.close()
            conn = nil
            connected = false
            if case .finished = c { return }
            failed = "\(c)"
            stats.failures["\(c)", default: 0] += 1
        }
    }

    /// Calls the policy's `tick` at `until` (ms); again if the timer fired a little early
    /// (libevent's cached clock against `monoMs`), as the kits' timers do.
    private func schedule(until: Int64) {
        let t = timer ?? LoopTimer(loop: loop) { [unowned self] in
            let action = self.policy.tick(now: Self.nowMs())
            if case .waiting(_, let until) = self.policy.state, case .none = action {
                self.schedule(until: until)
            } else {
                self.perform(action)
            }
        }
        timer = t
        t.schedule(afterMs: UInt64(max(1, until - Self.nowMs())))
    }

    private func body(_ buf: UnsafeRawBufferPointer) {
        let items: [SSEParser.Item]
        do {
            items = try parser.feed(buf)
        } catch {
            stats.failures["SSE parse: \(error)", default: 0] += 1
            failed = "SSE parse"
            close()
            return
        }
        let now = nowMicros()
        for item in items {
            guard case .event(let m) = item else { continue }
            let seq = UInt64(m.lastEventId)
            if let seq {
                if seq <= lastSeq || seq > lastSeq + 1 {
                    if seq <= lastSeq { stats.duplicateSeqs += 1 } else { stats.lostSeqs += Int(seq - lastSeq - 1) }
                    if stats.seqSamples.count < 10 {
                        let kind = m.data.count > 40 ? String(m.data.prefix(40)) + "…" : m.data
                        stats.seqSamples.append("\(id): id \(lastSeq) then \(seq) (\(kind)), last delta n \(lastN), \(droppedAt == nil ? "never dropped" : "reconnected")")
                    }
                }
                if seq > lastSeq { lastSeq = seq }
            } else {
                stats.eventsWithoutID += 1
            }
            var decoded: StreamEvent?
            switch BenchEvent.parse(m.data) {
            case .delta:
                BenchEvent.forEachToken(m.data) { t, n in delta(t: t, n: n, now: now) }
            case .part(let stamp):
                if let s = stamp { delta(t: s.t, n: s.n, now: now) }
            case .done, .error, .other:
                decoded = try? StreamEvent(json: m.data)
                if case .done? = decoded {
                    finished = true
                    if resumedFrom != nil, caughtUpAt == nil { caughtUpAt = lastReplayArrival ?? resumedAt ?? now }
                    stats.done += 1
                } else if case .error? = decoded {
                    stats.errorEvents += 1
                }
            }
            let action = policy.eventReceived(seq: seq, event: decoded, random: Self.random(), now: Self.nowMs())
            perform(action)
            if conn == nil { return }
        }
    }

    private func delta(t: UInt64, n: Int, now: UInt64) {
        stats.received += 1
        if n <= lastN {
            stats.duplicates += 1
            return
        }
        if n > lastN + 1 { stats.lost += n - lastN - 1 }
        lastN = n
        let gap: UInt64? = lastArrival == 0 ? nil : now - lastArrival
        lastArrival = now
        onDelta?(self, now > t ? now - t : 0, gap, now)
        if let r = resumedFrom, caughtUpAt == nil {
            if t <= r {
                lastReplayArrival = now
            } else {
                caughtUpAt = lastReplayArrival ?? resumedAt ?? now
                firstLiveAt = now
            }
        }
    }

    /// A response header's value (case-insensitive name), from the raw head.
    static func header(_ name: String, in head: String) -> String? {
        for line in head.split(separator: "\r\n").dropFirst() {
            guard let c = line.firstIndex(of: ":") else { continue }
            if line[..<c].lowercased() == name { return line[line.index(after: c)...].trimmingCharacters(in: .whitespaces) }
        }
        return nil
    }
}

/// Counters shared by the readers of a `storm` run.
final class StormStats {
    /// Deltas received (replays included).
    var received = 0
    /// Jumps and repeats of the delta index `n`.
    var lost = 0
    var duplicates = 0
    /// Jumps and repeats of the SSE `id` (`seq`).
    var lostSeqs = 0
    var duplicateSeqs = 0
    var eventsWithoutID = 0
    /// The first few SSE id jumps or repeats, described (for the log).
    var seqSamples: [String] = []
    var done = 0
    var errorEvents = 0
    var connectFailures = 0
    var httpErrors: [Int: Int] = [:]
    /// Connections that ended without `done`, by reason (the kill's drops among them).
    var drops: [String: Int] = [:]
    /// Answers the policy ended without `done` (`needsResume`, a terminal HTTP status).
    var failures: [String: Int] = [:]
}
