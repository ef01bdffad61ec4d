import RelayTestKit
import XCTest
@testable import RelayStreamLogic

/// Every branch of `AppendQueue`, then a scripted Redis that loses the connection
/// (and with it replies, applied or not) at every step.
final class AppendQueueTests: XCTestCase {
    private func seqs(_ items: [(seq: UInt64, item: String)]) -> [UInt64] { items.map(\.seq) }

    func testAppendsArePipelinedAndAcknowledgedInOrder() {
        var q = AppendQueue<String>()
        XCTAssertEqual(seqs(q.enqueue(seq: 1, "a")), [1])
        XCTAssertEqual(seqs(q.enqueue(seq: 2, "b")), [2])
        XCTAssertEqual(q.inFlight, 2)
        XCTAssertEqual(q.replied(seq: 1, .stored), .wait)
        XCTAssertEqual(q.ackedSeq, 1)
        XCTAssertEqual(q.replied(seq: 2, .stored), .drained)
        XCTAssertEqual(q.backlog, 0)
    }

    func testARetryableFailureWaitsForEveryReplyThenResendsTheUnacknowledged() {
        var q = AppendQueue<String>()
        for s in UInt64(1)...3 { _ = q.enqueue(seq: s, "e\(s)") }
        XCTAssertEqual(q.replied(seq: 1, .stored), .wait)
        XCTAssertEqual(q.replied(seq: 2, .retryable), .wait, "3 is still in flight")
        XCTAssertTrue(q.recovering)
        XCTAssertTrue(q.enqueue(seq: 4, "e4").isEmpty, "nothing is sent while recovering")
        XCTAssertTrue(q.resend().isEmpty, "a reply is still in flight")
        XCTAssertEqual(q.replied(seq: 3, .outOfOrder(lastSeq: 1)), .resend)
        XCTAssertEqual(seqs(q.resend()), [2, 3, 4])
        XCTAssertFalse(q.recovering)
        XCTAssertEqual(q.replied(seq: 2, .stored), .wait)
        XCTAssertEqual(q.replied(seq: 3, .stored), .wait)
        XCTAssertEqual(q.replied(seq: 4, .stored), .drained)
    }

    func testOutOfOrderShowingTheSeqStoredCountsAsAnAcknowledgement() {
        var q = AppendQueue<String>()
        _ = q.enqueue(seq: 1, "a")
        XCTAssertEqual(q.replied(seq: 1, .outOfOrder(lastSeq: 1)), .drained)
        _ = q.enqueue(seq: 2, "b")
        XCTAssertEqual(q.replied(seq: 2, .outOfOrder(lastSeq: 7)), .drained)
        XCTAssertEqual(q.ackedSeq, 2)
    }

    func testOutOfOrderBelowTheSeqOrUnreadableRecovers() {
        var q = AppendQueue<String>()
        _ = q.enqueue(seq: 1, "a")
        XCTAssertEqual(q.replied(seq: 1, .outOfOrder(lastSeq: nil)), .resend)
        XCTAssertEqual(seqs(q.resend()), [1])
        XCTAssertEqual(q.replied(seq: 1, .outOfOrder(lastSeq: 0)), .resend)
    }

    func testASuccessWhileRecoveringStillWaitsForTheResend() {
        var q = AppendQueue<String>()
        _ = q.enqueue(seq: 1, "a")
        _ = q.enqueue(seq: 2, "b")
        XCTAssertEqual(q.replied(seq: 1, .retryable), .wait)
        XCTAssertEqual(q.replied(seq: 2, .stored), .resend, "recovering: not drained even though 2 was stored")
        XCTAssertFalse(q.isDrained)
        XCTAssertTrue(q.resend().isEmpty, "2 stored means 1 was stored: Redis appends in order only")
        XCTAssertTrue(q.isDrained, "the appender reports drained after an empty resend")
    }

