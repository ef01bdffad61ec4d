import RelayCore
import RelayTestKit
import XCTest
@testable import RelayEventStore

/// Every branch of `AppendQueue`, then a scripted Redis (explicit-ID `XADD` rules,
/// failures per write, lost connections) at random steps.
final class AppendQueueTests: XCTestCase {
    private func seqs(_ items: ArraySlice<(seq: UInt64, item: String)>) -> [UInt64] { items.map(\.seq) }
    private func tail(_ state: String? = "running", top: UInt64, _ entries: [(UInt64, String)]) -> StoredTail {
        StoredTail(state: state, topSeq: top, entries: entries.map { SequencedEvent(seq: $0.0, json: $0.1) })
    }
    private func verify(_ q: inout AppendQueue<String>, _ t: StoredTail) -> ([UInt64], AppendQueue<String>.Next) {
        let (acked, next) = q.verified(t) { $0 == $1 }
        return (acked.map(\.seq), next)
    }

    func testTheNextGroupWaitsForEveryReplyOfTheGroupInFlight() {
        var q = AppendQueue<String>()
        XCTAssertEqual(seqs(q.enqueue(seq: 1, "a")), [1])
        XCTAssertEqual(seqs(q.enqueue(seq: 2, "b")), [], "1 is in flight: 2 waits")
        XCTAssertEqual(seqs(q.enqueue(seq: 3, "c")), [])
        XCTAssertEqual(q.replied(seq: 1, .stored), .send)
        XCTAssertEqual(q.ackedSeq, 1)
        XCTAssertEqual(seqs(q.nextGroup()), [2, 3], "the events queued meanwhile go as one group")
        XCTAssertEqual(seqs(q.nextGroup()), [], "a group is in flight")
        XCTAssertEqual(q.replied(seq: 2, .stored), .wait)
        XCTAssertEqual(q.replied(seq: 3, .stored), .drained)
        XCTAssertEqual(q.backlog, 0)
        XCTAssertTrue(q.isDrained)
    }

    func testAGroupIsCappedAtMaxGroup() {
        var q = AppendQueue<String>(maxGroup: 2)
        _ = q.enqueue(seq: 1, "a")
        for s in UInt64(2)...6 { _ = q.enqueue(seq: s, "e\(s)") }
        XCTAssertEqual(q.replied(seq: 1, .stored), .send)
        XCTAssertEqual(seqs(q.nextGroup()), [2, 3])
        XCTAssertEqual(q.replied(seq: 2, .stored), .wait)
        XCTAssertEqual(q.replied(seq: 3, .stored), .send)
        XCTAssertEqual(seqs(q.nextGroup()), [4, 5])
    }

    /// The gap guard: k fails (`-OOM`, `-BUSY`) at a moment when k+1 would be stored;
    /// k+1 is never sent before k's reply, and after it only behind a verification.
    func testWhenKFailsKPlusOneIsNeverSentAheadOfIt() {
        var q = AppendQueue<String>()
        var wire = seqs(q.enqueue(seq: 1, "a"))
        wire += seqs(q.enqueue(seq: 2, "b"))
        XCTAssertEqual(wire, [1], "2 must not be on the wire while 1 is unanswered")
        XCTAssertEqual(q.replied(seq: 1, .retryable), .verify, "OOM on 1")
        XCTAssertEqual(seqs(q.nextGroup()), [], "nothing is sent before the tail is verified")
        XCTAssertEqual(seqs(q.enqueue(seq: 3, "c")), [])
        let (acked, next) = verify(&q, tail(top: 0, []))
        XCTAssertEqual(acked, [])
        XCTAssertEqual(next, .send)
        XCTAssertEqual(seqs(q.nextGroup()), [1, 2, 3], "resent in order from the failed one")
    }

