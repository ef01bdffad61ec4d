import XCTest
import RelayCore
@testable import RelayEventStore
@testable import RelayServer

/// A generation's guarantees, run in-process on the in-memory store (no Redis, no loop, a
/// clock the test moves): events numbered in order and handed on only once stored; one
/// settlement, after the final event is stored, of what was really generated; a refused
/// append stops the answer with the right charge; a stalled owner holds its events until it
/// confirms its lease, and one whose answer was taken over writes and settles nothing while
/// the taker finishes and settles the whole answer (docs/PROTOCOL.md §4.5, §9).
final class GenerationOnInMemoryStoreTests: XCTestCase {
    private var store: InMemoryAnswerStore!
    private var a: InMemoryGenerationHost!
    private let id = try! RequestID(validating: "in-memory-answer-0001")

    override func setUp() {
        store = InMemoryAnswerStore()
        a = InMemoryGenerationHost(store: store, instance: "relay-a")
        store.create(id, instance: "relay-a", nowMs: a.nowMs)
    }

    /// Relay B, its clock at `nowMs`, takes the lapsed answer over (`Scripts.takeover` in
    /// memory; `TakeoverPlan` says continue here) and starts continuing it with an upstream
    /// whose prompt is `prompt` tokens; `nil` (a test failure) when the store does not give it.
    private func relayBTakesOver(atMs nowMs: UInt64, prompt: Int = 10)
        -> (host: InMemoryGenerationHost, upstream: ScriptedUpstream, generation: Generation)? {
        let b = InMemoryGenerationHost(store: store, instance: "relay-b", nowMs: nowMs)
        let found = store.takeover(id, instance: "relay-b", nowMs: nowMs, maxContinuations: 2)
        XCTAssertEqual(TakeoverPlan.plan(.success(found)), .continueHere)
        guard case .taken(let taken) = found else {
            XCTFail("B takes the lapsed answer")
            return nil
        }
        let up = ScriptedUpstream(promptTokens: prompt)
        let g = b.generation(id, upstream: up, prompt: prompt, taken: taken)
        g.start()
        return (b, up, g)
    }

    private func usage(ofFinal e: SequencedEvent?) -> Usage? {
        guard let e, case .done(_, let u, _)? = try? StreamEvent(json: e.json) else { return nil }
        return u
    }

    func testEventsAreNumberedInOrderAndHandedOnOnlyOnceStored() {
        store.answerAppendsAtOnce = false
        let up = ScriptedUpstream()
        let g = a.generation(id, upstream: up)
        g.start()
        up.sendDeltas(3, prefix: "t")
        XCTAssertTrue(a.acknowledged.isEmpty, "nothing is handed to readers before the store holds it")
        store.answerAppends()
        XCTAssertEqual(a.acknowledged.map(\.seq), [1, 2, 3])
        XCTAssertEqual(store.text(id), "t1 t2 t3 ")
        up.finish()
        XCTAssertTrue(a.settlements.isEmpty, "the final event is not stored yet: nothing is settled")
        XCTAssertFalse(a.hasEnded(g))
        store.answerAppends()
        XCTAssertEqual(a.acknowledged.map(\.seq), [1, 2, 3, 4])
        XCTAssertEqual(a.settlements.map(\.tokens), [10 + 3], "settled once: prompt plus completion")
        XCTAssertTrue(a.hasEnded(g))
        XCTAssertEqual(store.state(id), .done)
    }

    func testAStreamGoneFromTheStoreEndsTheAnswerChargedWhatWasGenerated() {
        let up = ScriptedUpstream()
        let g = a.generation(id, upstream: up)
        g.start()
        up.sendDeltas(2, prefix: "t")
        store.drop(id)
        up.send(.delta("t3 "))
        XCTAssertTrue(g.finished)
        XCTAssertTrue(up.cancelled, "the upstream is stopped")
        XCTAssertEqual(a.settlements.map(\.tokens), [10 + 3], "charged the prompt and the three deltas generated")
        XCTAssertTrue(a.hasEnded(g))
        up.send(.delta("t4 "))
        XCTAssertEqual(a.settlements.count, 1)
    }

