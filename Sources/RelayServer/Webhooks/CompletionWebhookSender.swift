import RelayAuth
import RelayCore
import RelayEventStore
import RelayLoop
import RelayUpstream

/// Sends the completion webhooks (docs/PROTOCOL.md §13) of the shared outbox
/// (`CompletionWebhookOutbox`), on worker 0's loop of every instance: any instance
/// sends any answer's webhook, so one that dies mid-retry leaves its messages to the
/// others once their claims lapse.
///
/// Every `pollMs` it claims the due messages (at most `maxInFlight` in flight) for
/// `claimMs` (twice the attempt timeout plus 5 s), then for each:
/// 1. reads the stream (`CompletionWebhookOutbox.subject`): gone → dropped
///    (`expired`); still running (its final append is not stored yet) → due again after
///    the grace; a client read its final event → no webhook (`skipped`);
/// 2. POSTs the message (`CompletionWebhookMessage`) signed as Standard Webhooks 1.0.0
///    says (`StandardWebhookSigner`; a fresh `webhook-timestamp` per attempt, the same
///    `webhook-id` and body), through libcurl's multi interface on the loop (nothing
///    blocks), with `RELAY_COMPLETION_WEBHOOK_TIMEOUT` as the whole-attempt timeout;
/// 3. settles it as `CompletionWebhookRetry` decides: delivered, retried after a backoff,
///    or dropped (410 Gone, or the last attempt failed), with a metric and a log line.
///
/// Loop thread only.
final class CompletionWebhookSender {
    private let loop: EventLoop
    private let outbox: CompletionWebhookOutbox
    private let metrics: Metrics
    private let signer: StandardWebhookSigner
    private let url: String
    private let timeoutMs: Int
    private let graceMs: Int
    private let retry: CompletionWebhookRetry
    private let instance: String
    private let wallMs: @Sendable () -> Int64
    private let isConnected: () -> Bool
    private let multi: CurlMulti
    private var timer: LoopTimer?
    private var inFlight: [String: Attempt] = [:]
    private var claiming = false
    private var claims: UInt64 = 0
    private var stopped = false
    private var rng = SystemRandomNumberGenerator()

    /// How often due messages are looked for, ms.
    static let pollMs: UInt64 = 250
    /// Messages one instance sends at once.
    static let maxInFlight = 16
    /// How long a claim lasts, ms: twice the attempt timeout plus 5 s, so the stream read
    /// before the POST and the settlement after it fit well within it and a live sender
    /// never loses its claim; a dead sender's message is claimed again once it lapsed.
    static func claimMs(timeoutMs: Int) -> Int { 2 * timeoutMs + 5_000 }
    /// A message whose stream still runs, or whose stream could not be read, is looked at
    /// again after at least this long, ms.
    static let recheckMs = 1_000

    /// - Parameters:
    ///   - isConnected: whether the worker's Redis channel can take commands now.
    /// - Throws: `CurlError` when libcurl cannot be set up.
    init(loop: EventLoop, outbox: CompletionWebhookOutbox, metrics: Metrics, url: String, signer: StandardWebhookSigner,
         timeoutMs: Int, graceMs: Int, retry: CompletionWebhookRetry, instance: String,
         wallMs: @escaping @Sendable () -> Int64, isConnected: @escaping () -> Bool) throws {
        self.loop = loop
        self.outbox = outbox
        self.metrics = metrics
        self.url = url
        self.signer = signer
        self.timeoutMs = timeoutMs
        self.graceMs = graceMs
        self.retry = retry
        self.instance = instance
        self.wallMs = wallMs
        self.isConnected = isConnected
        multi = try CurlMulti(loop: loop)
        timer = LoopTimer(loop: loop, repeating: true) { [unowned self] in self.poll() }
    }

    /// Starts looking for due messages.
    func start() { timer?.schedule(afterMs: Self.pollMs) }

    /// Stops: no more claims; attempts in flight are aborted (their claims lapse and
    /// another instance, or this one after a restart, sends them again with the same id).
    func stop() {
        stopped = true
        timer?.cancel()
        timer = nil
        for a in inFlight.values { a.transfer?.abort() }
        inFlight.removeAll()
    }

    private func poll() {
        guard !stopped, !claiming, isConnected() else { return }
        let room = Self.maxInFlight - inFlight.count
        guard room > 0 else { return }
        claiming = true
        claims &+= 1
        let token = "\(instance)/\(UInt64.random(in: 0...UInt64.max, using: &rng))/\(claims)"
        outbox.claim(token: token, claimMs: Self.claimMs(timeoutMs: timeoutMs), limit: room) { [self] claimed in
            claiming = false
            guard !stopped else { return }
            for c in claimed where inFlight[c.id] == nil { begin(c, token: token) }
        }
    }