    func testAPermanentFailureStopsEverything() {
        var q = AppendQueue<String>()
        _ = q.enqueue(seq: 1, "a")
        _ = q.enqueue(seq: 2, "b")
        XCTAssertEqual(q.replied(seq: 1, .permanent), .failed)
        XCTAssertTrue(q.failed)
        XCTAssertTrue(q.enqueue(seq: 3, "c").isEmpty)
        XCTAssertTrue(q.resend().isEmpty)
    }

    func testALongQueueIsCompactedWithoutLosingItsPlace() {
        var q = AppendQueue<Int>()
        for s in UInt64(1)...600 {
            XCTAssertEqual(seqs(q.enqueue(seq: s, Int(s)).map { ($0.seq, "\($0.item)") }), [s])
            if s > 1 { XCTAssertEqual(q.replied(seq: s - 1, .stored), .wait) }
        }
        XCTAssertEqual(q.backlog, 1)
        XCTAssertEqual(q.replied(seq: 600, .retryable), .resend)
        XCTAssertEqual(q.resend().map(\.seq), [600])
        XCTAssertEqual(q.replied(seq: 600, .stored), .drained)
        XCTAssertEqual(q.ackedSeq, 600)
    }

    /// A scripted Redis holding `last_seq` applies appends in order (the append script's
    /// rule) and the connection drops at random steps: every reply in flight is lost,
    /// whether its append was applied or not, and a `NOSCRIPT` may follow. The stored
    /// stream must be 1…N exactly, and the queue must end drained.
    func testScriptedConnectionLossAtEveryStepStoresEverySeqOnceInOrder() {
        for seed in UInt64(1)...300 {
            var rng = SplitMix64(seed: seed)
            var q = AppendQueue<UInt64>()
            let total = UInt64(5 + rng.next() % 60)
            var stored: [UInt64] = []
            var wire: [UInt64] = []          // sent, not yet processed by Redis
            var replies: [(UInt64, AppendReply)] = []
            var produced: UInt64 = 0
            var drained = false
            var steps = 0
            func redisProcess(_ seq: UInt64) -> AppendReply {
                let last = stored.last ?? 0
                if seq != last + 1 { return .outOfOrder(lastSeq: last) }
                stored.append(seq)
                return .stored
            }
            func handle(_ next: AppendQueue<UInt64>.Next) {
                switch next {
                case .wait: break
                case .drained: drained = produced == total
                case .resend:
                    wire += q.resend().map(\.seq)
                    if q.isDrained { drained = produced == total }
                case .failed: XCTFail("seed \(seed): no permanent failure was scripted")
                }
            }
            while !(drained && produced == total) && steps < 20_000 {
                steps += 1
                switch rng.next() % 6 {
                case 0, 1:
                    if produced < total {
                        produced += 1
                        wire += q.enqueue(seq: produced, produced).map(\.seq)
                    }
                case 2, 3:
                    if !wire.isEmpty { replies.append((wire[0], redisProcess(wire.removeFirst()))) }
                case 4:
                    if !replies.isEmpty {
                        let (s, r) = replies.removeFirst()
                        handle(q.replied(seq: s, r))
                    }
                default:
                    guard rng.next() % 3 == 0 else { continue }
                    // Connection lost: some sent appends are applied, all replies are lost.
                    let applied = wire.isEmpty ? 0 : Int(rng.next() % UInt64(wire.count + 1))
                    for s in wire.prefix(applied) { _ = redisProcess(s) }
                    let lost = replies.map(\.0) + wire
                    replies = []
                    wire = []
                    let reason: AppendReply = .retryable
                    for s in lost { handle(q.replied(seq: s, reason)) }
                }
            }
            XCTAssertEqual(stored, Array(1...total), "seed \(seed)")
            XCTAssertTrue(drained, "seed \(seed): never drained")
            XCTAssertEqual(q.ackedSeq, total, "seed \(seed)")
        }
    }
}
