import Foundation
import RelayBudgets
import RelayRedis
import RelayTestKit
import XCTest

/// The budget ledger's Lua scripts as embedded at build time (`BudgetScripts`,
/// `Lua/<name>.lua`), without Redis: each follows the header convention (`LuaHeader`),
/// every file in `Lua/` is embedded once, and each reply decodes into its named outcome
/// (a reply of no shape its header names fails as `.unexpectedReply`). Against real Redis:
/// `LuaScriptTests`.
final class BudgetScriptTests: XCTestCase {
    private let folder = LuaHeader.folder(module: "RelayBudgets", testFile: #filePath)

    func testEveryEmbeddedScriptHasAHeaderNamingItsKeysArgvAndReplies() {
        XCTAssertEqual(BudgetScripts.all.count, 4)
        for s in BudgetScripts.all {
            XCTAssertFalse(s.text.isEmpty, s.file)
            XCTAssertEqual(LuaHeader.problems(file: s.file, text: s.text), [], s.file)
        }
    }

    func testEveryLuaFileIsEmbeddedOnceAndAsItIsOnDisk() throws {
        let files = BudgetScripts.all.map(\.file)
        XCTAssertEqual(files.count, Set(files).count, "a script is listed twice")
        XCTAssertEqual(Set(files), try LuaHeader.files(in: folder))
        for s in BudgetScripts.all {
            XCTAssertEqual(s.text, try String(contentsOf: folder.appendingPathComponent(s.file), encoding: .utf8), s.file)
        }
    }

    private func pair(_ a: Int64, _ b: Int64) -> RedisReply { .array([.integer(a), .integer(b)]) }

    private func assertUnexpected<R: ScriptReply>(_ type: R.Type, _ reply: RedisReply, file: StaticString = #filePath, line: UInt = #line) {
        do {
            let r = try R(reply: reply)
            XCTFail("decoded \(r) from \(reply)", file: file, line: line)
        } catch {
            XCTAssertEqual(error.code, .unexpectedReply, file: file, line: line)
        }
    }

    func testEachBudgetReplyDecodesIntoItsOutcome() throws {
        XCTAssertEqual(try BudgetLedger.Reservation(reply: pair(1, 300)), .granted(tokens: 300))
        XCTAssertEqual(try BudgetLedger.Reservation(reply: pair(0, 12)), .refused(remaining: 12))
        XCTAssertEqual(try BudgetLedger.Reservation(reply: pair(2, 0)), .settled)
        assertUnexpected(BudgetLedger.Reservation.self, pair(5, 0))
        assertUnexpected(BudgetLedger.Reservation.self, .array([.integer(1)]))
        XCTAssertEqual(try BudgetLedger.Extension(reply: pair(1, 0)), .extended)
        XCTAssertEqual(try BudgetLedger.Extension(reply: pair(0, 4)), .refused(remaining: 4))
        XCTAssertEqual(try BudgetLedger.Extension(reply: pair(-1, 0)), .noReservation)
        assertUnexpected(BudgetLedger.Extension.self, .integer(1))
        XCTAssertEqual(try BudgetScripts.SettleReply(reply: .integer(40)), .settled(tokens: 40))
        XCTAssertEqual(try BudgetScripts.SettleReply(reply: .integer(-1)), .alreadySettled)
        assertUnexpected(BudgetScripts.SettleReply.self, .array([]))
        XCTAssertEqual(try BudgetLedger.Usage(reply: pair(120, 30)), BudgetLedger.Usage(used: 120, reserved: 30))
        assertUnexpected(BudgetLedger.Usage.self, .null)
    }
}