    private func begin(_ c: CompletionWebhookOutbox.Claimed, token: String) {
        let a = Attempt(claimed: c, token: token)
        inFlight[c.id] = a
        outbox.subject(StreamKeys(c.scopedID)) { [self] subject in
            guard !stopped, inFlight[c.id] === a else { return }
            switch subject {
            case .unknown:
                settle(a, .later(afterMs: Self.recheckMs))
            case .gone:
                drop(a, reason: "expired")
            case .unreadable(let e):
                switch e.kind {
                case .noKeys, .unknownKid:
                    // Another instance may hold the key (a rolling switch or rotation): marked so
                    // that instances without keys leave it to those with them; dropped as expired
                    // once the stream's keys are gone.
                    Log.warn("completion webhook: the answer's final event needs a key this relay lacks", ["webhookId": c.id, "reason": e.description])
                    settle(a, .needsKeys(afterMs: Self.recheckMs))
                default:
                    // Never a guess at the answer: the message is dropped, loudly.
                    Log.error("completion webhook: the answer's final event does not open", ["webhookId": c.id, "reason": e.description])
                    drop(a, reason: "stored_data_unreadable")
                }
            case .running:
                settle(a, .later(afterMs: max(graceMs, Self.recheckMs)))
            case .ended(let json, let read):
                if read {
                    metrics.add(.completionWebhooksSkipped)
                    Log.debug("completion webhook not sent: a client read the answer's end", ["webhookId": c.id])
                    return settle(a, .done)
                }
                guard let message = CompletionWebhookMessage(scopedID: c.scopedID, sub: c.sub, finalEventJSON: json,
                                                             endedMs: c.endedMs) else {
                    return drop(a, reason: "no_final_event")
                }
                post(a, message)
            }
        }
    }

    private func post(_ a: Attempt, _ m: CompletionWebhookMessage) {
        let body = Array(m.body.utf8)
        // The body is the same bytes on every attempt and instance (the end time is the
        // outbox record's); `webhook-timestamp` is the attempt's (Standard Webhooks).
        let timestamp = wallMs() / 1000
        let request = UpstreamTransfer.Request(
            url: url,
            headers: ["Content-Type: application/json", "User-Agent: stream-relay",
                      "webhook-id: \(m.id)", "webhook-timestamp: \(timestamp)",
                      "webhook-signature: \(signer.signature(id: m.id, timestamp: timestamp, body: body))"],
            body: body, connectTimeoutMs: min(timeoutMs, 10_000), timeoutMs: timeoutMs,
            protocols: url.lowercased().hasPrefix("https://") ? "https" : "http")
        do {
            let t = try UpstreamTransfer(request: request, multi: multi)
            t.delegate = a
            a.transfer = t
            a.onEnd = { [unowned self] result in self.attempted(a, result) }
            try t.start()
        } catch {
            attempted(a, .noAnswer(reason: "cannot start the request: \(error)"))
        }
    }

    private func attempted(_ a: Attempt, _ result: CompletionWebhookRetry.Attempt) {
        a.transfer = nil
        a.onEnd = nil
        guard !stopped, inFlight[a.claimed.id] === a else { return }
        let number = a.claimed.attempts + 1
        switch retry.next(afterAttempt: number, result, random: rng.next()) {
        case .delivered:
            metrics.add(.completionWebhookAttemptsOK)
            metrics.add(.completionWebhooksDelivered)
            Log.info("completion webhook delivered", ["webhookId": a.claimed.id, "attempt": number])
            settle(a, .done)
        case .retry(let ms):
            metrics.add(.completionWebhookAttemptsFailed)
            metrics.add(.completionWebhookRetries)
            Log.warn("completion webhook attempt failed; retrying",
                     ["webhookId": a.claimed.id, "attempt": number, "result": describe(result), "retryInMs": ms])
            settle(a, .retry(afterMs: ms))
        case .drop(let why):
            metrics.add(.completionWebhookAttemptsFailed)
            drop(a, reason: why.rawValue, attempt: number, result: result)
        }
    }

    private func drop(_ a: Attempt, reason: String, attempt: Int? = nil, result: CompletionWebhookRetry.Attempt? = nil) {
        metrics.add(.completionWebhooksDropped)
        var fields: [String: Any] = ["webhookId": a.claimed.id, "reason": reason]
        if let attempt { fields["attempts"] = attempt }
        if let result { fields["result"] = describe(result) }
        Log.warn("completion webhook dropped", fields)
        settle(a, .done)
    }

    private func settle(_ a: Attempt, _ s: CompletionWebhookOutbox.Settlement) {
        outbox.settle(id: a.claimed.id, token: a.token, s) { [self] ok in
            if inFlight[a.claimed.id] === a { inFlight[a.claimed.id] = nil }
            if ok == false {
                Log.warn("completion webhook claim had lapsed; another instance holds it", ["webhookId": a.claimed.id])
            }
        }
    }

    private func describe(_ r: CompletionWebhookRetry.Attempt) -> String {
        switch r {
        case .answered(let status): return "HTTP \(status)"
        case .noAnswer(let reason): return reason
        }
    }

    /// One claimed message being looked at or sent; the transfer's delegate (the response
    /// body is read and discarded, up to `maxResponseBytes`).
    private final class Attempt: UpstreamTransferDelegate {
        let claimed: CompletionWebhookOutbox.Claimed
        let token: String
        var transfer: UpstreamTransfer?
        var onEnd: ((CompletionWebhookRetry.Attempt) -> Void)?
        private var received = 0
        static let maxResponseBytes = 64 * 1024

        init(claimed: CompletionWebhookOutbox.Claimed, token: String) {
            self.claimed = claimed
            self.token = token
        }

        func transfer(_ transfer: UpstreamTransfer, didReceive bytes: UnsafeRawBufferPointer) -> Bool {
            received += bytes.count
            guard received <= Self.maxResponseBytes else {
                // The status is known: judge the attempt by it, without reading the rest.
                onEnd?(.answered(status: transfer.responseStatus))
                return false
            }
            return true
        }

        func transfer(_ transfer: UpstreamTransfer, didCompleteWith completion: UpstreamTransfer.Completion) {
            switch completion {
            case .finished(let status): onEnd?(.answered(status: status))
            case .failed(let code, let message): onEnd?(.noAnswer(reason: "curl \(code): \(message)"))
            }
        }
    }
}
