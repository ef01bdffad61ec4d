import CLibevent
import Foundation
import RelayCore
import RelayLoop
import RelayUpstream

/// The system under test: StreamRelay (POST/GET /api/chat/stream) or nginx + nchan
/// (EventSource GET /sub/<channel>, HTTP publisher POST /pub/<channel>).
enum TargetKind: String { case relay, nchan }

struct Target {
    var kind: TargetKind
    var host = "127.0.0.1"
    var port = 8080
    /// StreamRelay bearer token (one user for every stream, so fan-out resumes are allowed).
    var token = ""
    /// The answer every stream carries (`--model`): text deltas only, or the part-heavy mix.
    var answer = BenchAnswer.text
    var dst: sockaddr_in {
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_port = in_port_t(UInt16(port).bigEndian)
        a.sin_addr.s_addr = inet_addr(host)
        return a
    }

    /// The request that opens stream `id` for a subscriber: a relay POST (creates the
    /// generation), a relay GET resume, or an nchan EventSource GET.
    func subscribeRequest(id: String, create: Bool, maxTokens: Int, lastEventID: String?) -> String {
        var r: String
        switch kind {
        case .relay where create:
            let body = "{\"messages\":[{\"role\":\"user\",\"content\":\"bench\"}],\"model\":\"\(answer.rawValue)\",\"max_tokens\":\(maxTokens)}"
            r = "POST /api/chat/stream HTTP/1.1\r\nHost: \(host):\(port)\r\nAuthorization: Bearer \(token)\r\n"
                + "Content-Type: application/json\r\nAccept: text/event-stream\r\nX-Request-Id: \(id)\r\n"
                + "Content-Length: \(body.utf8.count)\r\n\r\n" + body
            return r
        case .relay:
            r = "GET /api/chat/stream/\(id) HTTP/1.1\r\nHost: \(host):\(port)\r\nAuthorization: Bearer \(token)\r\nAccept: text/event-stream\r\n"
        case .nchan:
            r = "GET /sub/\(id) HTTP/1.1\r\nHost: \(host):\(port)\r\nAccept: text/event-stream\r\n"
        }
        if let l = lastEventID, !l.isEmpty { r += "Last-Event-ID: \(l)\r\n" }
        return r + "\r\n"
    }
}

/// The bench answer a stream carries: the relay's bench model of that name
/// (`SimulatedDocuments`), and for nchan the same events published by the load generator.
enum BenchAnswer: String {
    /// `simulated-bench`: one stamped `delta` per event.
    case text = "simulated-bench"
    /// `simulated-bench-parts`: `BenchPartsAnswer`, mostly stamped `reasoning` and
    /// `tool_call_delta` parts with a tool call's framing and some deltas.
    case parts = "simulated-bench-parts"

    /// The stamps (`n`) of an answer of `events` events: the last `n` a reader gets.
    func stamps(events: Int) -> Int {
        switch self {
        case .text: return events
        case .parts: return BenchPartsAnswer.stamps(inFirst: events)
        }
    }
}

/// The `delta` JSON every producer sends: `{"type":"delta","content":"t=<µs>;n=<k>;xxx…"}`;
/// the part-heavy answer carries the same stamp in its `reasoning` and `tool_call_delta`
/// parts (`BenchPartsAnswer`).
enum BenchEvent {
    static let tokenBytes = 32
    static func delta(micros: UInt64, k: Int) -> String {
        var c = "t=\(micros);n=\(k);"
        if c.utf8.count < tokenBytes { c += String(repeating: "x", count: tokenBytes - c.utf8.count) }
        return "{\"type\":\"delta\",\"content\":\"\(c)\"}"
    }
    static func done(tokens: Int) -> String {
        "{\"type\":\"done\",\"finish_reason\":\"length\",\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":\(tokens),\"total_tokens\":\(tokens + 4)}}"
    }

    /// What an event is: a `delta`; a part, with the stamp of a `reasoning` or
    /// `tool_call_delta` part (`nil` for the framing of a tool call, or any other part);
    /// `done`; `error`; anything else.
    enum Kind { case delta(t: UInt64, n: Int), part(stamp: (t: UInt64, n: Int)?), done, error, other }

