import XCTest
import RelayCore
@testable import RelayClient

final class BudgetStateTests: XCTestCase {
    func testDecodesBudgetJSONAndFormatsPill() throws {
        let b = try BudgetState(json: Data(#"{"tier":"free","limit":10000,"used":7563,"remaining":2437,"period":"2026-11"}"#.utf8))
        XCTAssertEqual(b.tier, "free")
        XCTAssertEqual(b.pillText, "~2,430 tokens remaining this month")
        XCTAssertTrue(b.canSend)
        XCTAssertFalse(b.isWarning, "24 % left")
    }

    func testWarningUnderTwentyPercent() {
        XCTAssertFalse(BudgetState(tier: "", limit: 10_000, used: 8_000, remaining: 2_000, period: "month").isWarning)
        XCTAssertTrue(BudgetState(tier: "", limit: 10_000, used: 8_001, remaining: 1_999, period: "month").isWarning)
    }

    func testDoneUsageIsSubtractedAndZeroDisablesSend() {
        var b = BudgetState(tier: "free", limit: 5_000, used: 4_000, remaining: 1_000, period: "month")
        b.apply(Usage(promptTokens: 35, completionTokens: 410))
        XCTAssertEqual(b.remaining, 555)
        XCTAssertEqual(b.used, 4_445)
        XCTAssertEqual(b.pillText, "~555 tokens remaining this month")
        b.apply(Usage(promptTokens: 100, completionTokens: 900))
        XCTAssertEqual(b.remaining, 0)
        XCTAssertFalse(b.canSend)
        XCTAssertTrue(b.isWarning)
        XCTAssertEqual(b.pillText, "No tokens remaining this month")
    }

    func testGroupingAndRounding() {
        XCTAssertEqual(BudgetState.grouped(0), "0")
        XCTAssertEqual(BudgetState.grouped(999), "999")
        XCTAssertEqual(BudgetState.grouped(1_000), "1,000")
        XCTAssertEqual(BudgetState.grouped(1_234_567), "1,234,567")
        XCTAssertEqual(BudgetState.approximate(87), 87)
        XCTAssertEqual(BudgetState.approximate(2_437), 2_430)
        XCTAssertEqual(BudgetState.approximate(19_522), 19_500)
        XCTAssertEqual(BudgetState.approximate(987), 987)
        XCTAssertEqual(BudgetState.approximate(1_999_999), 1_990_000)
        XCTAssertEqual(BudgetState(tier: "", limit: 2_000_000, used: 0, remaining: 1_234_567, period: "month").pillText,
                       "~1,230,000 tokens remaining this month")
        XCTAssertEqual(BudgetState(tier: "", limit: 10, used: 9, remaining: 1, period: "month").pillText,
                       "~1 token remaining this month")
    }

    func testPeriods() {
        XCTAssertEqual(BudgetState.periodPhrase("monthly"), "this month")
        XCTAssertEqual(BudgetState.periodPhrase("2026-11-30"), "today")
        XCTAssertEqual(BudgetState.periodPhrase("day"), "today")
        XCTAssertEqual(BudgetState.periodPhrase("week"), "this week")
    }

    func testMissingRemainingAndBadJSON() throws {
        let b = try BudgetState(json: Data(#"{"tier":"pro","limit":100,"used":30,"period":"month"}"#.utf8))
        XCTAssertEqual(b.remaining, 70)
        XCTAssertThrowsError(try BudgetState(json: Data("[]".utf8)))
        XCTAssertThrowsError(try BudgetState(json: Data(#"{"limit":"x"}"#.utf8)))
    }
}

final class NetworkAdviceTests: XCTestCase {
    func testTwoGWarns() {
        for t in ["2g", "slow-2g", "SLOW-2G"] {
            XCTAssertEqual(NetworkAdvice(NetworkConditions(connectionType: t)).warning,
                           "Slow connection detected — response may take longer")
        }
        for t in ["3g", "4g", "wifi", nil] {
            XCTAssertNil(NetworkAdvice(NetworkConditions(connectionType: t)).warning)
        }
    }

    func testHighRTTLengthensBackoff() {
        XCTAssertEqual(NetworkAdvice(NetworkConditions(rttMs: 500)).reconnectBackoffMs, 1_000)
        XCTAssertEqual(NetworkAdvice(NetworkConditions(rttMs: 501)).reconnectBackoffMs, 3_000)
        XCTAssertEqual(NetworkAdvice(NetworkConditions()).reconnectBackoffMs, 1_000)
    }

    func testLowDownlinkSuggestsSummaryMode() {
        let slow = NetworkAdvice(NetworkConditions(connectionType: "3g", downlinkMbps: 0.4))
        XCTAssertTrue(slow.suggestsSummaryMode)
        XCTAssertFalse(NetworkAdvice(NetworkConditions(downlinkMbps: 0.5)).suggestsSummaryMode)
        let req = ChatRequest(messages: [ChatMessage(role: "user", content: "hi")])
        XCTAssertEqual(slow.applySummaryMode(to: req).mode, .summary)
        XCTAssertTrue(String(decoding: slow.applySummaryMode(to: req).jsonBody, as: UTF8.self).contains(#""mode":"summary""#))
        XCTAssertEqual(NetworkAdvice(NetworkConditions()).applySummaryMode(to: req).mode, .full)
    }
}

final class TelemetryTests: XCTestCase {
    func testExactlyFourKeys() throws {
        let r = TelemetryRecord(requestId: "abcdefghijklmnop", tokensReceived: 410, latencyMs: 312, reconnections: 1)
        let obj = try JSONSerialization.jsonObject(with: Data(r.json.utf8)) as? [String: Any]
        XCTAssertEqual(Set(obj?.keys ?? [:].keys), ["requestId", "tokensReceived", "latencyMs", "reconnections"])
        XCTAssertEqual(r.json, #"{"latencyMs":312,"reconnections":1,"requestId":"abcdefghijklmnop","tokensReceived":410}"#)
        XCTAssertEqual(Mirror(reflecting: r).children.count, 4, "no other stored field can leak")
    }
}

final class SmallModelsTests: XCTestCase {
    func testTypingIndicator() {
        var t = TypingIndicator(startedAt: 1_000)
        XCTAssertTrue(t.isVisible)
        XCTAssertFalse(t.isOverdue(now: 1_500))
        XCTAssertTrue(t.isOverdue(now: 1_501))
        t.textRendered(now: 1_200)
        XCTAssertFalse(t.isVisible)
        XCTAssertFalse(t.isOverdue(now: 5_000))
        t.textRendered(now: 1_300)
        XCTAssertEqual(t.firstRenderAt, 1_200)
    }

    func testAutoScrollPausesWhenScrolledUpAndResumesAtBottom() {
        var a = AutoScroll()
        XCTAssertTrue(a.shouldScrollOnUpdate)
        a.userScrolled(distanceFromBottom: 300)
        XCTAssertFalse(a.shouldScrollOnUpdate)
        XCTAssertTrue(a.showsJumpToLatest)
        a.userScrolled(distanceFromBottom: 10)
        XCTAssertTrue(a.shouldScrollOnUpdate)
        a.userScrolled(distanceFromBottom: 100)
        a.jumpToLatest()
        XCTAssertTrue(a.isFollowing)
    }

    func testCompletionHapticsAndRetry() {
        XCTAssertEqual(Completion.finished(finishReason: "stop").haptic, .success)
        XCTAssertEqual(Completion.stopped.haptic, .warning)
        XCTAssertEqual(Completion.failed(status: 401, code: "session_revoked", message: "").haptic, .error)
        XCTAssertTrue(Completion.timedOut.offersRetry)
        XCTAssertTrue(Completion.needsResume.offersRetry)
        XCTAssertFalse(Completion.stopped.offersRetry)
        XCTAssertFalse(Completion.failed(status: 401, code: "unauthorized", message: "").offersRetry)
        XCTAssertTrue(Completion.failed(status: 503, code: "not_ready", message: "").offersRetry)
    }
}
