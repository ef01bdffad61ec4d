import XCTest
@testable import RelayClient

final class MarkdownLinesTests: XCTestCase {
    func testLinesAreAssembledAcrossChunksAndCRLFIsStripped() {
        var s = MarkdownLineScanner()
        XCTAssertEqual(s.feed("ab"), [])
        XCTAssertEqual(s.feed("c\r"), [])
        XCTAssertEqual(s.feed("\nd\n").map(\.text), ["abc", "d"])
        XCTAssertNil(s.finish())
        _ = s.feed("tail")
        XCTAssertEqual(s.finish()?.text, "tail")
    }

    func testFencesOpenAndCloseWithMatchingCharacterAndLength() {
        var s = MarkdownLineScanner()
        let lines = s.feed("````swift\n---\n```\nstill code\n````\n---\n~~~\n***\n```\n~~~~\n")
        XCTAssertEqual(lines.map(\.isFence), [true, false, false, false, true, false, true, false, false, true])
        XCTAssertEqual(lines.map(\.insideFence), [false, true, true, true, false, false, false, true, true, false])
    }

    func testBacktickFenceInfoMayNotContainBacktick() {
        var s = MarkdownLineScanner()
        let lines = s.feed("``` a`b\n---\n")
        XCTAssertEqual(lines.map(\.insideFence), [false, false])
        XCTAssertFalse(s.inFence)
    }

    func testThematicBreaks() {
        for yes in ["---", "***", "___", " - - -", "   ****", "___\t", "-----"] {
            XCTAssertTrue(MarkdownSyntax.isThematicBreak(yes), yes)
        }
        for no in ["--", "    ---", "-*-", "--- a", "", "—", "==="] {
            XCTAssertFalse(MarkdownSyntax.isThematicBreak(no), no)
        }
    }

    func testATXHeadings() {
        XCTAssertEqual(MarkdownSyntax.atxHeading("# Title")?.level, 1)
        XCTAssertEqual(MarkdownSyntax.atxHeading("   ### Three ###")?.title, "Three")
        XCTAssertEqual(MarkdownSyntax.atxHeading("## C# ##")?.title, "C#")
        XCTAssertEqual(MarkdownSyntax.atxHeading("#")?.title, "")
        XCTAssertNil(MarkdownSyntax.atxHeading("#Title"))
        XCTAssertNil(MarkdownSyntax.atxHeading("    # indented code"))
        XCTAssertNil(MarkdownSyntax.atxHeading("####### seven"))
    }

    func testSetextUnderlineAndParagraphLines() {
        XCTAssertEqual(MarkdownSyntax.setextUnderline("===="), 1)
        XCTAssertEqual(MarkdownSyntax.setextUnderline("  --  "), 2)
        XCTAssertNil(MarkdownSyntax.setextUnderline("= ="))
        XCTAssertTrue(MarkdownSyntax.isParagraphText("Some text"))
        XCTAssertFalse(MarkdownSyntax.isParagraphText("- item"))
        XCTAssertFalse(MarkdownSyntax.isParagraphText("1. item"))
        XCTAssertFalse(MarkdownSyntax.isParagraphText("> quote"))
        XCTAssertFalse(MarkdownSyntax.isParagraphText("   "))
    }
}
