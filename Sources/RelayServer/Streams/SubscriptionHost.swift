import Foundation
import RelayCore
import RelayLoop
import RelayRedis
import RelayEventStore
import RelayHTTP

/// What a `Subscription` may ask of the worker that hosts it (implemented by
/// `StreamHub`; in tests, by an in-memory host): the clock and timers, the reads of the
/// event log, the live channel, and reports back. Loop thread only.
protocol SubscriptionHost: AnyObject {
    /// The worker's loop, for timers.
    var loop: EventLoop { get }
    /// The loop clock, ms (monotonic).
    var nowMs: UInt64 { get }
    /// Reads the events of stream `id` after `seq`, in seq order (`EventLog.read`: the
    /// retained entries, preceded by the original deltas from the text key when the
    /// window moved past `seq`), or the gap that ends the read.
    /// `wanted` is asked when a read that waited for a replay slot (`RELAY_REPLAY_CONCURRENCY`)
    /// gets one: false (its client left meanwhile) skips the read and `done` is not called.
    func readEvents(_ id: RequestID, after seq: UInt64, wanted: @escaping () -> Bool,
                    done: @escaping (Result<EventRead, RedisFailure>) -> Void)
    /// Subscribes to stream `id`'s live channel; `confirmed` runs once Redis confirms it.
    func subscribeLive(_ id: RequestID, confirmed: @escaping () -> Void)
    /// Test fault injection (`RELAY_DEBUG_REPLAY_DELAY_MS`): hold each first replay back this long, ms.
    var replayStallMs: UInt64 { get }
    /// The subscription ended (any way); the host forgets it.
    func subscriptionEnded(_ s: Subscription)
    /// A Redis read of `s` failed; the host retries its replay shortly.
    func redisTrouble(_ s: Subscription, _ f: RedisFailure)
    /// `true` (and the connection is closed) when `s` has more unsent output than allowed.
    func isSlowConsumer(_ s: Subscription) -> Bool
    /// Counts events written to clients (flushed to `/metrics` on each sweep).
    func delivered(events: Int)
    /// `s` wrote its stream's final event to its client (no completion webhook for it,
    /// docs/PROTOCOL.md §13).
    func finalEventWritten(_ s: Subscription)
    /// Counts deltas merged into a larger one for a backed-up client.
    func merged(events: Int)
    /// Counts events read back from the text key (a lossless catch-up).
    func caughtUp(events: Int)
    /// Thresholds of the slow-link coalescing (`RELAY_COALESCE_*`).
    var slowLinkLimits: SlowLinkCoalescer.Limits { get }
    /// The highest acknowledged seq of stream `id`'s generation running on this worker,
    /// `nil` when none runs here (`LiveSource.attach`).
    func localAckedSeq(_ id: RequestID) -> UInt64?
}

extension SubscriptionHost {
    func finalEventWritten(_ s: Subscription) {}
}

/// What a `Generation` may ask of the worker that hosts it (implemented by
/// `StreamHub`; in the streams core's tests, by an in-memory host): the clock, the
/// answer's writer, and reports back. Loop thread only.
protocol GenerationHost: AnyObject {
    /// The loop clock, ms (monotonic).
    var nowMs: UInt64 { get }
    /// The writer of answer `id`'s events (`StreamAppender` on the event log); `taken`: a
    /// takeover it continues (appends after its `topSeq`, under its epoch), `nil` for a
    /// new stream.
    func writer(for id: RequestID, continuing taken: EventLog.TakenStream?) -> any AnswerWriter
    /// Time to first token, seconds.
    func firstToken(afterSeconds s: Double)
    /// The upstream ended the generation with an error (`relay_upstream_errors_total`).
    func upstreamFailed()
    /// Counts events appended (flushed to `/metrics` on each sweep).
    func appended(events: Int)
    /// The generation ended (any way): settle its budget reservation to `tokens`
    /// (prompt + completion really generated), once.
    func settle(_ g: Generation, tokens: Int)
    /// `g`'s lease is no longer known held (its loop clock passed the last confirmed lease:
    /// a stall): confirm its lease and session slot before it sends anything more
    /// (`Generation.ownershipConfirmed`), or stop it (`leaseTakenOver`, `abort`).
    func confirmOwnership(_ g: Generation)
    /// The generation is over and its appends are settled; the host forgets it.
    func generationEnded(_ g: Generation)
    /// `event`'s `XADD` was acknowledged (called in seq order, never before): deliver it
    /// to this worker's subscriptions of the stream as a live event, without waiting for
    /// the `PUBLISH` to come back over pub/sub.
    func acknowledged(_ g: Generation, event: SequencedEvent)
    /// Unix time, ms (a retained answer's times).
    func wallMs() -> UInt64
    /// How a finished answer's retention went (`RetentionOutcome`).
    func answerRetained(_ outcome: RetentionOutcome)
}

extension GenerationHost {
    func wallMs() -> UInt64 { UInt64(max(0, Int64(Date().timeIntervalSince1970 * 1000))) }
    func answerRetained(_ outcome: RetentionOutcome) {}
}
