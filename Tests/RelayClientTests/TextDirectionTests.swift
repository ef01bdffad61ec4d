import XCTest
import RelayCore
@testable import RelayClient

/// The right-to-left rule of `conformance/CLIENT_RULES.md`, with its vectors, on the detector and
/// through `ResponseRenderer` (nothing rendered before the decision, never switched).
final class TextDirectionTests: XCTestCase {
    let arabic = "هذا مشروع اتفاقية عدم إفصاح متبادلة بين الطرفين"

    /// Feeds `deltas` to a renderer with a 50 ms tick between them, then `done`.
    /// Returns the updates that carry text.
    func render(_ deltas: [String]) -> [RenderUpdate] {
        var r = ResponseRenderer(now: 0)
        var out: [RenderUpdate] = []
        var now: Int64 = 0
        for d in deltas {
            now += 50
            if let u = r.receive(.delta(d), now: now) { out.append(u) }
            now += 50
            if let u = r.tick(now: now) { out.append(u) }
        }
        if let u = r.receive(.done(finishReason: "stop", usage: Usage(promptTokens: 1, completionTokens: deltas.count)), now: now + 50) {
            out.append(u)
        }
        return out.filter { !$0.appended.isEmpty }
    }

    /// The vector holds: every text update has `expected` and the text is whole.
    func assertVector(_ deltas: [String], _ expected: TextLayout, file: StaticString = #filePath, line: UInt = #line) {
        let u = render(deltas)
        XCTAssertFalse(u.isEmpty, file: file, line: line)
        XCTAssertEqual(u.last?.text, deltas.joined(), file: file, line: line)
        for x in u { XCTAssertEqual(x.layout, expected, "never switched; nothing shown before the decision", file: file, line: line) }
    }

    func testVectorThematicBreakThenArabic() {
        assertVector(["---", "\n", arabic], .arabic)
        // Word by word too: the `---` line is held until the decision.
        assertVector(["---", "\n"] + arabic.split(separator: " ").map { $0 + " " }, .arabic)
    }

    func testVectorTwoNewlinesThenArabic() {
        assertVector(["\n", "\n", arabic], .arabic)
        assertVector(["\n", "\n"] + arabic.split(separator: " ").map { $0 + " " }, .arabic)
    }

    func testVectorPureArabicAndPureEnglish() {
        assertVector([arabic], .arabic)
        assertVector(["This is a mutual non-disclosure ", "agreement between the parties."], .defaultLeftToRight)
        XCTAssertEqual(TextLayout.arabic.lineHeightMultiplier, 1.8)
        XCTAssertEqual(TextLayout.defaultLeftToRight.lineHeightMultiplier, 1.4)
        XCTAssertEqual(TextLayout.arabic.direction, .rightToLeft)
    }

    /// English whose only Arabic word starts at sample position `p` (1-based).
    func englishWithArabic(at p: Int) -> String {
        // "## " and spaces are not in the sample; each "abcd" is 4 sample scalars.
        var text = "## "
        var n = 0
        while n + 4 < p { text += "abcd "; n += 4 }
        text += String(repeating: "x", count: p - 1 - n) + " "
        return text + "مرحبا and then more English words follow here"
    }

    func testVectorArabicWordAtSamplePosition25And35() {
        let at25 = englishWithArabic(at: 25)
        let at35 = englishWithArabic(at: 35)
        XCTAssertEqual(DirectionDetection.sample(of: at25).firstIndex(where: DirectionDetection.isArabic), 24)
        XCTAssertEqual(DirectionDetection.sample(of: at35 + String(repeating: " z", count: 40)).count, 30)
        XCTAssertEqual(Array(at35.unicodeScalars).filter(DirectionDetection.counts).firstIndex(where: DirectionDetection.isArabic), 34)
        assertVector([at25], .arabic)
        assertVector([at35], .defaultLeftToRight)
        // Streamed in small deltas, the same.
        assertVector(at25.map { String($0) }, .arabic)
        assertVector(at35.map { String($0) }, .defaultLeftToRight)
    }

    func testSampleSkipsWhitespaceAndMarkdownSyntaxOnly() {
        XCTAssertEqual(String(String.UnicodeScalarView(DirectionDetection.sample(of: "# *a* _b_ `c` ~d~ > e - f | g = h + [i](j) !k\u{00A0}\u{2003}l"))),
                       "abcdefghijkl")
        // Digits, punctuation and URLs count (the rule says nothing else is skipped).
        XCTAssertEqual(DirectionDetection.sample(of: "1. http://x.y").count, 12)
    }

    func testArabicRanges() {
        for v: UInt32 in [0x0600, 0x06FF, 0x0750, 0x077F, 0x0870, 0x089F, 0x08A0, 0x08FF, 0xFB50, 0xFDFF, 0xFE70, 0xFEFF] {
            XCTAssertTrue(DirectionDetection.isArabic(Unicode.Scalar(v)!), String(v, radix: 16))
        }
        for v: UInt32 in [0x05FF, 0x0700, 0x0780, 0x0590, 0xFB4F, 0xFE00, 0xFF00] {
            XCTAssertFalse(DirectionDetection.isArabic(Unicode.Scalar(v)!), String(v, radix: 16))
        }
        // Hebrew is not Arabic: the rule sets right-to-left for Arabic only.
        XCTAssertEqual(DirectionDetection.layout(of: "שלום עולם"), .defaultLeftToRight)
    }

    func testDetectorDecidesAtThirtyScalarsAndNeverChanges() {
        var d = DirectionDetector()
        XCTAssertNil(d.feed(String(repeating: "a", count: 29)))
        XCTAssertNil(d.layout)
        XCTAssertEqual(d.feed("bمرحبا"), .defaultLeftToRight, "the 30th scalar decides; later Arabic does not count")
        XCTAssertNil(d.feed("مرحبا"))
        XCTAssertEqual(d.decideNow(), .defaultLeftToRight)
        var e = DirectionDetector()
        XCTAssertEqual(e.decideNow(), .defaultLeftToRight, "an empty sample is left-to-right")
    }

    func testNothingIsRenderedBeforeTheDecision() {
        var r = ResponseRenderer(now: 0)
        XCTAssertNil(r.receive(.delta("---\n"), now: 10), "the thematic break is held")
        XCTAssertNil(r.receive(.delta("\n\n"), now: 20), "so is a paragraph break")
        XCTAssertNil(r.tick(now: 500))
        XCTAssertNil(r.layout)
        let u = r.receive(.delta(String(repeating: "مرحبا ", count: 6)), now: 600)
        XCTAssertEqual(u?.layout, .arabic)
        XCTAssertTrue(u?.text.hasPrefix("---\n\n\n") ?? false, "held text is released with the decision")
    }
}
