import RelayTestKit
import XCTest
@testable import RelayClient

final class RenderBufferTests: XCTestCase {
    let long = "The quick brown fox jumps over the lazy dog again "   // 50 characters

    func testNothingBeforeFiftyMilliseconds() {
        var b = RenderBuffer(now: 0)
        XCTAssertNil(b.append(long, now: 0))
        XCTAssertNil(b.tick(now: 49))
        XCTAssertEqual(b.tick(now: 50)?.text, "The quick brown fox jumps over the lazy dog again")
        XCTAssertEqual(b.pending, " ", "the trailing space is held: a combining mark may follow it")
    }

    func testIntervalRestartsAfterEachFlush() {
        var b = RenderBuffer(now: 0)
        _ = b.append(long, now: 0)
        XCTAssertNotNil(b.tick(now: 50))
        _ = b.append("more words ", now: 60)
        XCTAssertNil(b.tick(now: 99))
        XCTAssertEqual(b.tick(now: 100), .init(text: " more words", reason: .interval))
    }

    func testTrailingPartialWordIsHeldBack() {
        var b = RenderBuffer(now: 0)
        _ = b.append(long + "jum", now: 0)
        XCTAssertEqual(b.tick(now: 50)?.text, long)
        XCTAssertEqual(b.pending, "jum")
        _ = b.append("ped", now: 60)
        XCTAssertNil(b.tick(now: 200), "still one partial word")
        _ = b.append(" x", now: 210)
        XCTAssertEqual(b.tick(now: 260)?.text, "jumped ")
    }

    func testFirstFlushWaitsForThirtyCharacters() {
        var b = RenderBuffer(now: 0)
        _ = b.append("Short start ", now: 0)          // 12 characters
        XCTAssertNil(b.tick(now: 500))
        _ = b.append("that keeps going on ", now: 510)  // 32 characters
        XCTAssertEqual(b.tick(now: 560)?.text, "Short start that keeps going on")
    }

    func testParagraphBreakFlushesAtOnce() {
        var b = RenderBuffer(now: 0)
        XCTAssertNil(b.append("Hi.\n", now: 1))
        XCTAssertEqual(b.append("\nNext", now: 2), .init(text: "Hi.\n\n", reason: .paragraphBreak))
        XCTAssertEqual(b.pending, "Next")
    }

    func testParagraphBreakInsideOneDelta() {
        var b = RenderBuffer(now: 0)
        XCTAssertEqual(b.append("One.\n\nTwo three", now: 1)?.text, "One.\n\nTwo ")
    }

    func testThematicBreakLinesFlushAtOnce() {
        for marker in ["---", "***", "___", " - - -"] {
            var b = RenderBuffer(now: 0)
            XCTAssertNil(b.append("Intro\n\(marker)", now: 1), marker)
            let f = b.append("\nNext", now: 2)
            XCTAssertEqual(f?.reason, .thematicBreak, marker)
            XCTAssertEqual(f?.text, "Intro\n\(marker)\n", marker)
        }
    }

    func testThematicBreakInsideFencedCodeDoesNotFlush() {
        var b = RenderBuffer(now: 0)
        XCTAssertNil(b.append("```yaml\n---\nkey: v\n", now: 1))
        XCTAssertEqual(b.append("```\n---\n", now: 2)?.reason, .thematicBreak)
    }

    func testUnspacedTextIsReleasedAfterSixtyFourCharacters() {
        var b = RenderBuffer(now: 0)
        let cjk = String(repeating: "漢", count: 63)
        _ = b.append(cjk, now: 0)
        XCTAssertNil(b.tick(now: 100), "63 held")
        _ = b.append("字", now: 101)
        let f = b.tick(now: 151)
        XCTAssertEqual(f?.reason, .longRun)
        XCTAssertEqual(f?.text, cjk, "the last character is held, it may still grow")
        XCTAssertEqual(b.pending, "字")
    }

    func testEmojiZWJSequenceSplitAcrossDeltasStaysWhole() {
        var b = RenderBuffer(now: 0)
        let family = "👨\u{200D}👩\u{200D}👧\u{200D}👦"
        let head = String(repeating: "x", count: 70)
        _ = b.append(head + "👨\u{200D}👩", now: 0)
        let f = b.tick(now: 50)
        XCTAssertEqual(f?.text, head, "the unfinished emoji cluster is held")
        _ = b.append("\u{200D}👧\u{200D}👦", now: 60)
        XCTAssertEqual(b.finish(now: 70)?.text, family)
    }

    func testArabicLetterWithDiacriticInLaterDeltaStaysWhole() {
        var b = RenderBuffer(now: 0)
        let head = String(repeating: "ب", count: 70)
        _ = b.append(head + "م", now: 0)
        XCTAssertEqual(b.tick(now: 50)?.text, head)
        _ = b.append("\u{064E}", now: 51)   // fatha attaches to the held meem
        XCTAssertEqual(b.finish(now: 52)?.text, "مَ")
    }