    /// Redis keeps refusing (`-OOM`): each fruitless round waits longer before the next
    /// tail read (10 ms doubling to 500 ms) instead of resending in a busy loop; the
    /// first read after progress, and after a lost reply, is immediate.
    func testRoundsThatAcknowledgeNothingBackOffAndProgressResetsTheDelay() {
        var q = AppendQueue<String>()
        _ = q.enqueue(seq: 1, "a")
        XCTAssertEqual(q.replied(seq: 1, .retryable), .verify)
        XCTAssertEqual(q.verifyDelayMs, 0, "the first read is immediate (maybe only a reply was lost)")
        var delays: [UInt64] = []
        for _ in 0..<8 {
            XCTAssertEqual(verify(&q, tail(top: 0, [])).1, .send)
            XCTAssertEqual(seqs(q.nextGroup()), [1])
            XCTAssertEqual(q.replied(seq: 1, .retryable), .verify, "-OOM again")
            delays.append(q.verifyDelayMs)
        }
        XCTAssertEqual(delays, [10, 20, 40, 80, 160, 320, 500, 500])
        q.verifyFailed()
        XCTAssertEqual(q.verifyDelayMs, 500, "a failed tail read waits too")
        // Memory is back: the resend is stored; the delay starts over.
        XCTAssertEqual(verify(&q, tail(top: 0, [])).1, .send)
        XCTAssertEqual(seqs(q.nextGroup()), [1])
        XCTAssertEqual(q.replied(seq: 1, .stored), .drained)
        XCTAssertEqual(q.verifyDelayMs, 0)
        // A lost reply whose event was stored: acknowledged by the tail, no delay either.
        _ = q.enqueue(seq: 2, "b")
        XCTAssertEqual(q.replied(seq: 2, .retryable), .verify)
        XCTAssertEqual(verify(&q, tail(top: 2, [(2, "b")])).1, .drained)
        XCTAssertEqual(q.verifyDelayMs, 0)
    }

    func testASuccessBehindAFailureInTheSameGroupIsNotAcknowledgedAndAHoleFailsTheStream() {
        var q = AppendQueue<String>()
        _ = q.enqueue(seq: 1, "a")
        _ = q.enqueue(seq: 2, "b")
        _ = q.enqueue(seq: 3, "c")
        XCTAssertEqual(q.replied(seq: 1, .stored), .send)
        XCTAssertEqual(seqs(q.nextGroup()), [2, 3])
        XCTAssertEqual(q.replied(seq: 2, .retryable), .wait)
        XCTAssertEqual(q.replied(seq: 3, .stored), .verify)
        XCTAssertEqual(q.ackedSeq, 1, "3 stored behind a failed 2 proves nothing about 2")
        let (acked, next) = verify(&q, tail(top: 3, [(3, "c")]))
        XCTAssertEqual(acked, [])
        XCTAssertEqual(next, .failed)
        XCTAssertEqual(q.failure, .hole(afterSeq: 1))
        XCTAssertTrue(q.enqueue(seq: 4, "d").isEmpty)
    }

    func testARefusedResendOfAStoredEventIsAcknowledgedByTheTail() {
        var q = AppendQueue<String>()
        _ = q.enqueue(seq: 1, "a")
        _ = q.enqueue(seq: 2, "b")
        XCTAssertEqual(q.replied(seq: 1, .retryable), .verify, "reply lost; 1 was stored")
        // The tail shows 1 stored: acknowledged (and handed back to be published), 2 resent.
        var (acked, next) = verify(&q, tail(top: 1, [(1, "a")]))
        XCTAssertEqual(acked, [1])
        XCTAssertEqual(next, .send)
        XCTAssertEqual(seqs(q.nextGroup()), [2])
        XCTAssertEqual(q.replied(seq: 2, .refused), .verify, "2's first attempt had landed too")
        (acked, next) = verify(&q, tail(top: 2, [(2, "b")]))
        XCTAssertEqual(acked, [2])
        XCTAssertEqual(next, .drained)
        XCTAssertEqual(q.ackedSeq, 2)
    }

    func testAFenceByALeaseExpiryFailsTheStream() {
        var q = AppendQueue<String>()
        _ = q.enqueue(seq: 1, "a")
        XCTAssertEqual(q.replied(seq: 1, .stored), .drained)
        _ = q.enqueue(seq: 2, "b")
        _ = q.enqueue(seq: 3, "c")
        XCTAssertEqual(q.replied(seq: 2, .refused), .verify, "another instance wrote upstream_lost at 2")
        let (acked, next) = verify(&q, tail("failed", top: 2, [(2, "{\"type\":\"error\"}")]))
        XCTAssertEqual(acked, [])
        XCTAssertEqual(next, .failed)
        XCTAssertEqual(q.failure, .foreignEntry(seq: 2))
        XCTAssertTrue(q.nextGroup().isEmpty)
    }

    /// docs/PROTOCOL.md §4.5: an owner woken after a takeover finds the taker's entries
    /// after its own. The tail's `taken` state decides before any hole or foreign entry, so
    /// the owner stops as taken over (and does not settle), not as a loss.
    func testAWokenOwnerMeetingTheTakersEntriesStopsAsTakenOverNotAsAHole() {
        var q = AppendQueue<String>()
        _ = q.enqueue(seq: 1, "a")
        XCTAssertEqual(q.replied(seq: 1, .stored), .drained)
        _ = q.enqueue(seq: 2, "b")
        _ = q.enqueue(seq: 3, "c")
        XCTAssertEqual(q.replied(seq: 2, .refused), .verify, "the fence refused 2")
        // The taker continued from 1: its entries 2…9 are stored, and a hole-shaped tail
        // (entry 5 first in the read) would read as GAP without the state.
        let (acked, next) = verify(&q, tail(AppendStop.takenState, top: 9, [(5, "x"), (6, "y")]))
        XCTAssertEqual(acked, [])
        XCTAssertEqual(next, .failed)
        XCTAssertEqual(q.failure, .takenOver)
    }

