import RelayUpstream
import XCTest

/// `ContinuationSeam`: the prefill is the text so far without its trailing whitespace, and the
/// continuation loses only the leading whitespace that repeats what was held back.
final class ContinuationSeamTests: XCTestCase {
    func testSplitHoldsBackTrailingWhitespaceOnly() {
        XCTAssertTrue(ContinuationSeam.split("Hello world") == ("Hello world", ""))
        XCTAssertTrue(ContinuationSeam.split("Hello ") == ("Hello", " "))
        XCTAssertTrue(ContinuationSeam.split("a:\n\n  ") == ("a:", "\n\n  "))
        XCTAssertTrue(ContinuationSeam.split("crlf\r\n\t") == ("crlf", "\r\n\t"))
        XCTAssertTrue(ContinuationSeam.split("no-break\u{00A0}") == ("no-break", "\u{00A0}"))
        XCTAssertTrue(ContinuationSeam.split(" \n ") == ("", " \n "))
        XCTAssertTrue(ContinuationSeam.split("") == ("", ""))
        XCTAssertTrue(ContinuationSeam.split("  lead") == ("  lead", ""), "leading whitespace stays in the prefill")
    }

    func testRepeatedWhitespaceIsDroppedOnce() {
        var seam = ContinuationSeam(whitespace: " ")
        XCTAssertEqual(seam.pass(" world"), "world")
        XCTAssertEqual(seam.pass(" again"), " again", "only the first repeat is the seam")
    }

    func testWhitespaceRepeatedAcrossDeltasIsDropped() {
        var seam = ContinuationSeam(whitespace: "\n\n  ")
        XCTAssertEqual(seam.pass("\n"), "")
        XCTAssertEqual(seam.pass("\n "), "")
        XCTAssertEqual(seam.pass(" -"), "-")
        XCTAssertEqual(seam.pass(" x"), " x")
    }

    func testContinuationWithoutTheWhitespacePassesUnchanged() {
        var seam = ContinuationSeam(whitespace: " ")
        XCTAssertEqual(seam.pass("world"), "world")
        XCTAssertEqual(seam.pass(" "), " ")
    }

    func testDifferentWhitespaceStopsTheMatch() {
        var seam = ContinuationSeam(whitespace: "\n\n")
        XCTAssertEqual(seam.pass("\n  - item"), "  - item", "the matching break is dropped, the rest is shown")
        var other = ContinuationSeam(whitespace: "  ")
        XCTAssertEqual(other.pass("\tx"), "\tx")
    }

    func testNoHeldWhitespacePassesEverything() {
        var seam = ContinuationSeam(whitespace: "")
        XCTAssertEqual(seam.pass(" lead"), " lead")
    }

    func testCarriageReturnLineFeedMatchesScalarByScalar() {
        var seam = ContinuationSeam(whitespace: "\r")
        XCTAssertEqual(seam.pass("\r\nnext"), "\nnext", "the held \\r and the new \\n make the reader's \\r\\n")
    }

    func testContinuationOfOnlyWhitespaceEmitsNothing() {
        var seam = ContinuationSeam(whitespace: "   ")
        XCTAssertEqual(seam.pass(" "), "")
        XCTAssertEqual(seam.pass("  "), "")
    }
}
