import XCTest
import RelayCore
@testable import RelayServer

final class SlowLinkCoalescerTests: XCTestCase {
    private func delta(_ seq: UInt64, _ text: String) -> SequencedEvent {
        SequencedEvent(seq: seq, json: StreamEvent.delta(text).json)
    }

    func testAFastClientGetsOneEventPerToken() {
        var c = SlowLinkCoalescer()
        for seq in 1...100 as ClosedRange<UInt64> {
            XCTAssertEqual(c.offer(delta(seq, "w\(seq) "), unsentBytes: 0, nowMs: seq * 7).events, [delta(seq, "w\(seq) ")])
        }
        XCTAssertFalse(c.isCoalescing)
    }

    /// `passesThrough` holds exactly when `offer` would hand the event back alone and
    /// change nothing (the fast path a subscription takes without calling `offer`).
    func testPassesThroughMatchesOfferUntouched() {
        var c = SlowLinkCoalescer(limits: .init(highWaterBytes: 100, flushIntervalMs: 250))
        XCTAssertTrue(c.passesThrough(unsentBytes: 0))
        XCTAssertTrue(c.passesThrough(unsentBytes: 100), "at the mark: not backed up")
        XCTAssertFalse(c.passesThrough(unsentBytes: 101))
        var probe = c
        XCTAssertEqual(probe.offer(delta(1, "a"), unsentBytes: 100, nowMs: 0).events, [delta(1, "a")])
        XCTAssertFalse(probe.isCoalescing)
        XCTAssertEqual(probe.heldCount, 0)
        _ = c.offer(delta(1, "a"), unsentBytes: 101, nowMs: 0)
        XCTAssertTrue(c.isCoalescing)
        XCTAssertFalse(c.passesThrough(unsentBytes: 0), "coalescing: every delta goes through offer")
    }

    func testABackedUpClientGetsOneMergedDeltaWithTheHighestSeqPerInterval() {
        var c = SlowLinkCoalescer(limits: .init(highWaterBytes: 1_000, flushIntervalMs: 250))
        XCTAssertEqual(c.offer(delta(1, "a"), unsentBytes: 0, nowMs: 0).events.count, 1)
        XCTAssertEqual(c.offer(delta(2, "b\""), unsentBytes: 1_001, nowMs: 10).events, [], "backed up: held")
        XCTAssertTrue(c.isCoalescing)
        XCTAssertEqual(c.offer(delta(3, "ç\n"), unsentBytes: 100, nowMs: 20).events, [], "still coalescing")
        XCTAssertEqual(c.tick(unsentBytes: 100, nowMs: 200).events, [], "interval not over")
        XCTAssertEqual(c.tick(unsentBytes: 5_000, nowMs: 300).events, [], "backlog still above the mark")
        let out = c.tick(unsentBytes: 900, nowMs: 310)
        XCTAssertEqual(out.events, [delta(3, "b\"ç\n")], "one delta, highest seq, contents in order")
        XCTAssertEqual(out.merged, 1)
        XCTAssertEqual(try StreamEvent(json: out.events[0].json), .delta("b\"ç\n"), "valid JSON after merging escaped contents")
    }

    func testTerminalEventFlushesWhatIsHeldBeforeIt() {
        var c = SlowLinkCoalescer(limits: .init(highWaterBytes: 10))
        _ = c.offer(delta(1, "x"), unsentBytes: 11, nowMs: 0)
        _ = c.offer(delta(2, "y"), unsentBytes: 11, nowMs: 1)
        let done = SequencedEvent(seq: 3, json: StreamEvent.done(finishReason: "stop", usage: Usage(promptTokens: 1, completionTokens: 2)).json)
        let out = c.offer(done, unsentBytes: 5_000, nowMs: 2)
        XCTAssertEqual(out.events, [delta(2, "xy"), done])
        XCTAssertEqual(out.merged, 1)
        XCTAssertEqual(c.heldCount, 0)
    }