    func testAWokenOwnerMeetingTheTakersFirstEntryStopsAsTakenOverNotAsAForeignEntry() {
        var q = AppendQueue<String>()
        _ = q.enqueue(seq: 1, "a")
        XCTAssertEqual(q.replied(seq: 1, .refused), .verify)
        let (_, next) = verify(&q, tail(AppendStop.takenState, top: 4, [(1, "the taker's")]))
        XCTAssertEqual(next, .failed)
        XCTAssertEqual(q.failure, .takenOver)
    }

    func testOurOwnStoredFinalEventDrainsEvenThoughTheStreamEnded() {
        var q = AppendQueue<String>()
        _ = q.enqueue(seq: 1, "a")
        XCTAssertEqual(q.replied(seq: 1, .stored), .drained)
        _ = q.enqueue(seq: 2, "done")
        XCTAssertEqual(q.replied(seq: 2, .retryable), .verify, "the final's reply was lost")
        let (acked, next) = verify(&q, tail("done", top: 2, [(2, "done")]))
        XCTAssertEqual(acked, [2])
        XCTAssertEqual(next, .drained)
    }

    func testEventsLeftOnAnEndedStreamFail() {
        var q = AppendQueue<String>()
        _ = q.enqueue(seq: 1, "a")
        XCTAssertEqual(q.replied(seq: 1, .refused), .verify)
        let (_, next) = verify(&q, tail("cancelled", top: 0, []))
        XCTAssertEqual(next, .failed)
        XCTAssertEqual(q.failure, .ended(state: "cancelled"))
    }

    func testAStoreBehindAnAcknowledgedSeqFails() {
        var q = AppendQueue<String>()
        _ = q.enqueue(seq: 1, "a")
        XCTAssertEqual(q.replied(seq: 1, .stored), .drained)
        _ = q.enqueue(seq: 2, "b")
        XCTAssertEqual(q.replied(seq: 2, .stored), .drained)
        // Reconnected to a promoted replica that only had seq 1.
        XCTAssertTrue(q.mustVerify(), "nothing in flight: verify now")
        XCTAssertTrue(q.enqueue(seq: 3, "c").isEmpty, "nothing is sent before the verification")
        let (_, next) = verify(&q, tail(top: 1, []))
        XCTAssertEqual(next, .failed)
        XCTAssertEqual(q.failure, .storeWentBack(topSeq: 1))
    }

    func testTextConfirmedStoredButGoneFails() {
        var q = AppendQueue<String>()
        _ = q.enqueue(seq: 1, "a")
        XCTAssertEqual(q.replied(seq: 1, .stored), .drained)
        // Reconnected to a promoted replica that has entry 1 but lost the text write
        // confirmed through seq 1 (end offset 5).
        XCTAssertTrue(q.mustVerify())
        _ = q.enqueue(seq: 2, "b")
        var good = q
        XCTAssertEqual(good.verified(StoredTail(state: "running", topSeq: 1, entries: [], textEnd: 5), text: (1, 5)) { $0 == $1 }.next,
                       .send, "the text is there: go on")
        let (_, next) = q.verified(StoredTail(state: "running", topSeq: 1, entries: [], textEnd: nil), text: (1, 5)) { $0 == $1 }
        XCTAssertEqual(next, .failed)
        XCTAssertEqual(q.failure, .textWentBack(seq: 1))
    }

    func testAGoneStreamIsPermanent() {
        var q = AppendQueue<String>()
        _ = q.enqueue(seq: 1, "a")
        XCTAssertEqual(q.replied(seq: 1, .permanent), .failed)
        XCTAssertEqual(q.failure, .streamGone)
        XCTAssertTrue(q.enqueue(seq: 2, "b").isEmpty)
        var r = AppendQueue<String>()
        _ = r.enqueue(seq: 1, "a")
        XCTAssertEqual(r.replied(seq: 1, .retryable), .verify)
        XCTAssertEqual(verify(&r, tail(nil, top: 0, [])).1, .failed)
        XCTAssertEqual(r.failure, .streamGone)
    }

    func testMustVerifyWithAGroupInFlightVerifiesAfterItsLastReply() {
        var q = AppendQueue<String>()
        _ = q.enqueue(seq: 1, "a")
        XCTAssertFalse(q.mustVerify(), "1 is in flight")
        XCTAssertEqual(q.replied(seq: 1, .stored), .verify)
        XCTAssertEqual(q.ackedSeq, 0, "a success after a reconnection is checked by the tail")
        XCTAssertEqual(verify(&q, tail(top: 1, [(1, "a")])).1, .drained)
        XCTAssertEqual(q.ackedSeq, 1)
    }

