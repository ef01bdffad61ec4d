import Foundation
import RelayCore

/// What one stream looked like from a client that resumes on every connection loss.
public struct ResumedStreamResult: Sendable {
    public var requestID: String
    /// Delta text, in seq order, each seq once.
    public var text = ""
    /// The terminal event: `done`, `error:<code>`, or nil when none arrived.
    public var terminal: String?
    /// When the terminal event arrived.
    public var terminalAt: Date?
    /// Connections after the first (random drops, cut connections, timeouts).
    public var resumes = 0
    /// Of those, connections the client dropped on purpose.
    public var drops = 0
    /// Events whose seq had already been received (must be 0).
    public var duplicates = 0
    /// Events that skipped seqs (a lossless catch-up delta stands for several).
    public var catchUps = 0
    /// Connections that ended without a terminal event / that timed out / that failed to connect.
    public var cuts = 0
    public var timeouts = 0
    public var connectFailures = 0
    /// Bytes of SSE body received (all connections).
    public var bytes = 0
    /// HTTP statuses other than 200 seen on (re)connects.
    public var refusals: [Int] = []
    /// Their bodies (first 120 bytes each).
    public var refusalBodies: [String] = []
    /// Gave up at the deadline without a terminal event.
    public var hung = false
    /// The last events' ids, for failure messages.
    public var lastSeq: UInt64 = 0
    /// When each new seq arrived, in order (pauses: `TakeoverProofTests`).
    public var arrivals: [Date] = []
    /// The terminal event's JSON.
    public var terminalData: String?
}

/// A client that starts a stream with its own `X-Request-Id` and, whenever the
/// connection ends without `done`/`error` (dropped on purpose, cut by a dying or
/// draining relay, silent for `readTimeout`), resumes it with `Last-Event-ID` —
/// through whatever address it is given (a load balancer), so it lands on any
/// instance. Blocking; run one per thread.
public struct ResumingStreamClient {
    public var port: Int
    public var token: String
    public var maxTokens: Int
    /// Probability that a connection is dropped on purpose after 1…`dropWithin` events.
    public var dropProbability = 0.3
    public var dropWithin = 60
    public var readTimeout = 8.0
    /// The whole stream must end before this.
    public var deadline: Date

    public init(port: Int, token: String, maxTokens: Int, deadline: Date) {
        self.port = port
        self.token = token
        self.maxTokens = maxTokens
        self.deadline = deadline
    }

    public func run(requestID: String = Chat.newID()) -> ResumedStreamResult {
        var r = ResumedStreamResult(requestID: requestID)
        var created = false
        var first = true
        var rng = SystemRandomNumberGenerator()
        while Date() < deadline {
            if !first {
                r.resumes += 1
                usleep(UInt32.random(in: 50_000...300_000, using: &rng))   // pacing on purpose: the client's think time before a resume
            }
            first = false
            let c: SSEConnection
            do {
                if created {
                    c = try Chat.resume(port: port, token: token, requestID: requestID, lastEventID: String(r.lastSeq))
                } else {
                    // A retried POST with the same id resumes (from the start) if the
                    // first one did create the stream; it never starts a second one.
                    c = try Chat.start(port: port, token: token, requestID: requestID, maxTokens: maxTokens)
                }
            } catch {
                r.connectFailures += 1
                continue
            }
            defer { c.close() }
            guard c.status == 200 else {
                r.refusals.append(c.status)
                var body: [UInt8] = []
                while body.count < 120, let chunk = try? c.readBody(timeout: 2) { body += chunk }
                r.refusalBodies.append(String(decoding: body.prefix(120), as: UTF8.self))
                if c.status == 404 && created {
                    r.terminal = "http:404"
                    r.terminalAt = Date()
                    return r
                }
                if c.status == 503 || c.status == 502 || c.status == 404 { continue }
                r.terminal = "http:\(c.status)"
                r.terminalAt = Date()
                return r
            }
            created = true
            let dropAfter = Double.random(in: 0..<1, using: &rng) < dropProbability ? Int.random(in: 1...dropWithin, using: &rng) : Int.max
            var seen = 0
            reading: while Date() < deadline {
                let e: SSEMessage?
                do {
                    e = try c.nextEvent(timeout: min(readTimeout, max(0.1, deadline.timeIntervalSinceNow)))
                } catch {
                    r.timeouts += 1
                    break reading   // timed out: reconnect
                }
                guard let e else { r.cuts += 1; break reading }  // the connection ended
                r.bytes += e.data.utf8.count
                let seq = UInt64(e.lastEventId) ?? 0
                let event = try? StreamEvent(json: e.data)
                let terminal: String?
                switch event {
                case .done?: terminal = "done"
                case .error(_, let code, _)?: terminal = "error:\(code)"
                default: terminal = nil
                }
                if seq <= r.lastSeq {
                    // A relay-raised error repeats the last seq (nothing is lost); any
                    // other repeat is a duplicate.
                    if terminal == nil || seq < r.lastSeq { r.duplicates += 1; continue }
                } else {
                    if seq > r.lastSeq + 1 { r.catchUps += 1 }
                    r.lastSeq = seq
                    r.arrivals.append(Date())
                    if case .delta(let t)? = event { r.text += t }
                }
                if let terminal {
                    r.terminal = terminal
                    r.terminalData = e.data
                    r.terminalAt = Date()
                    return r
                }
                seen += 1
                if seen >= dropAfter {
                    r.drops += 1
                    break reading
                }
            }
        }
        r.hung = true
        return r
    }
}
