import XCTest
@testable import RelayEventStore

/// `StreamTrim` (which appends trim, and to what) and `TextCheckpoint` (the lossless
/// text written once per group of events, and the hold that keeps it ahead of the trim).
final class TextCheckpointTests: XCTestCase {
    func testTheDefaultCapTrimsEveryEighthSeqToKeepAtMost200() {
        let t = StreamTrim(maxLen: 200)
        XCTAssertEqual(t.step, 8)
        XCTAssertEqual(t.trimmedLength, 193)
        XCTAssertEqual(t.minRetained, 193)
        XCTAssertEqual((1...24).filter { t.trims(seq: UInt64($0)) }, [8, 16, 24])
        // Simulate the entry count of a stream under this rule: never above the cap,
        // never below minRetained once the cap was reached.
        var length = 0
        for seq in UInt64(1)...1_000 {
            length += 1
            if t.trims(seq: seq) { length = min(length, t.trimmedLength) }
            XCTAssertLessThanOrEqual(length, 200, "seq \(seq)")
            if seq >= 200 { XCTAssertGreaterThanOrEqual(length, t.minRetained, "seq \(seq)") }
        }
    }

    func testSmallCapsTrimOnEveryEvent() {
        for cap in [1, 3, 15, 31] {
            let t = StreamTrim(maxLen: cap)
            XCTAssertEqual(t.step, 1, "cap \(cap)")
            XCTAssertEqual(t.trimmedLength, cap)
            XCTAssertTrue(t.trims(seq: 7))
        }
        XCTAssertEqual(StreamTrim(maxLen: 64).step, 4)
        XCTAssertEqual(StreamTrim(maxLen: 0).maxLen, 1, "a cap below 1 is 1")
    }

    func testTheHoldNeverLetsTheTrimOvertakeTheStoredText() {
        for cap in [1, 2, 3, 10, 31, 32, 64, 100, 200, 1_000, 1_000_000] {
            let t = StreamTrim(maxLen: cap)
            let c = TextCheckpoint(trim: t)
            XCTAssertGreaterThanOrEqual(c.every, 1)
            XCTAssertLessThanOrEqual(c.every, max(1, c.holdAfter), "cap \(cap)")
            XCTAssertLessThanOrEqual(c.holdAfter, t.minRetained, "cap \(cap): an event sent may trim only stored text")
            XCTAssertLessThan(c.holdAfter, t.maxLen, "cap \(cap): a lease expiry's entry (MAXLEN cap) may trim only stored text")
        }
        XCTAssertEqual(TextCheckpoint(trim: StreamTrim(maxLen: 1)).holdAfter, 0, "cap 1: text stored before each XADD")
        XCTAssertEqual(TextCheckpoint(trim: StreamTrim(maxLen: 2)).holdAfter, 1)
        let c = TextCheckpoint(trim: StreamTrim(maxLen: 200))
        XCTAssertEqual(c.every, 25)
        XCTAssertEqual(c.holdAfter, 100)
    }

    func testEventsAreWrittenOncePerGroupWithTheirEndOffsets() {
        var c = TextCheckpoint(trim: StreamTrim(maxLen: 32))   // every 4, hold 16
        XCTAssertEqual(c.every, 4)
        XCTAssertEqual(c.add(seq: 1, text: "ab"), 0)
        XCTAssertEqual(c.add(seq: 2, text: ""), 2)
        XCTAssertEqual(c.add(seq: 3, text: "é"), 2)
        XCTAssertFalse(c.isDue)
        XCTAssertEqual(c.add(seq: 4, text: "👩"), 4)
        XCTAssertTrue(c.isDue)
        let w = c.take()
        XCTAssertEqual(w, TextCheckpoint.Write(start: 0, text: "abé👩",
                                               offsets: [.init(seq: 1, end: 2), .init(seq: 2, end: 2),
                                                         .init(seq: 3, end: 4), .init(seq: 4, end: 8)]))
        XCTAssertEqual(w?.throughSeq, 4)
        XCTAssertNil(c.take(), "one write in flight at a time")
        c.add(seq: 5, text: "x")
        c.written(through: 4, ok: true)
        XCTAssertEqual(c.confirmedSeq, 4)
        XCTAssertEqual(c.confirmedEnd, 8)
        XCTAssertEqual(c.sendableThrough, 4 + 16)
        XCTAssertEqual(c.take(), TextCheckpoint.Write(start: 8, text: "x", offsets: [.init(seq: 5, end: 9)]))
    }

