import XCTest
@testable import RelayClient

final class TextDirectionTests: XCTestCase {
    func testArabicIsRightToLeftWithTallLines() {
        let l = DirectionDetection.detect("مرحبا، هذا مشروع عقد")
        XCTAssertEqual(l?.direction, .rightToLeft)
        XCTAssertEqual(l?.isArabic, true)
        XCTAssertGreaterThanOrEqual(l?.lineHeightMultiplier ?? 0, 1.8)
    }

    func testHebrewIsRightToLeftButNotArabic() {
        let l = DirectionDetection.detect("שלום עולם")
        XCTAssertEqual(l?.direction, .rightToLeft)
        XCTAssertEqual(l?.isArabic, false)
    }

    func testEnglishIsLeftToRight() {
        XCTAssertEqual(DirectionDetection.detect("Hello there")?.direction, .leftToRight)
        XCTAssertEqual(DirectionDetection.detect("Hello there")?.lineHeightMultiplier, 1.4)
    }

    func testMarkdownDigitsAndPunctuationAreIgnored() {
        // "## 1. " markers and digits first, Arabic letters decide.
        XCTAssertEqual(DirectionDetection.detect("## 1. **البند الأول**")?.direction, .rightToLeft)
        // Arabic-Indic digits are not letters.
        XCTAssertNil(DirectionDetection.detect("١٢٣٤ ۱۲۳ 123 — !? ** ## `` >"))
    }

    func testURLsAreIgnored() {
        XCTAssertEqual(DirectionDetection.detect("https://example.com/abc مرحبا")?.direction, .rightToLeft)
        XCTAssertEqual(DirectionDetection.detect("www.example.org هذا")?.direction, .rightToLeft)
        XCTAssertEqual(DirectionDetection.detect("[رابط](http://x.y/z) نص")?.direction, .rightToLeft)
        XCTAssertEqual(DirectionDetection.detect("<https://example.com> نص")?.direction, .rightToLeft)
    }

    func testMajorityOfStrongLettersWinsTieGoesToFirst() {
        XCTAssertEqual(DirectionDetection.detect("API هذه الواجهة")?.direction, .rightToLeft)
        XCTAssertEqual(DirectionDetection.detect("ab جد")?.direction, .leftToRight)
        XCTAssertEqual(DirectionDetection.detect("جد ab")?.direction, .rightToLeft)
    }

    func testOnlyTheFirstThirtyCharactersCount() {
        let text = String(repeating: "a", count: 30) + String(repeating: "ب", count: 100)
        XCTAssertEqual(DirectionDetection.detect(text)?.direction, .leftToRight)
    }

    func testRangesAtTheEdges() {
        XCTAssertTrue(DirectionDetection.isRightToLeft("\u{0590}"))
        XCTAssertTrue(DirectionDetection.isRightToLeft("\u{08FF}"))
        XCTAssertTrue(DirectionDetection.isRightToLeft("\u{FB1D}"))
        XCTAssertTrue(DirectionDetection.isRightToLeft("\u{FDFF}"))
        XCTAssertTrue(DirectionDetection.isRightToLeft("\u{FE70}"))
        XCTAssertTrue(DirectionDetection.isRightToLeft("\u{FEFF}"))
        XCTAssertFalse(DirectionDetection.isRightToLeft("\u{0900}"))
        XCTAssertFalse(DirectionDetection.isRightToLeft("\u{058F}"))
        // Presentation forms count as Arabic.
        XCTAssertEqual(DirectionDetection.detect("\u{FEB3}\u{FEE0}\u{FE8E}\u{FEE1}")?.isArabic, true)
    }

    func testDetectorNeverFlips() {
        var d = DirectionDetector()
        XCTAssertNil(d.layout)
        XCTAssertEqual(d.decide(from: "مرحبا").direction, .rightToLeft)
        XCTAssertEqual(d.decide(from: "Hello world, this is English").direction, .rightToLeft)
    }

    func testDetectorLooksFurtherWhenTheSampleHasNoLetters() {
        var d = DirectionDetector()
        let text = String(repeating: "1 ", count: 20) + "مرحبا"
        XCTAssertEqual(d.decide(from: text).direction, .rightToLeft)
        var e = DirectionDetector()
        XCTAssertEqual(e.decide(from: "123"), .defaultLeftToRight)
    }
}
