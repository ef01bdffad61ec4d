import Foundation
import RelayCore
import RelayHTTP
import RelayLoop
import RelayRedis
import RelayConfiguration
import RelayEventStore
@testable import RelayServer

/// A `StreamSink` that records the SSE text a subscription writes, in order.
final class RecordingSink: StreamSink {
    var onClose: (() -> Void)?
    /// Every byte written, as text.
    private(set) var text = ""
    private(set) var ended = false
    private(set) var aborted = false
    /// What the slow-consumer and slow-link checks read.
    var pendingOutputBytes = 0
    var unsentBytes = 0

    @discardableResult func write(_ s: String) -> Bool {
        guard !ended, !aborted else { return false }
        text += s
        return true
    }

    @discardableResult func write(_ frame: WireFrame) -> Bool {
        guard !ended, !aborted else { return false }
        text += String(decoding: frame.bytes[frame.body], as: UTF8.self)
        return true
    }

    func endStream() { ended = true; onClose = nil }
    func abort() { aborted = true; onClose = nil }

    /// The client closes the connection.
    func closeByClient() { let cb = onClose; onClose = nil; cb?() }

    /// The SSE events written, as (id, data) pairs; comments skipped.
    var events: [(id: UInt64, data: String)] {
        text.components(separatedBy: "\n\n").compactMap { block in
            var id: UInt64?
            var data: String?
            for line in block.split(separator: "\n") {
                if line.hasPrefix("id: ") { id = UInt64(line.dropFirst(4)) }
                if line.hasPrefix("data: ") { data = String(line.dropFirst(6)) }
            }
            guard let id, let data else { return nil }
            return (id, data)
        }
    }

    var ids: [UInt64] { events.map(\.id) }
}

/// A `SubscriptionHost` backed by memory: a retained window of events, the stream's
/// text per seq (the lossless catch-up), a live channel whose confirmation and reads the
/// test answers when it chooses, and a virtual clock.
final class InMemoryStreamHost: SubscriptionHost {
    let loop: EventLoop
    var nowMs: UInt64 = 1_000
    var lossless = true
    var replayStallMs: UInt64 = 0
    /// The retained events (the Redis stream's window), in seq order.
    var retained: [SequencedEvent] = []
    /// Delta text by seq (the text key), for catch-up.
    var textBySeq: [UInt64: String] = [:]
    /// Reads wait here until `answerReads()` when false; answered at once when true.
    var answerReadsAtOnce = true
    private var pendingReads: [() -> Void] = []
    /// Confirmations of live-channel subscriptions not yet given.
    private var pendingConfirmations: [() -> Void] = []
    /// Read failures to inject, one per read.
    var failNextReads = 0
    private(set) var ended: [Subscription] = []
    private(set) var troubled = 0
    private(set) var readCount = 0
    let sweeper: ConnectionSweeper
    var limits = SlowLinkCoalescer.Limits()

    init(config: RelayConfig = RelayConfig()) throws {
        loop = try EventLoop()
        sweeper = ConnectionSweeper(settings: config.streamSettings, metrics: Metrics(), outage: RedisOutageWatch(loop: loop))
    }

    /// `EventLog.read` in memory: the retained window after `seq`, preceded by the
    /// original deltas from `textBySeq` when the window moved past `seq` (the same
    /// continuity decision, `CatchUpEvents`).
    func readEvents(_ id: RequestID, after seq: UInt64, wanted: @escaping () -> Bool,
                    done: @escaping (Result<EventRead, RedisFailure>) -> Void) {
        let read = { [unowned self] in
            self.readCount += 1
            if self.failNextReads > 0 {
                self.failNextReads -= 1
                return done(.failure(.disconnected("connection lost")))
            }
            let events = self.retained.filter { $0.seq > seq }
            switch CatchUpEvents.continuity(after: seq, events: events, lossless: self.lossless) {
            case .complete: done(.success(.events(events, caughtUp: 0)))
            case .gap(let to): done(.success(.gap(to: to)))
            case .catchUp(let to):
                var deltas: [SequencedEvent] = []
                for s in (seq + 1)...to {
                    guard let t = self.textBySeq[s] else { return done(.success(.gap(to: to))) }
                    deltas.append(SequencedEvent(seq: s, json: StreamEvent.delta(t).json))
                }
                done(.success(.events(deltas + events, caughtUp: deltas.count)))
            }
        }
        answerReadsAtOnce ? read() : pendingReads.append(read)
    }

    func subscribeLive(_ id: RequestID, confirmed: @escaping () -> Void) { pendingConfirmations.append(confirmed) }

    /// Redis confirms the live-channel subscriptions asked for so far.
    func confirmSubscriptions() {
        let c = pendingConfirmations
        pendingConfirmations.removeAll()
        c.forEach { $0() }
    }

    /// Answers the reads held so far.
    func answerReads() {
        let r = pendingReads
        pendingReads.removeAll()
        r.forEach { $0() }
    }

    func subscriptionEnded(_ s: Subscription) { ended.append(s) }
    func redisTrouble(_ s: Subscription, _ f: RedisFailure) { troubled += 1 }
    func isSlowConsumer(_ s: Subscription) -> Bool { sweeper.isSlowConsumer(s, nowMs: nowMs) }
    func delivered(events: Int) {}
    func merged(events: Int) {}
    func caughtUp(events: Int) {}
    var slowLinkLimits: SlowLinkCoalescer.Limits { limits }
    func localAckedSeq(_ id: RequestID) -> UInt64? { nil }
}

/// A stream of `deltas` deltas `"t1 "`, `"t2 "`, … then `done` (seq `deltas + 1`).
func answer(deltas: Int) -> [SequencedEvent] {
    var out = (1...deltas).map { SequencedEvent(seq: UInt64($0), json: StreamEvent.delta("t\($0) ").json) }
    out.append(SequencedEvent(seq: UInt64(deltas + 1),
                              json: StreamEvent.done(finishReason: "stop", usage: Usage(promptTokens: 3, completionTokens: deltas)).json))
    return out
}
