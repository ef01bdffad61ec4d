import RelayCore
import RelayTestKit
import XCTest
@testable import RelayEventStore

/// `RetainedAnswer`'s one encoding round-trips, returns exactly the text after any event,
/// and refuses damaged values; `RetentionBuffer` keeps an answer until it passes the cap.
final class RetainedAnswerTests: XCTestCase {
    private let done = "{\"type\":\"done\",\"finish_reason\":\"stop\",\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":4,\"total_tokens\":7}}"

    private func answer(_ deltas: [String]) -> RetainedAnswer {
        var b = RetentionBuffer(maxBytes: 1 << 20)
        for d in deltas { b.add(delta: d) }
        return RetainedAnswer(owner: "alice", sid: "s-1", finalSeq: UInt64(deltas.count + 1), createdMs: 1_700_000_000_000,
                              finishedMs: 1_700_000_004_000, text: b.text, deltaLengths: b.deltaLengths, doneJSON: done)
    }

    func testRoundTripAndTheTextAfterEveryEvent() throws {
        // Multi-byte characters, an empty delta, a newline, a long delta (2 LEB128 bytes).
        let deltas = ["Clause", " 3", "", "é中", "\n", "🙂🙂", String(repeating: "x", count: 300), "\"q\"\\"]
        let a = answer(deltas)
        let b = try RetainedAnswer(decoding: a.encoded())
        XCTAssertEqual(a, b)
        XCTAssertEqual(String(decoding: b.text, as: UTF8.self), deltas.joined())
        for k in 0...deltas.count + 2 {
            // After any event: each later delta as it was sent (its own seq and text), then done.
            var expect = deltas.enumerated().dropFirst(min(k, deltas.count)).map {
                SequencedEvent(seq: UInt64($0.offset + 1), json: StreamEvent.delta($0.element).json)
            }
            if k <= deltas.count { expect.append(SequencedEvent(seq: UInt64(deltas.count + 1), json: done)) }
            XCTAssertEqual(b.events(after: UInt64(k)), expect, "after \(k)")
        }
        XCTAssertEqual(b.doneJSON, done)
    }

    func testRandomAnswersRoundTrip() throws {
        var rng = SplitMix64(seed: 7)
        let pieces = ["a", "bc", "é", "中文", "🙂", " ", "\n", "", "\u{0}", String(repeating: "z", count: 200)]
        for _ in 0..<200 {
            let n = Int(rng.next() % 40)
            let deltas = (0..<n).map { _ in pieces[Int(rng.next() % UInt64(pieces.count))] }
            let a = answer(deltas)
            XCTAssertEqual(try RetainedAnswer(decoding: a.encoded()), a)
        }
    }

    func testTheValueIsValidUTF8() {
        let bytes = answer(["é", String(repeating: "y", count: 200), "🙂"]).encoded()
        XCTAssertNotNil(String(validatingUTF8: bytes.map { CChar(bitPattern: $0) } + [0]), "script arguments are strings")
    }

    func testDamagedValuesAreRefused() {
        let good = answer(["ab", "cd"]).encoded()
        XCTAssertThrowsError(try RetainedAnswer(decoding: []))
        XCTAssertThrowsError(try RetainedAnswer(decoding: Array("RA2\n".utf8) + good.dropFirst(4)), "another version")
        XCTAssertThrowsError(try RetainedAnswer(decoding: Array(good.dropLast(1))), "a length cut off")
        var wrongCount = answer(["ab", "cd"])
        wrongCount.finalSeq = 5
        XCTAssertThrowsError(try RetainedAnswer(decoding: wrongCount.encoded()), "lengths that do not match final_seq")
        var notDone = answer(["ab"])
        notDone.doneJSON = "{\"type\":\"delta\",\"content\":\"x\"}"
        XCTAssertThrowsError(try RetainedAnswer(decoding: notDone.encoded()), "the last event must be done")
    }

    func testASeededBufferHoldsTheWholeAnswerOfAContinuedStream() throws {
        // Deltas 1–3 were stored by another instance; this generation appends 4 and 5.
        var b = RetentionBuffer(maxBytes: 1 << 20)
        b.seed(text: Array("abcdéf".utf8), deltaLengths: [2, 2, 3])
        b.add(delta: "gh")
        b.add(delta: "中")
        let a = RetainedAnswer(owner: "o", sid: "s", finalSeq: 6, createdMs: 1, finishedMs: 2, text: b.text,
                               deltaLengths: b.deltaLengths, doneJSON: done)
        let d = try RetainedAnswer(decoding: a.encoded())
        XCTAssertEqual(d.events(after: 2).map(\.json), ["éf", "gh", "中"].map { StreamEvent.delta($0).json } + [done])
        var small = RetentionBuffer(maxBytes: 8)
        small.seed(text: Array("abcdefghij".utf8), deltaLengths: [10])
        XCTAssertTrue(small.isOverCap)
    }

    func testTheBufferLetsGoOnceTheAnswerPassesTheCap() {
        // Body = text + base64 of one LEB128 byte per short delta: 4 deltas of 5 bytes = 20 + 8.
        var b = RetentionBuffer(maxBytes: 28)
        for _ in 0..<4 { b.add(delta: "abcde") }
        XCTAssertFalse(b.isOverCap)
        XCTAssertEqual(b.bodyBytes, 28)
        XCTAssertEqual(b.deltaLengths, [5, 5, 5, 5])
        b.add(delta: "f")
        XCTAssertTrue(b.isOverCap)
        XCTAssertEqual(b.text, [])
        b.add(delta: "")
        XCTAssertTrue(b.isOverCap, "never kept again")
        XCTAssertEqual(RetainedAnswer.lengthBytes(of: 127), 1)
        XCTAssertEqual(RetainedAnswer.lengthBytes(of: 128), 2)
        XCTAssertEqual(RetainedAnswer.lengthBytes(of: 16_384), 3)
    }

    /// A record claiming more deltas than its lengths could hold (a forged `final_seq`) is
    /// refused before anything is allocated for them, never a crash.
    func testAForgedFinalSeqIsRefusedWithoutAllocatingForIt() {
        let done = #"{"type":"done","finish_reason":"stop","usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}"#
        let forged = "RA1\n{\"owner\":\"alice\",\"sid\":\"s1\",\"final_seq\":9000000000000000,\"created_ms\":1,\"finished_ms\":2,\"text_bytes\":0,\"at_rest\":\"plain\"}\n\(done)\n"
        XCTAssertThrowsError(try RetainedAnswer(decoding: Array(forged.utf8)))
    }
}