    func testWordBeforeATrailingSpaceIsReleasedButTheSpaceIsHeld() {
        var b = RenderBuffer(now: 0)
        _ = b.append(long + "tail ", now: 0)
        XCTAssertEqual(b.tick(now: 50)?.text, long + "tail")
        XCTAssertEqual(b.pending, " ")
        _ = b.append("\u{0301}x", now: 60)     // a combining mark joins the held space
        XCTAssertEqual(b.finish(now: 70)?.text, " \u{0301}x")
    }

    func testTrailingLineFeedIsNeverHeld() {
        var b = RenderBuffer(now: 0)
        _ = b.append(long + "line\n", now: 0)
        XCTAssertEqual(b.tick(now: 50)?.text, long + "line\n")
    }

    func testFinishFlushesEverythingIncludingPartialWord() {
        var b = RenderBuffer(now: 0)
        _ = b.append("Hi th", now: 0)
        XCTAssertEqual(b.finish(now: 1), .init(text: "Hi th", reason: .done))
        XCTAssertNil(b.tick(now: 1_000))
        XCTAssertNil(b.append("late", now: 1_001))
        XCTAssertNil(b.finish(now: 1_002))
    }

    func testBackgroundPausesAndForegroundReplays() {
        var b = RenderBuffer(now: 0)
        b.enterBackground()
        XCTAssertNil(b.append("Para one.\n\n", now: 1))
        XCTAssertNil(b.append(long, now: 2))
        XCTAssertNil(b.tick(now: 500))
        let f = b.enterForeground(now: 600)
        XCTAssertEqual(f, .init(text: "Para one.\n\n" + long.dropLast(), reason: .foreground))
    }

    func testDoneInBackgroundIsReplayedOnForeground() {
        var b = RenderBuffer(now: 0)
        b.enterBackground()
        _ = b.append("abc def", now: 1)
        XCTAssertNil(b.finish(now: 2))
        XCTAssertEqual(b.enterForeground(now: 3), .init(text: "abc def", reason: .foreground))
        XCTAssertNil(b.enterForeground(now: 4))
    }

    func testSafeCutRules() {
        XCTAssertEqual(cut("hello wor"), "hello ")
        XCTAssertEqual(cut("hello"), "")
        XCTAssertEqual(cut("a\n"), "a\n")
        XCTAssertEqual(cut("a\r"), "a", "CR may become CRLF: held, the word before it goes")
        XCTAssertEqual(cut("a\r\n"), "a\r\n")
        XCTAssertEqual(cut(""), "")
    }

    private func cut(_ s: String) -> String {
        String(s[..<RenderBuffer.safeCut(s).0])
    }

    /// Property: for random texts and random chunkings (at scalar boundaries), random
    /// ticks and background periods, the flushes concatenate to the deltas exactly,
    /// each flush boundary is a grapheme boundary of the whole text, and no flush
    /// before `done` ends mid-word unless it is a long unspaced run.
    func testPropertyNoTokenDroppedAndClustersWhole() {
        let pieces = ["Hello", " ", "world", "\n\n", "---\n", "```\n", "漢字かな", "👨\u{200D}👩\u{200D}👧", "🇸🇦", "مَرْحَبًا", " ", "é", "e\u{0301}", "\r\n", "***", "—", "١٢٣", "x"]
        var rng = SplitMix64(seed: 42)
        for round in 0..<300 {
            var text = ""
            for _ in 0..<Int.random(in: 1...80, using: &rng) { text += pieces.randomElement(using: &rng)! }
            let chunks = randomChunks(text, using: &rng)
            var b = RenderBuffer(now: 0)
            var now: Int64 = 0
            var flushes: [RenderBuffer.Flush] = []
            for c in chunks {
                now += Int64.random(in: 0...40, using: &rng)
                if Int.random(in: 0..<20, using: &rng) == 0 { b.enterBackground() }
                if Int.random(in: 0..<10, using: &rng) == 0, let f = b.enterForeground(now: now) { flushes.append(f) }
                if let f = b.append(c, now: now) { flushes.append(f) }
                if let f = b.tick(now: now) { flushes.append(f) }
            }
            if let f = b.finish(now: now + 1) { flushes.append(f) }
            if let f = b.enterForeground(now: now + 2) { flushes.append(f) }

            let joined = flushes.map(\.text).joined()
            XCTAssertEqual(Array(joined.unicodeScalars), Array(text.unicodeScalars), "round \(round)")
            XCTAssertTrue(b.pending.isEmpty)

            // Each flush boundary is a Character boundary of the full text.
            var offset = 0
            let boundaries = Set(text.indices.map { text.unicodeScalars.distance(from: text.unicodeScalars.startIndex, to: $0) } + [text.unicodeScalars.count])
            for f in flushes {
                offset += f.text.unicodeScalars.count
                XCTAssertTrue(boundaries.contains(offset), "round \(round): flush splits a cluster")
                // Never mid-word: the flush ends at whitespace or right before it.
                if f.reason == .interval || f.reason == .paragraphBreak || f.reason == .thematicBreak, let last = f.text.last {
                    let rest = text.unicodeScalars.dropFirst(offset)
                    let next = String(String.UnicodeScalarView(rest)).first
                    XCTAssertTrue(last.isWhitespace || next?.isWhitespace == true, "round \(round): mid-word flush \(f)")
                }
            }
        }
    }
}
