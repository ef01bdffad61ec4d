import RelayCore
import RelayTestKit
import RelayHTTP
import XCTest
@testable import RelayServer

/// Offset reads (docs/PROTOCOL.md §12): offsets ↔ seqs, what each read answers, the body
/// and its `Stream-*` headers, and the DS §10.1 cursor on an injected clock.
final class OffsetReadDecisionTests: XCTestCase {
    private func found(owned: Bool = true, finished: Bool = false, lastSeq: UInt64 = 10, first: UInt64? = 1,
                       text: Int = 100) -> ResumeDecision.Found {
        .init(ownedByCaller: owned, finished: finished, lastSeq: lastSeq, firstRetainedSeq: first, textLength: text)
    }

    private func delta(_ seq: UInt64, _ text: String = "x") -> SequencedEvent {
        SequencedEvent(seq: seq, json: StreamEvent.delta(text).json)
    }

    private func done(_ seq: UInt64) -> SequencedEvent {
        SequencedEvent(seq: seq, json: "{\"type\":\"done\",\"finish_reason\":\"stop\"}")
    }

    func testOffsetsParseAsSentinelsOrUpToTwentyDigits() throws {
        XCTAssertEqual(try ReadOffset.parse("-1"), .start)
        XCTAssertEqual(try ReadOffset.parse("now"), .now)
        XCTAssertEqual(try ReadOffset.parse("7"), .after(7))
        XCTAssertEqual(try ReadOffset.parse("00000000000000000007"), .after(7))
        XCTAssertEqual(try ReadOffset.parse("18446744073709551615"), .after(.max))
        for bad in ["", "-2", "+1", " 1", "1 ", "now ", "NOW", "1e3", "0x10", "١٢", "000000000000000000007", "18446744073709551616"] {
            XCTAssertThrowsError(try ReadOffset.parse(bad), bad) { e in
                XCTAssertEqual((e as? APIError)?.code, .invalidOffset, bad)
                XCTAssertEqual((e as? APIError)?.status, 400, bad)
            }
        }
    }

    func testEmittedOffsetsAreTwentyDigitsAndSortLikeSeqs() throws {
        XCTAssertEqual(ReadOffset.format(0), "00000000000000000000")
        XCTAssertEqual(ReadOffset.format(21), "00000000000000000021")
        XCTAssertEqual(ReadOffset.format(.max), "18446744073709551615")
        let seqs: [UInt64] = [0, 1, 9, 10, 99, 100, 12_345, 1 << 40, .max]
        XCTAssertEqual(seqs.map(ReadOffset.format), seqs.map(ReadOffset.format).sorted(), "lexicographic order is seq order (DS §8)")
        for s in seqs { XCTAssertEqual(try ReadOffset.parse(ReadOffset.format(s)), .after(s), "round trip \(s)") }
    }

    func testLiveModes() throws {
        XCTAssertEqual(try ReadMode.parse(nil), .catchUp)
        XCTAssertEqual(try ReadMode.parse("long-poll"), .longPoll)
        XCTAssertEqual(try ReadMode.parse("sse"), .sse)
        for bad in ["", "auto", "LONG-POLL", "true"] {
            XCTAssertThrowsError(try ReadMode.parse(bad), bad) { XCTAssertEqual(($0 as? APIError)?.code, .invalidOffset) }
        }
    }

    func testWhatEachOffsetAnswers() {
        XCTAssertEqual(OffsetReadDecision.decide(nil, offset: .start, lossless: true), .notFound)
        XCTAssertEqual(OffsetReadDecision.decide(found(owned: false), offset: .now, lossless: true), .notFound)
        XCTAssertEqual(OffsetReadDecision.decide(found(lastSeq: 10), offset: .after(11), lossless: true), .beyondEnd(lastSeq: 10))
        XCTAssertEqual(OffsetReadDecision.decide(found(lastSeq: 10), offset: .start, lossless: true), .read(after: 0, catchUp: false))
        XCTAssertEqual(OffsetReadDecision.decide(found(lastSeq: 10), offset: .after(4), lossless: true), .read(after: 4, catchUp: false))
        XCTAssertEqual(OffsetReadDecision.decide(found(lastSeq: 10), offset: .after(10), lossless: true), .tail(at: 10))
        XCTAssertEqual(OffsetReadDecision.decide(found(lastSeq: 10), offset: .now, lossless: true), .tail(at: 10))
        XCTAssertEqual(OffsetReadDecision.decide(found(lastSeq: 0, first: nil), offset: .start, lossless: true), .tail(at: 0))
        XCTAssertEqual(OffsetReadDecision.decide(found(finished: true, lastSeq: 10), offset: .after(10), lossless: true), .closed(finalSeq: 10))
        XCTAssertEqual(OffsetReadDecision.decide(found(finished: true, lastSeq: 10), offset: .now, lossless: true), .closed(finalSeq: 10))
        XCTAssertEqual(OffsetReadDecision.decide(found(finished: true, lastSeq: 10), offset: .after(9), lossless: true), .read(after: 9, catchUp: false))
    }

    func testBehindTheRetainedWindowIsACatchUpOrAGapAsOnTheSSEResume() {
        XCTAssertEqual(OffsetReadDecision.decide(found(lastSeq: 100, first: 50), offset: .after(10), lossless: true),
                       .read(after: 10, catchUp: true))
        XCTAssertEqual(OffsetReadDecision.decide(found(lastSeq: 100, first: 50), offset: .after(10), lossless: false),
                       .gap(oldestKept: 50))
        XCTAssertEqual(OffsetReadDecision.decide(found(lastSeq: 100, first: 50, text: 0), offset: .start, lossless: true),
                       .gap(oldestKept: 50))
    }