    /// Every token `(t, n)` in a delta's data, in order: one for a plain delta, several
    /// for a delta the relay merged for a backed-up client (the contents of consecutive
    /// deltas concatenated, `t=…;n=k;xx…t=…;n=k+1;xx…`).
    static func forEachToken(_ data: String, _ body: (UInt64, Int) -> Void) {
        var data = data
        data.withUTF8 { p in
            var i = 0
            while true {
                while i + 1 < p.count, !(p[i] == UInt8(ascii: "t") && p[i + 1] == UInt8(ascii: "=")) { i += 1 }
                guard i + 1 < p.count else { return }
                i += 2
                var t: UInt64 = 0
                var n = 0
                while i < p.count, p[i] >= 48, p[i] <= 57 { t = t &* 10 &+ UInt64(p[i] &- 48); i += 1 }
                while i + 1 < p.count, !(p[i] == UInt8(ascii: "n") && p[i + 1] == UInt8(ascii: "=")) { i += 1 }
                guard i + 1 < p.count else { return }
                i += 2
                while i < p.count, p[i] >= 48, p[i] <= 57 { n = n &* 10 &+ Int(p[i] &- 48); i += 1 }
                body(t, n)
            }
        }
    }

    /// Classifies an event's data without a JSON parser (the producers' fixed shapes: the
    /// `type` first, and no `t=` before the stamp).
    static func parse(_ data: String) -> Kind {
        var data = data
        return data.withUTF8 { p -> Kind in
            func starts(with prefix: StaticString) -> Bool {
                prefix.utf8CodeUnitCount <= p.count && memcmp(p.baseAddress!, prefix.utf8Start, prefix.utf8CodeUnitCount) == 0
            }
            // The first `t=<digits>` and the `n=<digits>` after it.
            func stamp() -> (t: UInt64, n: Int) {
                var i = 0
                var t: UInt64 = 0
                var n = 0
                while i + 1 < p.count, !(p[i] == UInt8(ascii: "t") && p[i + 1] == UInt8(ascii: "=")) { i += 1 }
                i += 2
                while i < p.count, p[i] >= 48, p[i] <= 57 { t = t &* 10 &+ UInt64(p[i] &- 48); i += 1 }
                while i + 1 < p.count, !(p[i] == UInt8(ascii: "n") && p[i + 1] == UInt8(ascii: "=")) { i += 1 }
                i += 2
                while i < p.count, p[i] >= 48, p[i] <= 57 { n = n &* 10 &+ Int(p[i] &- 48); i += 1 }
                return (t, n)
            }
            // {"type":"d  → index 9 is the first letter of the type
            guard p.count > 10 else { return .other }
            switch p[9] {
            case UInt8(ascii: "d") where p[10] == UInt8(ascii: "e"):
                let s = stamp()
                return .delta(t: s.t, n: s.n)
            case UInt8(ascii: "d") where p[10] == UInt8(ascii: "o"):
                return .done
            case UInt8(ascii: "e"):
                return .error
            default:
                if starts(with: "{\"type\":\"reasoning\"") || starts(with: "{\"type\":\"tool_call_delta\"") { return .part(stamp: stamp()) }
                guard starts(with: "{\"type\":\""), let end = p[9...].firstIndex(of: UInt8(ascii: "\"")),
                      AnswerPart.types.contains(String(decoding: UnsafeBufferPointer(rebasing: p[9..<end]), as: UTF8.self)) else { return .other }
                return .part(stamp: nil)
            }
        }
    }
}

/// One SSE subscriber: an `HTTPConnection` whose body goes through `RelayCore.SSEParser`.
/// Tracks the last delta index `n` seen (gaps = lost, repeats = duplicates), latency from
/// the embedded send time, heartbeats, and catch-up time after a resume storm.
final class Subscriber {
    let stream: Int
    let id: String
    let stats: RunStats
    /// Relay: this subscriber's POST creates the stream.
    var creator = false
    var parser = SSEParser()
    private(set) var conn: HTTPConnection?
    /// Highest delta index received.
    private(set) var lastN = 0
    private(set) var connected = false
    private(set) var finished = false
    private(set) var heartbeats = 0
    /// Connected (response head received), µs.
    private(set) var connectedAt: UInt64 = 0
    /// Resume storm: reconnect time and the arrival of the last event produced before it.
    var stormT0: UInt64?
    private(set) var lastReplayArrival: UInt64?
    private(set) var caughtUpMicros: UInt64?
    var onConnected: ((Subscriber) -> Void)?
    var onFinished: ((Subscriber) -> Void)?
    var onFailed: ((Subscriber, String) -> Void)?
    /// Closed deliberately (no failure count).
    private var closing = false

