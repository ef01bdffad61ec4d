import XCTest
import RelayCore
@testable import RelayServer

/// `CompletionWebhookMessage`: the body's shape (Standard Webhooks' type/timestamp/data),
/// never the text, and the stable `webhook-id`.
final class CompletionWebhookMessageTests: XCTestCase {
    private func object(_ body: String) throws -> [String: Any] {
        try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
    }

    func testADoneAnswersBodyNamesTheRequestTheSubTheFinishReasonAndTheUsage() throws {
        let final = StreamEvent.done(finishReason: .stop, usage: Usage(promptTokens: 12, completionTokens: 80)).json
        let m = try XCTUnwrap(CompletionWebhookMessage(scopedID: "0123abcd:req-0123456789abcdef", sub: "user \"42\"",
                                                       finalEventJSON: final, endedMs: 1_614_265_330_250))
        XCTAssertEqual(m.id, "msg_0123abcd_req-0123456789abcdef")
        let o = try object(m.body)
        XCTAssertEqual(Set(o.keys), ["type", "timestamp", "data"])
        XCTAssertEqual(o["type"] as? String, "answer.ended")
        XCTAssertEqual(o["timestamp"] as? String, "2021-02-25T15:02:10.250Z")
        let data = try XCTUnwrap(o["data"] as? [String: Any])
        XCTAssertEqual(data["request_id"] as? String, "req-0123456789abcdef", "the client's id, without the owner hash")
        XCTAssertEqual(data["sub"] as? String, "user \"42\"")
        XCTAssertEqual(data["finish_reason"] as? String, "stop")
        XCTAssertEqual(data["usage"] as? [String: Int], ["prompt_tokens": 12, "completion_tokens": 80, "total_tokens": 92])
        XCTAssertNil(data["budget_limited"])
    }

    func testAnErrorAnswersBodyNamesItsCodeButNotItsMessage() throws {
        let final = StreamEvent.error(status: 503, code: .upstreamLost, message: "secret upstream detail").json
        let m = try XCTUnwrap(CompletionWebhookMessage(scopedID: "h:r0123456789abcdef", sub: "s", finalEventJSON: final, endedMs: 0))
        XCTAssertFalse(m.body.contains("secret upstream detail"))
        let data = try XCTUnwrap(try object(m.body)["data"] as? [String: Any])
        XCTAssertEqual(data["finish_reason"] as? String, "error")
        XCTAssertEqual(data["error"] as? String, "upstream_lost")
        XCTAssertTrue(data["usage"] is NSNull)
        XCTAssertEqual(try object(m.body)["timestamp"] as? String, "1970-01-01T00:00:00.000Z")
    }

    func testABudgetLimitedEndSaysSo() throws {
        let final = StreamEvent.done(finishReason: .length, usage: Usage(promptTokens: 1, completionTokens: 2), budgetLimited: true).json
        let m = try XCTUnwrap(CompletionWebhookMessage(scopedID: "h:r", sub: "s", finalEventJSON: final, endedMs: 0))
        XCTAssertEqual(try XCTUnwrap(try object(m.body)["data"] as? [String: Any])["budget_limited"] as? Bool, true)
    }

    func testADeltaOrGarbageIsNoFinalEvent() {
        XCTAssertNil(CompletionWebhookMessage(scopedID: "h:r", sub: "s", finalEventJSON: StreamEvent.delta("the NDA text").json, endedMs: 0))
        XCTAssertNil(CompletionWebhookMessage(scopedID: "h:r", sub: "s", finalEventJSON: "", endedMs: 0))
        XCTAssertNil(CompletionWebhookMessage(scopedID: "h:r", sub: "s", finalEventJSON: "{\"type\":\"nope\"}", endedMs: 0))
    }

    func testTimestampsAcrossLeapYearsAndCenturies() {
        XCTAssertEqual(CompletionWebhookMessage.rfc3339(ms: 951_782_400_000), "2000-02-29T00:00:00.000Z")
        XCTAssertEqual(CompletionWebhookMessage.rfc3339(ms: 4_107_542_399_999), "2100-02-28T23:59:59.999Z")
        XCTAssertEqual(CompletionWebhookMessage.rfc3339(ms: 1_796_256_000_000), "2026-12-03T00:00:00.000Z")
    }

    func testTheSameAnswerGetsTheSameBodyEveryTime() throws {
        let final = StreamEvent.done(finishReason: .stop, usage: Usage(promptTokens: 1, completionTokens: 1)).json
        let a = CompletionWebhookMessage(scopedID: "h:r", sub: "s", finalEventJSON: final, endedMs: 5)
        let b = CompletionWebhookMessage(scopedID: "h:r", sub: "s", finalEventJSON: final, endedMs: 5)
        XCTAssertEqual(a, b)
    }
}