    func testALongQueueIsCompactedWithoutLosingItsPlace() {
        var q = AppendQueue<String>()
        XCTAssertEqual(seqs(q.enqueue(seq: 1, "1")), [1])
        for s in UInt64(2)...600 {
            XCTAssertEqual(seqs(q.enqueue(seq: s, "\(s)")), [])
            XCTAssertEqual(q.replied(seq: s - 1, .stored), .send)
            XCTAssertEqual(seqs(q.nextGroup()), [s])
        }
        XCTAssertEqual(q.backlog, 1)
        XCTAssertEqual(q.replied(seq: 600, .retryable), .verify)
        XCTAssertEqual(verify(&q, tail(top: 599, [])).1, .send)
        XCTAssertEqual(seqs(q.nextGroup()), [600])
        XCTAssertEqual(q.replied(seq: 600, .stored), .drained)
        XCTAssertEqual(q.ackedSeq, 600)
    }

    /// A scripted Redis applying `XADD <seq>-0` rules (stored when above the top entry,
    /// refused otherwise: a skipped seq *is* accepted, as by the real command), where
    /// each write (one group) is processed in one pass and may hit a failure window
    /// (`-OOM`: every command of that write fails) that opens and closes between
    /// writes, and the connection drops at random steps (replies lost, the write applied
    /// or not). The stored stream must be 1…N exactly, and the queue must end drained.
    func testScriptedFailuresAndConnectionLossStoreEverySeqOnceInOrder() {
        for seed in UInt64(1)...400 {
            var rng = SplitMix64(seed: seed)
            var q = AppendQueue<String>(maxGroup: Int(1 + rng.next() % 5))
            let total = UInt64(5 + rng.next() % 60)
            var stored: [UInt64] = []
            var writes: [[UInt64]] = []      // sent, not yet processed by Redis
            var replies: [(UInt64, AppendReply)] = []
            var produced: UInt64 = 0
            var drained = false
            var needVerify = false
            var oom = false
            var steps = 0
            func send(_ g: ArraySlice<(seq: UInt64, item: String)>) { if !g.isEmpty { writes.append(g.map(\.seq)) } }
            func process(_ write: [UInt64]) -> [(UInt64, AppendReply)] {
                write.map { s in
                    if oom { return (s, .retryable) }
                    if s <= (stored.last ?? 0) { return (s, .refused) }
                    stored.append(s)
                    return (s, .stored)
                }
            }
            func handle(_ next: AppendQueue<String>.Next) {
                switch next {
                case .wait: break
                case .drained: drained = produced == total
                case .send: send(q.nextGroup())
                case .verify: needVerify = true
                case .failed: XCTFail("seed \(seed): failed \(String(describing: q.failure))")
                }
            }
            while !(drained && produced == total) && steps < 50_000 {
                steps += 1
                switch rng.next() % 8 {
                case 0, 1:
                    if produced < total {
                        produced += 1
                        drained = false
                        send(q.enqueue(seq: produced, "\(produced)"))
                    }
                case 2, 3:
                    if !writes.isEmpty { replies += process(writes.removeFirst()) }
                case 4:
                    if !replies.isEmpty {
                        let (s, r) = replies.removeFirst()
                        handle(q.replied(seq: s, r))
                    }
                case 5:
                    if needVerify && writes.isEmpty && replies.isEmpty {
                        needVerify = false
                        let top = stored.last ?? 0
                        let after = stored.filter { $0 > q.ackedSeq }.map { SequencedEvent(seq: $0, json: "\($0)") }
                        let (_, next) = q.verified(StoredTail(state: "running", topSeq: top, entries: after)) { $0 == $1 }
                        handle(next)
                    }
                case 6:
                    if rng.next() % 4 == 0 { oom.toggle() }
                default:
                    guard rng.next() % 3 == 0 else { continue }
                    // Connection lost: the first writes may have been applied, all replies are lost.
                    let applied = Int(rng.next() % UInt64(writes.count + 1))
                    for w in writes.prefix(applied) { _ = process(w) }
                    let lost = replies.map(\.0) + writes.flatMap { $0 }
                    replies = []
                    writes = []
                    for s in lost { handle(q.replied(seq: s, .retryable)) }
                }
            }
            XCTAssertEqual(stored, Array(1...total), "seed \(seed)")
            XCTAssertTrue(drained, "seed \(seed): never drained")
            XCTAssertEqual(q.ackedSeq, total, "seed \(seed)")
        }
    }
}