    func testNonDeltaIsNeverHeldAndASingleHeldDeltaIsWrittenUnchanged() {
        var c = SlowLinkCoalescer(limits: .init(highWaterBytes: 10))
        let odd = SequencedEvent(seq: 1, json: "{\"type\":\"delta\",\"content\":\"x\",\"extra\":1}")
        XCTAssertEqual(c.offer(odd, unsentBytes: 99, nowMs: 0).events, [odd], "an unknown shape is not merged")
        XCTAssertEqual(c.offer(delta(2, "y"), unsentBytes: 99, nowMs: 0).events, [])
        XCTAssertEqual(c.flush(), .init(events: [delta(2, "y")], merged: 0))
        XCTAssertEqual(c.flush(), .init())
    }

    func testProbesBackToOneEventPerTokenWithBackoff() {
        var c = SlowLinkCoalescer(limits: .init(highWaterBytes: 10, flushIntervalMs: 100, probeMs: 1_000, maxProbeMs: 4_000))
        _ = c.offer(delta(1, "a"), unsentBytes: 11, nowMs: 0)
        XCTAssertEqual(c.tick(unsentBytes: 0, nowMs: 999).events, [delta(1, "a")], "flushed, not yet a probe")
        XCTAssertTrue(c.isCoalescing)
        _ = c.offer(delta(2, "b"), unsentBytes: 0, nowMs: 999)
        XCTAssertEqual(c.tick(unsentBytes: 0, nowMs: 1_000).events, [delta(2, "b")], "probe flushes")
        XCTAssertFalse(c.isCoalescing, "probe: one event per token again")
        XCTAssertEqual(c.offer(delta(3, "c"), unsentBytes: 0, nowMs: 1_001).events, [delta(3, "c")])
        // Backed up again soon: the next probe waits twice as long (2 s), then 4 s (the cap).
        _ = c.offer(delta(4, "d"), unsentBytes: 11, nowMs: 1_100)
        XCTAssertEqual(c.tick(unsentBytes: 0, nowMs: 3_099).events, [delta(4, "d")])
        XCTAssertTrue(c.isCoalescing)
        XCTAssertEqual(c.tick(unsentBytes: 0, nowMs: 3_100).events, [])
        XCTAssertFalse(c.isCoalescing)
        _ = c.offer(delta(5, "e"), unsentBytes: 11, nowMs: 3_200)
        _ = c.tick(unsentBytes: 0, nowMs: 7_199)
        XCTAssertTrue(c.isCoalescing)
        _ = c.tick(unsentBytes: 0, nowMs: 7_200)
        XCTAssertFalse(c.isCoalescing)
        // Backed up long after the last probe: the interval starts over.
        _ = c.offer(delta(6, "f"), unsentBytes: 11, nowMs: 60_000)
        _ = c.tick(unsentBytes: 0, nowMs: 61_000)
        XCTAssertFalse(c.isCoalescing)
    }

    func testMergedContentsConcatenateExactlyOverAnAnswer() throws {
        var c = SlowLinkCoalescer(limits: .init(highWaterBytes: 0, flushIntervalMs: 50))
        let words = (1...500).map { i in i % 7 == 0 ? "سطر\\\(i)\n" : "w\(i) \"q\" " }
        var text = ""
        var lastSeq: UInt64 = 0
        var now: UInt64 = 0
        for (i, w) in words.enumerated() {
            now += 7
            var out = c.offer(delta(UInt64(i + 1), w), unsentBytes: i == 0 ? 1 : 0, nowMs: now)
            out.events += c.tick(unsentBytes: 0, nowMs: now).events
            for e in out.events {
                XCTAssertGreaterThan(e.seq, lastSeq)
                lastSeq = e.seq
                guard case .delta(let t) = try StreamEvent(json: e.json) else { return XCTFail("not a delta") }
                text += t
            }
        }
        for e in c.flush().events { lastSeq = e.seq; guard case .delta(let t) = try StreamEvent(json: e.json) else { return XCTFail() }; text += t }
        XCTAssertEqual(text, words.joined())
        XCTAssertEqual(lastSeq, 500)
    }

    func testHeldBytesStayBoundedBacklogOrNot() {
        var c = SlowLinkCoalescer(limits: .init(highWaterBytes: 10, maxHeldBytes: 200))
        var written = 0
        for seq in 1...100 as ClosedRange<UInt64> {
            written += c.offer(delta(seq, "word "), unsentBytes: 1_000_000, nowMs: seq).events.count
            XCTAssertLessThan(c.heldBytes, 200)
        }
        XCTAssertGreaterThan(written, 0, "flushed at the bound although the backlog stayed high")
    }
}
