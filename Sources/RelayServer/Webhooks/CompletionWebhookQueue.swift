import RelayEventStore

/// A worker's side of the completion webhook (docs/PROTOCOL.md §13) on the path of its
/// streams: queues an answer's message when the answer ends, and records that a client
/// read an answer's end. Sending is `CompletionWebhookSender`'s (worker 0). Loop thread only.
final class CompletionWebhookQueue {
    private let outbox: CompletionWebhookOutbox
    private let metrics: Metrics
    private let graceMs: Int
    private let streamTTLms: Int
    private let wallMs: @Sendable () -> Int64

    /// - Parameters:
    ///   - graceMs: how long a client may still read the end before the message is due
    ///     (`RELAY_COMPLETION_WEBHOOK_GRACE`).
    ///   - streamTTLms: how long the "read" mark lives (the stream's TTL, `RELAY_BUFFER_TTL`).
    init(outbox: CompletionWebhookOutbox, metrics: Metrics, graceMs: Int, streamTTLms: Int,
         wallMs: @escaping @Sendable () -> Int64) {
        self.outbox = outbox
        self.metrics = metrics
        self.graceMs = graceMs
        self.streamTTLms = streamTTLms
        self.wallMs = wallMs
    }

    /// The answer of stream `scopedID` (owner `sub`) is ending: called once per
    /// generation, before its final event is appended, so a relay that dies between the
    /// two still leaves the message queued (the sender waits for the stream's end to be
    /// stored, whoever stores it). Due after the grace.
    func answerEnding(scopedID: String, sub: String) {
        let id = CompletionWebhookMessage.id(scopedID: scopedID)
        outbox.enqueue(id: id, scopedID: scopedID, sub: sub, endedMs: wallMs(), delayMs: graceMs) { [metrics] queued in
            if queued == true { metrics.add(.completionWebhooksQueued) }
            if queued == nil { Log.warn("completion webhook not queued: Redis failed", ["webhookId": id]) }
        }
    }

    /// A client was written the final event of stream `scopedID`.
    func finalEventRead(scopedID: String) {
        outbox.markRead(StreamKeys(scopedID), ttlMs: streamTTLms)
    }
}