    init(stream: Int, id: String, stats: RunStats) {
        self.stream = stream
        self.id = id
        self.stats = stats
    }

    /// Opens the connection and sends `request`.
    func open(loop: EventLoop, src: in_addr_t, dst: sockaddr_in, request: String) {
        closing = false
        connected = false
        parser.finish()
        guard let c = HTTPConnection(loop: loop, src: src, dst: dst) else {
            stats.connectFailures += 1
            onFailed?(self, "connect: \(String(cString: strerror(errno)))")
            return
        }
        conn = c
        c.onHead = { [unowned self] status, _ in
            guard status == 200 else {
                self.stats.httpErrors[status, default: 0] += 1
                self.drop()
                self.onFailed?(self, "HTTP \(status)")
                return
            }
            self.connected = true
            self.connectedAt = nowMicros()
            self.onConnected?(self)
        }
        c.onBody = { [unowned self] buf in self.body(buf) }
        c.onResponseEnd = { [unowned self] in self.ended(nil) }
        c.onClose = { [unowned self] err in self.ended(err ?? "closed") }
        c.send(request)
    }

    /// Closes without counting a failure (a deliberate disconnect).
    func drop() {
        closing = true
        connected = false
        conn?.close()
        conn = nil
    }

    private func ended(_ why: String?) {
        let wasClosing = closing
        drop()
        if finished || wasClosing { return }
        stats.closedEarly += 1
        onFailed?(self, why ?? "response ended without done")
    }

    private func body(_ buf: UnsafeRawBufferPointer) {
        let items: [SSEParser.Item]
        do {
            items = try parser.feed(buf)
        } catch {
            drop()
            onFailed?(self, "SSE parse: \(error)")
            return
        }
        guard !items.isEmpty else { return }
        let now = nowMicros()
        for item in items {
            switch item {
            case .comment(let c):
                // Heartbeats: the relay's ": ping", nchan's ":ping" (not nchan's ": hi" greeting).
                if c == "ping" {
                    heartbeats += 1
                    stats.heartbeats += 1
                }
            case .event(let m):
                switch BenchEvent.parse(m.data) {
                case .delta:
                    var k = 0
                    BenchEvent.forEachToken(m.data) { t, n in
                        delta(t: t, n: n, now: now)
                        k += 1
                    }
                    stats.deltaEvents += 1
                    if k > 1 { stats.mergedDeltas += k }
                case .part(let stamp):
                    // Parts are never merged (docs/PROTOCOL.md §5.5): one stamp at most.
                    stats.partEvents += 1
                    if let s = stamp {
                        delta(t: s.t, n: s.n, now: now)
                    } else if now >= stats.windowStart && now < stats.windowEnd {
                        stats.receivedInWindow += 1
                    }
                case .done:
                    if let t0 = stormT0, caughtUpMicros == nil { caughtUpMicros = (lastReplayArrival ?? now) - t0 }
                    finished = true
                    stats.completed += 1
                    drop()
                    onFinished?(self)
                    return
                case .error:
                    stats.errorEvents += 1
                case .other:
                    break
                }
            }
        }
    }

    /// A stamped event (a delta, or a reasoning or argument piece): sent at `t`, index `n`.
    @inline(__always)
    private func delta(t: UInt64, n: Int, now: UInt64) {
        stats.received += 1
        if n <= lastN {
            stats.duplicates += 1
            return
        }
        if n > lastN + 1 { stats.lost += n - lastN - 1 }
        lastN = n
        if t >= stats.measureFromMicros { stats.latency.record(now > t ? now - t : 0) }
        if now >= stats.windowStart && now < stats.windowEnd { stats.receivedInWindow += 1 }
        if let t0 = stormT0, caughtUpMicros == nil {
            if t <= t0 {
                lastReplayArrival = now
            } else {
                caughtUpMicros = (lastReplayArrival ?? now) > t0 ? (lastReplayArrival ?? now) - t0 : 0
            }
        }
    }

    /// At the end of a run: stamped events of a stream whose last stamp is `tokens` not
    /// received by then count as late (the run's deadline), apart from the gaps counted as
    /// lost on arrival.
    func settle(tokens: Int) {
        if lastN < tokens { stats.late += tokens - lastN }
        if !finished { stats.unfinished += 1 }
    }
}