    func testABatchTakesTheEventsAfterItsPositionAndEndsAtTheFinalOne() {
        let read = [delta(3), delta(4), delta(5), done(6)]
        let b = OffsetReadBatch(after: 3, read: read, maxBytes: 1 << 20)
        XCTAssertEqual(b.events.map(\.seq), [4, 5, 6])
        XCTAssertEqual(b.nextSeq, 6)
        XCTAssertTrue(b.upToDate)
        XCTAssertTrue(b.closed)
        XCTAssertEqual(EventFramer.jsonArray(b.events), "[" + read[1...].map(\.json).joined(separator: ",") + "]")
        let empty = OffsetReadBatch(after: 6, read: [], maxBytes: 10)
        XCTAssertEqual(EventFramer.jsonArray(empty.events), "[]")
        XCTAssertEqual(empty.nextSeq, 6)
        XCTAssertTrue(empty.upToDate)
        XCTAssertFalse(empty.closed)
        let open = OffsetReadBatch(after: 0, read: [delta(1), delta(2)], maxBytes: 1 << 20)
        XCTAssertFalse(open.closed)
        XCTAssertTrue(open.upToDate)
    }

    func testABodyStopsAtItsByteCapButAlwaysAdvances() {
        let read = (1...10).map { delta(UInt64($0), String(repeating: "a", count: 100)) }
        let size = read[0].json.utf8.count + 1
        let capped = OffsetReadBatch(after: 0, read: read, maxBytes: size * 3)
        XCTAssertEqual(capped.events.map(\.seq), [1, 2, 3])
        XCTAssertEqual(capped.nextSeq, 3)
        XCTAssertFalse(capped.upToDate, "more exists: no Stream-Up-To-Date (DS §5.6)")
        let tiny = OffsetReadBatch(after: 0, read: read, maxBytes: 1)
        XCTAssertEqual(tiny.events.map(\.seq), [1], "one event always goes")
        XCTAssertFalse(tiny.closed)
    }

    func testHeadersAndControlEvent() {
        let open = Dictionary(uniqueKeysWithValues: OffsetReadBatch.headers(nextSeq: 7, upToDate: true, closed: false, cursor: 42))
        XCTAssertEqual(open, ["Stream-Next-Offset": "00000000000000000007", "Stream-Up-To-Date": "true", "Stream-Cursor": "42"])
        let partial = Dictionary(uniqueKeysWithValues: OffsetReadBatch.headers(nextSeq: 7, upToDate: false, closed: false, cursor: nil))
        XCTAssertEqual(partial, ["Stream-Next-Offset": "00000000000000000007"])
        let closed = Dictionary(uniqueKeysWithValues: OffsetReadBatch.headers(nextSeq: 9, upToDate: false, closed: true, cursor: 42))
        XCTAssertEqual(closed, ["Stream-Next-Offset": "00000000000000000009", "Stream-Up-To-Date": "true", "Stream-Closed": "true"])
        XCTAssertEqual(OffsetReadBatch.controlJSON(nextSeq: 7, upToDate: true, closed: false, cursor: 42),
                       "{\"streamNextOffset\":\"00000000000000000007\",\"streamCursor\":\"42\",\"upToDate\":true}")
        XCTAssertEqual(OffsetReadBatch.controlJSON(nextSeq: 9, upToDate: true, closed: true, cursor: 42),
                       "{\"streamNextOffset\":\"00000000000000000009\",\"upToDate\":true,\"streamClosed\":true}")
    }

    func testCursorsCountIntervalsAndNeverGoBackwards() {
        let clock = VirtualClock(startMs: Int64(StreamCursor.epochMs + 1000 * StreamCursor.intervalMs + 5))
        let now = StreamCursor.next(wallMs: clock.loopMs, client: nil, jitterSeconds: 1)
        XCTAssertEqual(now, 1000)
        XCTAssertEqual(StreamCursor.next(wallMs: clock.loopMs, client: "999", jitterSeconds: 3600), 1000, "a client behind: the interval")
        XCTAssertEqual(StreamCursor.next(wallMs: clock.loopMs, client: "1000", jitterSeconds: 1), 1001, "at least one interval ahead")
        XCTAssertEqual(StreamCursor.next(wallMs: clock.loopMs, client: "1000", jitterSeconds: 3600), 1180, "3600 s = 180 intervals")
        XCTAssertEqual(StreamCursor.next(wallMs: clock.loopMs, client: "5000", jitterSeconds: 30), 5002)
        XCTAssertEqual(StreamCursor.next(wallMs: clock.loopMs, client: "junk", jitterSeconds: 30), 1000)
        XCTAssertEqual(StreamCursor.next(wallMs: clock.loopMs, client: "18446744073709551615", jitterSeconds: 30), .max,
                       "a cursor at the top stays there, never wraps backwards")
        XCTAssertEqual(StreamCursor.next(wallMs: clock.loopMs, client: "18446744073709551614", jitterSeconds: 3600), .max)
        clock.advance(by: Int64(StreamCursor.intervalMs))
        XCTAssertEqual(StreamCursor.next(wallMs: clock.loopMs, client: nil, jitterSeconds: 1), 1001)
    }
}