    func testAPartialPendingWriteTakesTheTextOfItsEventsOnly() {
        var c = TextCheckpoint(trim: StreamTrim(maxLen: 32))
        c.add(seq: 1, text: "ab")
        c.add(seq: 2, text: "é")
        c.add(seq: 3, text: "cd")
        let w = c.pending(through: 2)!
        XCTAssertEqual(w, TextCheckpoint.Write(start: 0, text: "abé", offsets: [.init(seq: 1, end: 2), .init(seq: 2, end: 4)]))
        c.written(through: 2, ok: true)
        XCTAssertEqual(c.confirmedEnd, 4)
        XCTAssertEqual(c.pending(through: .max), TextCheckpoint.Write(start: 4, text: "cd", offsets: [.init(seq: 3, end: 6)]))
        XCTAssertNil(c.pending(through: 2), "nothing buffered at or below 2")
    }

    func testAFailedWriteKeepsItsTextForTheNextWriteAtTheSameOffset() {
        var c = TextCheckpoint(trim: StreamTrim(maxLen: 32))
        for s in UInt64(1)...4 { c.add(seq: s, text: "t\(s)") }
        let first = c.take()!
        c.add(seq: 5, text: "t5")
        c.written(through: first.throughSeq, ok: false)
        XCTAssertEqual(c.confirmedSeq, 0)
        XCTAssertTrue(c.lastWriteFailed)
        XCTAssertTrue(c.isDue, "resent at once, even below `every`")
        let again = c.take()!
        XCTAssertEqual(again.start, 0)
        XCTAssertEqual(String(decoding: again.text, as: UTF8.self), "t1t2t3t4t5")
        XCTAssertEqual(again.throughSeq, 5)
        c.written(through: 5, ok: true)
        XCTAssertFalse(c.lastWriteFailed)
        XCTAssertEqual(c.backlog, 0)
        XCTAssertEqual(c.confirmedEnd, 10)
    }

    func testTheFinalEventWritesEverythingBufferedAndALateReplyChangesNothing() {
        var c = TextCheckpoint(trim: StreamTrim(maxLen: 32))
        for s in UInt64(1)...4 { c.add(seq: s, text: "a") }
        let inFlight = c.take()!
        c.add(seq: 5, text: "b")
        c.add(seq: 6, text: "")   // the final event
        let final = c.pending(through: 6)!
        XCTAssertEqual(final.start, 0, "from the last confirmed write, the write in flight included")
        XCTAssertEqual(String(decoding: final.text, as: UTF8.self), "aaaab")
        XCTAssertEqual(final.offsets.map(\.seq), [1, 2, 3, 4, 5, 6])
        c.written(through: 6, ok: true)
        XCTAssertEqual(c.confirmedSeq, 6)
        c.written(through: inFlight.throughSeq, ok: false)
        XCTAssertEqual(c.confirmedSeq, 6, "an older write's late failure does not undo the final's")
        XCTAssertNil(c.inFlightThrough)
        XCTAssertFalse(c.isDue, "nothing buffered")
        XCTAssertNil(c.pending(through: .max))
    }

    func testHeldEventsGoOutOnceTheirTextIsStored() {
        var q = AppendQueue<String>(maxGroup: 8)
        var c = TextCheckpoint(trim: StreamTrim(maxLen: 4))   // hold 2, every 1
        XCTAssertEqual(c.holdAfter, 2)
        var sent: [UInt64] = []
        for s in UInt64(1)...5 {
            c.add(seq: s, text: "x")
            sent += q.enqueue(seq: s, "e\(s)", sendableThrough: c.sendableThrough).map(\.seq)
        }
        XCTAssertEqual(sent, [1], "2… wait for 1's reply (group rule)")
        XCTAssertEqual(q.replied(seq: 1, .stored), .send)
        XCTAssertEqual(q.nextGroup(sendableThrough: c.sendableThrough).map(\.seq), [2], "3… are held: no text stored yet")
        XCTAssertEqual(q.replied(seq: 2, .stored), .send)
        XCTAssertEqual(q.nextGroup(sendableThrough: c.sendableThrough).map(\.seq), [])
        XCTAssertEqual(q.unsent, 3)
        let w = c.take()!
        c.written(through: w.throughSeq, ok: true)   // text through 5 stored
        XCTAssertEqual(q.nextGroup(sendableThrough: c.sendableThrough).map(\.seq), [3, 4, 5])
    }
}