    func testTheGrantStopsTheAnswerAtItsCompletionTokens() {
        let up = ScriptedUpstream()
        let g = a.generation(id, upstream: up, maxTokens: 50, prompt: 10, remaining: 13)
        g.start()
        up.sendDeltas(5, prefix: "t")
        XCTAssertTrue(up.cancelled, "an upstream that ignores max_tokens is stopped at the grant")
        let events = store.events(id)
        XCTAssertEqual(events.count, 4, "three deltas, then done")
        guard case .done(let reason, let u, let limited)? = try? StreamEvent(json: events.last!.json) else {
            return XCTFail("the answer ends with done")
        }
        XCTAssertEqual(reason, .length)
        XCTAssertTrue(limited, "the budget set the grant")
        XCTAssertEqual(u.completionTokens, 3)
        XCTAssertEqual(a.settlements.map(\.tokens), [13])
        XCTAssertTrue(a.hasEnded(g))
    }

    func testACancelBeforeTheStartCallsNoUpstreamAndChargesNothing() {
        let up = ScriptedUpstream()
        let g = a.generation(id, upstream: up)
        g.cancel()
        g.start()
        XCTAssertFalse(up.started, "an answer cancelled before it started never calls its upstream")
        XCTAssertEqual(usage(ofFinal: store.events(id).last)?.totalTokens, 0)
        XCTAssertEqual(store.state(id), .cancelled)
        XCTAssertEqual(a.settlements.map(\.tokens), [0])
    }

    func testAStalledOwnerHoldsItsEventsUntilItConfirmsItsLease() {
        let up = ScriptedUpstream()
        let g = a.generation(id, upstream: up)
        g.start()
        up.sendDeltas(2, prefix: "t")
        a.nowMs += store.leaseMs   // a stall past the lease it knew (SIGSTOP, a paused VM)
        up.sendDeltas(2, prefix: "late")
        XCTAssertEqual(store.events(id).count, 2, "nothing is numbered or written while the lease is unknown")
        XCTAssertEqual(a.ownershipAsked, 1, "asked once per hold")
        a.confirmOwnership()
        XCTAssertEqual(store.text(id), "t1 t2 late1 late2 ", "the waiting events go on, in order, once confirmed")
        up.finish()
        XCTAssertEqual(a.settlements.map(\.tokens), [10 + 4])
        XCTAssertEqual(store.events(id).map(\.seq), Array(1...5))
    }

    /// The lease lapses on A, B takes the answer over and finishes it, then A wakes: A must
    /// write nothing more, settle nothing and release nothing; B's `done` reports the whole
    /// answer and B settles it once, at that total.
    func testAnOwnerWakingAfterATakeoverWritesAndSettlesNothingAndTheTakerSettlesTheWhole() {
        let upA = ScriptedUpstream(promptTokens: 10)
        let gA = a.generation(id, upstream: upA)
        gA.start()
        upA.sendDeltas(5, prefix: "a")
        a.nowMs += store.leaseMs   // A stalls past its lease
        guard let (b, upB, _) = relayBTakesOver(atMs: a.nowMs, prompt: 12) else { return }
        upB.sendDeltas(3, prefix: "b")
        // A wakes while B is still generating: its held events wait for the ownership check.
        upA.sendDeltas(2, prefix: "stale")
        XCTAssertEqual(a.ownershipAsked, 1)
        a.confirmOwnership()
        XCTAssertTrue(gA.finished)
        XCTAssertTrue(upA.cancelled)
        XCTAssertTrue(a.settlements.isEmpty, "the stale owner settles nothing: the taker does")
        upB.finish()
        XCTAssertEqual(store.text(id), "a1 a2 a3 a4 a5 b1 b2 b3 ", "byte-identical: A's deltas then B's, none lost or repeated")
        XCTAssertEqual(store.events(id).map(\.seq), Array(1...9))
        XCTAssertFalse(store.appendLog.contains { $0.instance == "relay-a" && $0.seq > 5 }, "A wrote nothing after the stall")
        let total = usage(ofFinal: store.events(id).last)
        XCTAssertEqual(total?.completionTokens, 8, "done reports the whole answer's deltas")
        XCTAssertEqual(b.settlements.map(\.tokens), [total!.totalTokens], "the ledger equals the done's total, once")
        XCTAssertTrue(a.settlements.isEmpty)
    }

