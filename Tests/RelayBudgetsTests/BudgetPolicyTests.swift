import Foundation
import XCTest
@testable import RelayBudgets

final class BudgetPolicyTests: XCTestCase {
    func testParsesTiers() throws {
        let p = try BudgetPolicy.parse("free=20000,pro=500000")
        XCTAssertEqual(p.limits, ["free": 20000, "pro": 500_000])
        XCTAssertEqual(p.defaultTier, "free")
    }

    func testDefaultSpecificationParses() throws {
        XCTAssertEqual(try BudgetPolicy.parse(BudgetPolicy.defaultSpecification).limits.count, 2)
    }

    func testWhitespaceAndTrailingCommaTolerated() throws {
        XCTAssertEqual(try BudgetPolicy.parse(" free = 10 , pro=20 ,", defaultTier: "pro").limits, ["free": 10, "pro": 20])
    }

    func testLimitForTier() throws {
        let p = try BudgetPolicy.parse("free=20000,pro=500000,team=0", defaultTier: "free")
        XCTAssertEqual(p.limit(forTier: "pro"), 500_000)
        XCTAssertEqual(p.limit(forTier: nil), 20000)
        XCTAssertEqual(p.limit(forTier: "enterprise"), 20000, "unknown tier falls back to the default")
        XCTAssertEqual(p.limit(forTier: "team"), 0)
        XCTAssertEqual(p.effectiveTier("enterprise"), "free")
        XCTAssertEqual(p.effectiveTier("pro"), "pro")
        XCTAssertEqual(p.limit(forTier: "PRO"), 20000, "tier names are case-sensitive")
    }

    private func assertParseError(_ spec: String, defaultTier: String = "free", mentions: String,
                                  file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try BudgetPolicy.parse(spec, defaultTier: defaultTier), file: file, line: line) { e in
            guard let e = e as? BudgetPolicyError else { return XCTFail("\(e)", file: file, line: line) }
            XCTAssertEqual(e.variable, "RELAY_BUDGETS", file: file, line: line)
            XCTAssertTrue(e.message.hasPrefix("RELAY_BUDGETS: "), e.message, file: file, line: line)
            XCTAssertTrue(e.message.contains(mentions), e.message, file: file, line: line)
        }
    }

    func testParseErrorsNameTheVariable() {
        assertParseError("", mentions: "empty")
        assertParseError("free", mentions: "name=tokens")
        assertParseError("free=20000,pro", mentions: "item 2")
        assertParseError("free=abc", mentions: "abc")
        assertParseError("free=-1", mentions: "-1")
        assertParseError("free=1.5", mentions: "1.5")
        assertParseError("free=99999999999999999999", mentions: "integer")
        assertParseError("=5", mentions: "tier name")
        assertParseError("fr ee=5", mentions: "tier name")
        assertParseError("free=1=2", mentions: "name=tokens")
        assertParseError("free=1,,pro=2", mentions: "item 2 is empty")
        assertParseError("free=1,free=2", mentions: "defined twice")
        assertParseError("pro=5", mentions: "default tier \"free\"")
    }

    func testCustomVariableNameInErrors() {
        XCTAssertThrowsError(try BudgetPolicy.parse("x", variable: "--budgets")) {
            XCTAssertTrue(($0 as? BudgetPolicyError)?.message.hasPrefix("--budgets: ") == true)
        }
    }

    func testPeriodIsUTCYearMonth() {
        XCTAssertEqual(BudgetPolicy.period(now: 0), "1970-01")
        XCTAssertEqual(BudgetPolicy.period(now: -1), "1969-12")
        XCTAssertEqual(BudgetPolicy.period(now: 1_709_251_199), "2024-02") // 2024-02-29T23:59:59Z
        XCTAssertEqual(BudgetPolicy.period(now: 1_709_251_200), "2024-03") // 2024-03-01T00:00:00Z
        XCTAssertEqual(BudgetPolicy.period(now: 1_735_689_599), "2024-12") // 2024-12-31T23:59:59Z
        XCTAssertEqual(BudgetPolicy.period(now: 1_735_689_600), "2025-01")
        XCTAssertEqual(BudgetPolicy.period(now: 951_868_800), "2000-03")   // 2000-03-01, leap century
        XCTAssertEqual(BudgetPolicy.period(now: -62_135_596_800), "0001-01")
    }

    func testPeriodAgreesWithFoundationCalendar() {
        var cal = Calendar(identifier: .gregorian)
        cal.timeZone = TimeZone(identifier: "UTC")!
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let t = Int64.random(in: -2_000_000_000...8_000_000_000, using: &rng)
            let c = cal.dateComponents([.year, .month], from: Date(timeIntervalSince1970: TimeInterval(t)))
            XCTAssertEqual(BudgetPolicy.period(now: t), String(format: "%04d-%02d", c.year!, c.month!), "t=\(t)")
        }
    }
}
