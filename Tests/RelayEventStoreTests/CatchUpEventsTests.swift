import RelayCore
import RelayTestKit
import XCTest
@testable import RelayEventStore

/// A read after a seq: whether the window's entries continue from it, and the original
/// deltas cut back out of the text key at their stored end offsets (docs/PROTOCOL.md §6.3).
final class CatchUpEventsTests: XCTestCase {
    private func ev(_ seq: UInt64) -> SequencedEvent { SequencedEvent(seq: seq, json: StreamEvent.delta("t\(seq)").json) }

    func testEntriesThatContinueFromTheSeqAreComplete() {
        XCTAssertEqual(CatchUpEvents.continuity(after: 5, events: [], lossless: false), .complete)
        XCTAssertEqual(CatchUpEvents.continuity(after: 5, events: [ev(6), ev(7)], lossless: false), .complete)
        XCTAssertEqual(CatchUpEvents.continuity(after: 5, events: [ev(4), ev(5), ev(6)], lossless: true), .complete)
    }

    func testAWindowPastTheSeqIsACatchUpWithTheTextElseAGap() {
        XCTAssertEqual(CatchUpEvents.continuity(after: 5, events: [ev(9), ev(10)], lossless: true), .catchUp(to: 8))
        XCTAssertEqual(CatchUpEvents.continuity(after: 5, events: [ev(9), ev(10)], lossless: false), .gap(to: 8))
        XCTAssertEqual(CatchUpEvents.continuity(after: 0, events: [ev(2)], lossless: true), .catchUp(to: 1))
    }

    /// The `offsets` bytes of `ends` (`OffsetRuns`' layout, one u32 per seq).
    private func offsets(_ ends: [Int]) -> [UInt8] {
        OffsetRuns.runs(ends.enumerated().map { TextCheckpoint.Offset(seq: UInt64($0.offset + 1), end: $0.element) }).flatMap(\.bytes)
    }

    func testTheDeltasComeBackWithTheirOwnSeqsAndText() throws {
        // Multi-byte characters, an empty delta, a newline and a quote, at their boundaries.
        let deltas = ["Clause", " 3", "", "é中", "\n\"", "🙂"]
        let text = Array(deltas.joined().utf8)
        var ends: [Int] = []
        var at = 0
        for d in deltas { at += d.utf8.count; ends.append(at) }
        let all = offsets(ends)
        for from in 0..<deltas.count {
            for to in (from + 1)...deltas.count {
                let start = from == 0 ? 0 : ends[from - 1]
                let got = try XCTUnwrap(CatchUpEvents.events(from: UInt64(from), to: UInt64(to), start: start,
                                                             ends: all[(4 * from)..<(4 * to)], text: text[start..<ends[to - 1]]),
                                        "\(from)…\(to)")
                XCTAssertEqual(got, (from + 1...to).map { SequencedEvent(seq: UInt64($0), json: StreamEvent.delta(deltas[$0 - 1]).json) })
            }
        }
    }

    func testOffsetsThatDoNotDescribeTheTextAreRefused() {
        let text = Array("abcdef".utf8)[...]
        // Backwards, past the text, too few bytes, an empty range.
        XCTAssertNil(CatchUpEvents.events(from: 0, to: 2, start: 0, ends: offsets([4, 2])[...], text: text))
        XCTAssertNil(CatchUpEvents.events(from: 0, to: 2, start: 0, ends: offsets([3, 9])[...], text: text))
        XCTAssertNil(CatchUpEvents.events(from: 0, to: 2, start: 0, ends: offsets([3])[...], text: text))
        XCTAssertNil(CatchUpEvents.events(from: 2, to: 2, start: 0, ends: [][...], text: text))
        XCTAssertNil(CatchUpEvents.events(from: 0, to: 1, start: 4, ends: offsets([2])[...], text: text))
    }
}