    /// The stale owner's lease still looks known to it (its append was delayed past the
    /// lease, as in a partition) but the store already belongs to the taker: the epoch fence
    /// refuses its append as `takenOver`, before anything in the tail, and it stops without
    /// settling. (Lossless resume off: its text write, unfenced, is docs/DATA_MODEL.md §6.1's
    /// stated limit for an append delayed that long.)
    func testAStaleOwnersAppendIsRefusedAsTakenOverAndItSettlesNothing() {
        store.lossless = false
        let upA = ScriptedUpstream()
        let gA = a.generation(id, upstream: upA)
        gA.start()
        upA.sendDeltas(3, prefix: "a")
        guard let (b, upB, _) = relayBTakesOver(atMs: a.nowMs + store.leaseMs) else { return }
        upB.sendDeltas(2, prefix: "b")
        upA.send(.delta("stale "))
        XCTAssertTrue(gA.finished)
        XCTAssertEqual(gA.phase.ending, .takenOver)
        XCTAssertTrue(a.settlements.isEmpty, "finding the taker's entries is no reason to settle")
        upB.finish()
        XCTAssertEqual(store.text(id), "a1 a2 a3 b1 b2 ")
        XCTAssertEqual(b.settlements.count, 1)
    }

    /// A stalls, B takes the answer over and finishes it, then A wakes with tokens waiting:
    /// the refresh names A's epoch stale (taken over, though no longer running), so A sends
    /// nothing — not even the unfenced text writes that would land on B's finished text.
    func testAnOwnerWakingAfterTheTakerFinishedWritesNothingOverItsText() {
        let upA = ScriptedUpstream()
        let gA = a.generation(id, upstream: upA)
        gA.start()
        upA.sendDeltas(3, prefix: "a")
        a.nowMs += store.leaseMs
        guard let (b, upB, _) = relayBTakesOver(atMs: a.nowMs) else { return }
        upB.sendDeltas(2, prefix: "b")
        upB.finish()
        upA.sendDeltas(4, prefix: "stale")
        a.confirmOwnership()
        XCTAssertEqual(gA.phase.ending, .takenOver)
        XCTAssertEqual(store.text(id), "a1 a2 a3 b1 b2 ", "the finished answer's text is B's")
        XCTAssertTrue(a.settlements.isEmpty)
        XCTAssertEqual(b.settlements.count, 1)
    }

    /// A stalls and a lease expiry ends its answer `upstream_lost` under A's own epoch: woken,
    /// A learns it no longer runs and stops without sending anything more.
    func testAnOwnerWakingAfterALeaseExpiryEndedItsAnswerSendsNothingMore() {
        let up = ScriptedUpstream()
        let g = a.generation(id, upstream: up)
        g.start()
        up.sendDeltas(3, prefix: "a")
        a.nowMs += store.leaseMs
        XCTAssertEqual(store.expireLease(id, nowMs: a.nowMs), 4)
        up.sendDeltas(2, prefix: "late")
        a.confirmOwnership()
        XCTAssertTrue(g.finished)
        XCTAssertTrue(up.cancelled)
        XCTAssertEqual(store.events(id).map(\.seq), [1, 2, 3, 4], "nothing after the expiry's upstream_lost")
        XCTAssertEqual(store.text(id), "a1 a2 a3 ", "no text written after the stall")
        XCTAssertTrue(a.hasEnded(g))
    }

    func testAFinishedAnswersRetentionIsReportedOnceAndNotForAnError() {
        let up = ScriptedUpstream()
        let g = a.generation(id, upstream: up)
        g.start()
        up.sendDeltas(2, prefix: "t")
        up.finish()
        XCTAssertEqual(a.retained, [.retained(bytes: 6)])
        let other = try! RequestID(validating: "in-memory-answer-0002")
        store.create(other, instance: "relay-a", nowMs: a.nowMs)
        let up2 = ScriptedUpstream()
        let g2 = a.generation(other, upstream: up2)
        g2.start()
        up2.send(.delta("x "))
        g2.abort(APIError(.upstreamLost, "gone"))
        XCTAssertEqual(store.state(other), .failed)
        XCTAssertEqual(a.retained.count, 1, "an answer ending with error is not retained")
    }
}