/// nchan's producer: publishes each delta with `POST /pub/<channel>` on one keep-alive,
/// pipelined HTTP connection per channel (the send time is embedded when the request
/// is queued).
final class Publisher {
    let channel: String
    private let conn: HTTPConnection
    private(set) var inFlight = 0
    private(set) var errors = 0
    private let host: String

    init?(loop: EventLoop, src: in_addr_t, target: Target, channel: String) {
        guard let c = HTTPConnection(loop: loop, src: src, dst: target.dst) else { return nil }
        conn = c
        self.channel = channel
        host = "\(target.host):\(target.port)"
        c.onHead = { [unowned self] status, _ in
            if status != 201 && status != 202 { self.errors += 1 }
        }
        c.onResponseEnd = { [unowned self] in
            self.inFlight -= 1
            self.conn.expectResponse()
        }
        c.onClose = { [unowned self] _ in self.errors += self.inFlight; self.inFlight = 0 }
    }

    func publish(_ json: String) {
        inFlight += 1
        conn.send("POST /pub/\(channel) HTTP/1.1\r\nHost: \(host)\r\nContent-Type: application/json\r\nContent-Length: \(json.utf8.count)\r\n\r\n\(json)")
    }

    func close() { conn.close() }
}

/// Paces nchan publishing: channel i publishes at `rate` events/s, phases spread over
/// one period (like the relay's generations, which start staggered), `tokens` events
/// then `done`. Event k of a channel is due at its start + k / `rate` and carries that
/// due time as its stamp (as the relay's `BenchUpstream` does), so this 1 ms tick's own
/// lateness counts in nchan's latency as the relay's upstream timer counts in the relay's.
/// Due times are read off CLOCK_REALTIME µs (`nowMicros`), not the loop's coarse clock.
/// The events are `answer`'s: stamped deltas, or the relay's part-heavy bench answer
/// (`BenchPartsAnswer`, one per channel).
final class PublishSchedule {
    private let publishers: [Publisher]
    private let rate: Double
    private let tokens: Int
    private let answer: BenchAnswer
    private var partsAnswers: [BenchPartsAnswer]
    private var sent: [Int]
    /// Each channel's start, CLOCK_REALTIME µs.
    private var startMicros: [UInt64]
    private var timer: LoopTimer?
    private let loop: EventLoop
    private(set) var finished = 0
    var onAllDone: (() -> Void)?

    init(loop: EventLoop, publishers: [Publisher], rate: Double, tokens: Int, answer: BenchAnswer = .text) {
        self.loop = loop
        self.publishers = publishers
        self.rate = rate
        self.tokens = tokens
        self.answer = answer
        partsAnswers = answer == .parts ? Array(repeating: BenchPartsAnswer(), count: publishers.count) : []
        sent = [Int](repeating: 0, count: publishers.count)
        startMicros = [UInt64](repeating: 0, count: publishers.count)
    }

    var totalErrors: Int { publishers.reduce(0) { $0 + $1.errors } }

    func start() {
        let period = max(1.0, 1000.0 / rate)
        let now = nowMicros()
        for i in publishers.indices {
            startMicros[i] = now + UInt64(i % max(1, Int(period))) * 1000
        }
        timer = LoopTimer(loop: loop, repeating: true) { [unowned self] in self.tick() }
        timer?.schedule(afterMs: 1)
    }

    private func tick() {
        let now = nowMicros()
        for i in publishers.indices where sent[i] <= tokens {
            guard now > startMicros[i] else { continue }
            let due = min(tokens, Int(Double(now - startMicros[i]) * rate / 1_000_000))
            while sent[i] < due {
                sent[i] += 1
                let dueAt = startMicros[i] + UInt64(Double(sent[i]) * 1_000_000 / rate)
                switch answer {
                case .text: publishers[i].publish(BenchEvent.delta(micros: min(now, dueAt), k: sent[i]))
                case .parts: publishers[i].publish(partsAnswers[i].event(sent[i] - 1, micros: min(now, dueAt)).json)
                }
            }
            if sent[i] == tokens {
                publishers[i].publish(BenchEvent.done(tokens: answer.stamps(events: tokens)))
                sent[i] += 1
                finished += 1
            }
        }
        if finished == publishers.count {
            timer?.cancel()
            onAllDone?()
        }
    }

    func stop() { timer?.cancel() }
}
