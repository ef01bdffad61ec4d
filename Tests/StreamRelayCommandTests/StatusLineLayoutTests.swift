@testable import stream_relay
import XCTest

/// `StatusLineLayout`: where `stream-relay chat` writes a status line relative to the answer.
final class StatusLineLayoutTests: XCTestCase {
    let esc = "\u{1B}"

    func testSeparateStreamsGetPlainStatusLines() {
        var l = StatusLineLayout(mode: .separate)
        l.answer("6. Return ")
        XCTAssertEqual(l.status("⟳ connection lost"), "⟳ connection lost\n")
        XCTAssertEqual(l.endOfAnswer(), "")
    }

    func testCombinedOutputBreaksAnUnfinishedLineOnceBeforeAStatusLine() {
        var l = StatusLineLayout(mode: .interleaved)
        XCTAssertEqual(l.status("→ relay"), "→ relay\n", "at a line start: no extra break")
        l.answer("6. Return ")
        XCTAssertEqual(l.status("⟳ connection lost"), "\n⟳ connection lost\n")
        XCTAssertEqual(l.status("⟳ resuming"), "⟳ resuming\n", "the combined output is at a line start again")
        l.answer("and Destruction\n")
        XCTAssertEqual(l.status("… clause 7"), "… clause 7\n")
        l.answer("end")
        XCTAssertEqual(l.endOfAnswer(), "\n")
        XCTAssertEqual(l.status("✓ done"), "✓ done\n")
    }

    func testTerminalMovesTheUnfinishedLineBelowTheStatusLine() {
        var l = StatusLineLayout(mode: .terminal(columns: 80, rows: 24))
        l.answer("# Title\n\n6. Return ")
        XCTAssertEqual(l.status("⟳ connection lost"), "\r\(esc)[J⟳ connection lost\n6. Return ")
        XCTAssertEqual(l.status("⟳ resuming"), "\r\(esc)[J⟳ resuming\n6. Return ", "the redrawn line is erased again")
        l.answer("and Destruction\nNext")
        XCTAssertEqual(l.unfinishedLine, "Next")
        l.answer("\n")
        XCTAssertEqual(l.status("… clause 7"), "… clause 7\n", "at a line start nothing is erased")
    }

    func testTerminalErasesEveryRowOfAWrappedLine() {
        var l = StatusLineLayout(mode: .terminal(columns: 10, rows: 24))
        l.answer(String(repeating: "a", count: 25))   // three rows
        XCTAssertEqual(l.status("s"), "\r\(esc)[2A\(esc)[Js\n" + String(repeating: "a", count: 25))
        var exact = StatusLineLayout(mode: .terminal(columns: 10, rows: 24))
        exact.answer(String(repeating: "b", count: 20))   // fills two rows exactly: the cursor stays on the second
        XCTAssertEqual(exact.status("s"), "\r\(esc)[1A\(esc)[Js\n" + String(repeating: "b", count: 20))
    }

    func testTerminalWithoutASizeOrWithALineTallerThanTheScreenRepeatsTheLine() {
        var unknown = StatusLineLayout(mode: .terminal(columns: nil, rows: nil))
        unknown.answer("6. Return ")
        XCTAssertEqual(unknown.status("s"), "\ns\n6. Return ")
        var tall = StatusLineLayout(mode: .terminal(columns: 10, rows: 3))
        tall.answer(String(repeating: "c", count: 35))   // four rows on a three-row screen
        XCTAssertEqual(tall.status("s"), "\ns\n" + String(repeating: "c", count: 35))
    }

    func testEndOfAnswerEndsTheUnfinishedLineOnceOnATerminal() {
        var l = StatusLineLayout(mode: .terminal(columns: 80, rows: 24))
        l.answer("last words")
        XCTAssertEqual(l.endOfAnswer(), "\n")
        XCTAssertEqual(l.status("✓ done"), "✓ done\n", "the finished line is not repeated")
        XCTAssertEqual(l.endOfAnswer(), "")
    }

    func testDisplayWidthCountsWideCombiningAndTabs() {
        XCTAssertEqual(StatusLineLayout.displayWidth("abc"), 3)
        XCTAssertEqual(StatusLineLayout.displayWidth("日本"), 4)
        XCTAssertEqual(StatusLineLayout.displayWidth("e\u{301}"), 1, "a combining accent takes no cell")
        XCTAssertEqual(StatusLineLayout.displayWidth("a\tb"), 9)
        XCTAssertEqual(StatusLineLayout.displayWidth("مرحبا"), 5)
        XCTAssertEqual(StatusLineLayout.displayWidth("🙂"), 2)
        XCTAssertEqual(StatusLineLayout.rowsOccupied(by: "", columns: 80), 1)
        XCTAssertEqual(StatusLineLayout.rowsOccupied(by: "日本語", columns: 4), 2)
    }
}
