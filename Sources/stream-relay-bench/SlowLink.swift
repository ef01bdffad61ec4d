import Foundation
import RelayCore
import RelayLoop
import RelayUpstream

/// One reader of a `slow-link` stream: an `HTTPConnection` (throttled, or not) whose
/// body goes through `SSEParser`; keeps every event (id, data), the answer's text, and
/// when the terminal event arrived.
final class LinkReader {
    let connection: HTTPConnection
    private var parser = SSEParser()
    /// Every SSE event received, in order.
    private(set) var events: [SSEMessage] = []
    /// The `content` of every delta, concatenated.
    private(set) var text = ""
    /// Response status (0 until the head arrived).
    private(set) var status = 0
    /// When the terminal event (`done` or `error`) arrived, µs (`nowMicros`).
    private(set) var terminalAt: UInt64?
    private(set) var failure: String?

    init?(loop: EventLoop, src: in_addr_t, dst: sockaddr_in, receiveBuffer: Int?, bytesPerSecond: Int?) {
        guard let c = HTTPConnection(loop: loop, src: src, dst: dst, receiveBuffer: receiveBuffer) else { return nil }
        connection = c
        if let r = bytesPerSecond { c.throttle(bytesPerSecond: r) }
        c.onHead = { [unowned self] s, _ in self.status = s }
        c.onBody = { [unowned self] buf in self.body(buf) }
        c.onResponseEnd = { [unowned self] in if self.terminalAt == nil { self.failure = self.failure ?? "response ended without done" } }
        c.onClose = { [unowned self] err in if self.terminalAt == nil { self.failure = self.failure ?? (err ?? "closed before done") } }
    }

    var finished: Bool { terminalAt != nil || failure != nil }

    private func body(_ buf: UnsafeRawBufferPointer) {
        let items: [SSEParser.Item]
        do { items = try parser.feed(buf) } catch {
            failure = "SSE parse: \(error)"
            connection.close()
            return
        }
        for case .event(let m) in items {
            events.append(m)
            switch try? StreamEvent(json: m.data) {
            case .delta(let content)?: text += content
            case .part?: break
            case .done?, .error?:
                if terminalAt == nil { terminalAt = nowMicros() }
            case nil: failure = failure ?? "not a stream event: \(m.data.prefix(80))"
            }
        }
    }
}

