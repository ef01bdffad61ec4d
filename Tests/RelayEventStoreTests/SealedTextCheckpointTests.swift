import XCTest
@testable import RelayEventStore

/// `TextCheckpoint` with the text sealed at rest (docs/DATA_MODEL.md §15): each write is one
/// record placed after the confirmed records, so writes stay positional.
final class SealedTextCheckpointTests: XCTestCase {
    func testSealedWritesGoAfterTheConfirmedRecordsAndAResendRepeatsThePlace() {
        var c = TextCheckpoint(trim: StreamTrim(maxLen: 200), sealedKidBytes: 2)
        for seq in UInt64(1)...3 { c.add(seq: seq, text: "abc") }
        let w1 = c.take()!
        XCTAssertEqual(w1.start, 0)
        XCTAssertEqual(w1.storedStart, 0)
        c.written(through: w1.throughSeq, ok: true)
        let r1 = SealedFormat.sealedLength(plaintextBytes: 9, kidBytes: 2)
        XCTAssertEqual(c.confirmedStoredEnd, r1)
        XCTAssertEqual(c.confirmedEnd, 9)

        c.add(seq: 4, text: "de")
        let w2 = c.take()!
        XCTAssertEqual(w2.start, 9)
        XCTAssertEqual(w2.storedStart, r1)
        c.written(through: w2.throughSeq, ok: false)   // failed (or its reply was lost)
        c.add(seq: 5, text: "f")
        let w3 = c.take()!
        XCTAssertEqual(w3.start, 9, "the resend covers the failed write's text too")
        XCTAssertEqual(w3.storedStart, r1, "and goes to the same place")
        XCTAssertEqual(w3.text, Array("def".utf8))
        c.written(through: w3.throughSeq, ok: true)
        XCTAssertEqual(c.confirmedStoredEnd, r1 + SealedFormat.sealedLength(plaintextBytes: 3, kidBytes: 2))
        // The final event's pending write starts there too.
        c.add(seq: 6, text: "")
        XCTAssertEqual(c.pending(through: 6)?.storedStart, c.confirmedStoredEnd)
    }

    /// The final event is sent while a write is in flight, and that write's success comes
    /// back after: the final's script wrote one longer record over it, from the same place.
    /// Nothing may then be written inside that record (a checkpoint, or a resent final
    /// placed after the in-flight write's record), or neither record opens.
    func testAWritesLateSuccessAfterTheFinalWasSentMovesNothingIntoTheFinalsRecord() {
        var c = TextCheckpoint(trim: StreamTrim(maxLen: 20), sealedKidBytes: 2)
        for seq in UInt64(1)...2 { c.add(seq: seq, text: "ab") }
        let inFlight = c.take()!
        for seq in UInt64(3)...6 { c.add(seq: seq, text: "cd") }
        c.add(seq: 7, text: "")   // the final event
        let final = c.takeFinal(through: 7)!
        XCTAssertEqual(final.storedStart, inFlight.storedStart, "the final's record goes where the write in flight went")
        XCTAssertEqual(final.start, 0)
        c.written(through: inFlight.throughSeq, ok: true)   // its reply comes after the final was sent
        XCTAssertFalse(c.isDue)
        XCTAssertNil(c.take(), "no write after the final's: it would start inside the final's record")
        XCTAssertEqual(c.takeFinal(through: 7), final, "a resent final goes to the same place with the same text")
        c.written(through: 7, ok: true)
        XCTAssertEqual(c.confirmedSeq, 7)
        XCTAssertEqual(c.confirmedStoredEnd, SealedFormat.sealedLength(plaintextBytes: 12, kidBytes: 2))
        XCTAssertNil(c.take())
    }

    func testPlainTextStoresAtThePlaintextOffsets() {
        var c = TextCheckpoint(trim: StreamTrim(maxLen: 200))
        c.add(seq: 1, text: "hello")
        let w = c.take()!
        c.written(through: w.throughSeq, ok: true)
        c.add(seq: 2, text: "x")
        XCTAssertEqual(c.take()?.storedStart, 5)
        XCTAssertEqual(c.confirmedStoredEnd, 5)
    }

    func testAnEmptyWriteStoresNothing() {
        let c = TextCheckpoint(trim: StreamTrim(maxLen: 200), sealedKidBytes: 5)
        XCTAssertEqual(c.storedLength(plaintextBytes: 0), 0)
        XCTAssertEqual(c.storedLength(plaintextBytes: 1), SealedFormat.sealedLength(plaintextBytes: 1, kidBytes: 5))
    }
}
