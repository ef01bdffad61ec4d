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
    /// Whether a client behind the retained window is caught up from the text key
    /// (`RELAY_LOSSLESS_RESUME`, docs/PROTOCOL.md §6) instead of `409 resume_gap`.
    var lossless: Bool { get }
    /// Reads the retained events of stream `id` after `seq` (`XRANGE (<seq>-0 +`), in seq order.
    /// `wanted` is asked when a read that waited for a replay slot (`RELAY_REPLAY_CONCURRENCY`)
    /// gets one: false (its client left meanwhile) skips the read and `done` is not called.
    func readEvents(_ id: RequestID, after seq: UInt64, wanted: @escaping () -> Bool,
                    done: @escaping (Result<[SequencedEvent], RedisFailure>) -> Void)
    /// Reads the text of events `from+1 … to` of stream `id` from its text key
    /// (docs/DATA_MODEL.md §4); `nil` when it has expired.
    /// `wanted`: as for `readEvents`.
    func readCatchUp(_ id: RequestID, from: UInt64, to: UInt64, wanted: @escaping () -> Bool,
                     done: @escaping (Result<String?, RedisFailure>) -> Void)
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
    /// Counts events sent as one lossless catch-up delta (k events count k - 1).
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
/// `StreamHub`). Loop thread only.
protocol GenerationHost: AnyObject {
    /// The worker's loop (timers, `nowMs`).
    var loop: EventLoop { get }
    /// Appends.
    var log: EventLog { get }
    /// Time to first token, seconds.
    func firstToken(afterSeconds s: Double)
    /// The upstream ended the generation with an error (`relay_upstream_errors_total`).
    func upstreamFailed()
    /// Counts events appended (flushed to `/metrics` on each sweep).
    func appended(events: Int)
    /// The generation ended (any way): settle its budget reservation to `tokens`
    /// (prompt + completion really generated), once.
    func settle(_ g: Generation, tokens: Int)
    /// The generation is over and its appends are settled; the host forgets it.
    func generationEnded(_ g: Generation)
    /// `event`'s `XADD` was acknowledged (called in seq order, never before): deliver it
    /// to this worker's subscriptions of the stream as a live event, without waiting for
    /// the `PUBLISH` to come back over pub/sub.
    func acknowledged(_ g: Generation, event: SequencedEvent)
}