extension Runner {
    /// `slow-link`: the 3,019-token NDA answer (`SimulatedDocuments`, the
    /// relay's `simulated` model) generated at `--rate` tokens/s to a reader throttled to
    /// `--link-rate` bytes/s with a `--receive-buffer`-byte `SO_RCVBUF` (a GPRS/EDGE-class
    /// link), next to a fast reader of the same stream. Relay: the slow reader's POST
    /// starts the generation and the fast reader resumes it with `Last-Event-ID: 0`;
    /// nchan: both subscribe, then the load generator publishes the relay's delta JSON
    /// for each token at the same rate, then the relay's `done`. Reports the bytes on the
    /// slow socket (HTTP head, chunk framing, SSE) against the answer's text bytes, the
    /// events on each link, and how long after the generation's end (the fast reader's
    /// `done`) the slow reader got its `done`. Passes when both readers got the whole
    /// answer exactly, the slow one in increasing ids.
    func slowLinkScenario() -> Bool {
        guard let doc = SimulatedDocuments.document(forModel: SimulatedDocuments.englishModel) else { return false }
        var tokens = SimulatedTokenizer.tokens(doc)
        if let cap = opts.maxTokens { tokens = Array(tokens.prefix(cap)) }
        log("scenario slow-link target \(target.kind.rawValue): \(tokens.count) tokens at \(opts.rate) tokens/s, slow reader at \(opts.linkBytesPerSecond) bytes/s with SO_RCVBUF \(opts.receiveBuffer) bytes, and a fast reader")
        let id = Runner.newID(0)
        let dst = target.dst
        func reader(slow: Bool) -> LinkReader? {
            LinkReader(loop: loop, src: sources.take(), dst: dst, receiveBuffer: slow ? opts.receiveBuffer : nil,
                       bytesPerSecond: slow ? opts.linkBytesPerSecond : nil)
        }
        guard let slow = reader(slow: true) else { log("  connect failed"); return false }
        var fast: LinkReader?
        var serverCPU = CPUWindow(opts.serverPids)
        serverCPU.start()
        let generationS = Double(tokens.count) / max(0.001, opts.rate)
        let started = monoMs()
        var schedule: SlowLinkPublisher?
        switch target.kind {
        case .relay:
            let maxTokens = opts.maxTokens.map { ",\"max_tokens\":\($0)" } ?? ""
            let body = "{\"messages\":[{\"role\":\"user\",\"content\":\"Draft a mutual NDA.\"}],\"model\":\"\(SimulatedDocuments.englishModel)\"\(maxTokens)}"
            slow.connection.send("POST /api/chat/stream HTTP/1.1\r\nHost: \(target.host):\(target.port)\r\nAuthorization: Bearer \(target.token)\r\n"
                                 + "Content-Type: application/json\r\nAccept: text/event-stream\r\nX-Request-Id: \(id)\r\n"
                                 + "Content-Length: \(body.utf8.count)\r\n\r\n" + body)
            // The fast reader joins from the start once the stream exists (its head is
            // slow to arrive on the throttled link: retry a 404).
            let joinBy = monoMs() + 10_000
            while fast?.status != 200 && monoMs() < joinBy {
                spin(timeoutMs: 20)
                if fast == nil || fast!.finished {
                    fast = reader(slow: false)
                    fast?.connection.send(target.subscribeRequest(id: id, create: false, maxTokens: 0, lastEventID: "0"))
                }
                spin(timeoutMs: 30) { fast?.status != 0 || fast?.finished == true }
            }
        case .nchan:
            slow.connection.send(target.subscribeRequest(id: id, create: false, maxTokens: 0, lastEventID: nil))
            fast = reader(slow: false)
            fast?.connection.send(target.subscribeRequest(id: id, create: false, maxTokens: 0, lastEventID: nil))
            spin(timeoutMs: 10_000) { slow.status != 0 && fast?.status != 0 }
            guard let p = Publisher(loop: loop, src: sources.take(), target: target, channel: id) else { log("  publisher connect failed"); return false }
            schedule = SlowLinkPublisher(loop: loop, publisher: p, tokens: tokens, rate: opts.rate)
            schedule?.start()
        }
        guard let fast, fast.status == 200, slow.status != 0 || target.kind == .relay else {
            log("  the readers did not connect (slow HTTP \(slow.status), fast HTTP \(fast?.status ?? 0))")
            return false
        }
        // The generation, then the slow link's tail: generously bounded (a reader that
        // gets one event per token at 4 KB/s needs ≈ 40 s after a 20 s answer).
        spin(timeoutMs: UInt64((generationS * 4 + 60) * 1000)) { slow.finished && fast.finished }
        let cpu = serverCPU.split()
        let wallS = Double(monoMs() - started) / 1000
        schedule?.stop()
        slow.connection.close()
        fast.connection.close()

        let textBytes = fast.text.utf8.count
        let wire = slow.connection.bytesReceived
        // Negative when the slow reader's `done` came first (the fast reader's stands in
        // for the generation's end, and it resumed from 0 a moment after the slow one's POST).
        let lagS: Double? = {
            guard let s = slow.terminalAt, let f = fast.terminalAt else { return nil }
            return (Double(s) - Double(f)) / 1_000_000
        }()
        let expected = tokens.joined()
        let ids = slow.events.map(\.lastEventId)
        let relayIDs = ids.compactMap { UInt64($0) }
        let idsIncrease = target.kind == .nchan || (relayIDs.count == ids.count && zip(relayIDs, relayIDs.dropFirst()).allSatisfy { $0 < $1 })
        // Byte for byte (`String ==` would accept canonically equivalent text).
        let exact = fast.text.utf8.elementsEqual(expected.utf8) && slow.text.utf8.elementsEqual(expected.utf8)
        let ok = exact && idsIncrease && slow.failure == nil && fast.failure == nil && lagS != nil
        if let f = slow.failure { log("  slow reader: \(f)") }
        if let f = fast.failure { log("  fast reader: \(f)") }
        if !exact { log("  text differs: fast \(fast.text.utf8.count) bytes, slow \(slow.text.utf8.count), answer \(expected.utf8.count)") }
        let ratio = textBytes > 0 ? Double(wire) / Double(textBytes) : 0
        log("  → slow link: \(wire) bytes on the wire for \(textBytes) bytes of text (\(fmt(ratio, 2))×), \(slow.events.count) events (fast link: \(fast.events.count), \(fast.connection.bytesReceived) bytes), "
            + "last token \(lagS.map { fmt($0, 2) } ?? "n/a") s after the generation's end, whole answer on both links: \(exact), server CPU \(fmt(cpu?.total))% over \(fmt(wallS)) s")
        var d: [String: Any] = [
            "scenario": "slow-link", "tokens": tokens.count, "rate": opts.rate,
            "link_bytes_per_s": opts.linkBytesPerSecond, "receive_buffer": opts.receiveBuffer,
            "wire_bytes": wire, "text_bytes": textBytes, "wire_per_text": ratio,
            "slow_events": slow.events.count, "fast_events": fast.events.count, "fast_wire_bytes": fast.connection.bytesReceived,
            "exact": exact, "ok": ok, "wall_s": wallS,
        ]
        if let lagS { d["last_token_after_end_s"] = lagS }
        if let c = cpu { d["server_cpu_pct"] = c.total }
        emit(d)
        return ok
    }
}

/// nchan's producer for `slow-link`: the relay's delta JSON of each token, published at
/// `rate` tokens/s on one channel, then the relay's `done`.
final class SlowLinkPublisher {
    private let loop: EventLoop
    private let publisher: Publisher
    private let tokens: [String]
    private let rate: Double
    private var sent = 0
    private var startMs: UInt64 = 0
    private var timer: LoopTimer?

    init(loop: EventLoop, publisher: Publisher, tokens: [String], rate: Double) {
        self.loop = loop
        self.publisher = publisher
        self.tokens = tokens
        self.rate = rate
    }

    func start() {
        startMs = loop.nowMs
        timer = LoopTimer(loop: loop, repeating: true) { [unowned self] in self.tick() }
        timer?.schedule(afterMs: 1)
    }

    private func tick() {
        let due = min(tokens.count, Int(Double(loop.nowMs - startMs) * rate / 1000.0) + 1)
        while sent < due {
            publisher.publish(StreamEvent.delta(tokens[sent]).json)
            sent += 1
        }
        if sent == tokens.count {
            let usage = Usage(promptTokens: 8, completionTokens: tokens.count)
            publisher.publish(StreamEvent.done(finishReason: "stop", usage: usage).json)
            sent += 1
            timer?.cancel()
        }
    }

    func stop() {
        timer?.cancel()
        publisher.close()
    }
}
