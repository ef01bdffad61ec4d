import RelayTestSupport
import Foundation
import RelayCore
@testable import RelayUpstream
import XCTest

/// `RELAY_UPSTREAM=anthropic` against the fake server: request shape and stream mapping.
final class AnthropicUpstreamTests: UpstreamTestCase {
    private let expectedDone = StreamEvent.done(finishReason: "stop", usage: Usage(promptTokens: 25, completionTokens: 15))

    func testNormalStreamMapsTextDeltasAndDone() throws {
        let (events, s) = try runAnthropic(Self.sse(AnthropicFixtures.normal))
        XCTAssertEqual(events.deltas, AnthropicFixtures.pieces)
        XCTAssertEqual(events.last, expectedDone)
        XCTAssertEqual(events.count, AnthropicFixtures.pieces.count + 1)
        assertMultiIdle()

        let req = try XCTUnwrap(s.requests.first)
        XCTAssertEqual(req.path, Self.anthropicPath)
        XCTAssertEqual(req.headers["x-api-key"], "sk-test")
        XCTAssertEqual(req.headers["anthropic-version"], "2023-06-01")
        XCTAssertNil(req.headers["authorization"])
        let json = req.json
        XCTAssertEqual(json["model"] as? String, "test-model")
        XCTAssertEqual(json["stream"] as? Bool, true)
        XCTAssertEqual(json["max_tokens"] as? Int, 4096)
        XCTAssertNil(json["system"])
    }

    func testSystemMessagesMoveToSystemField() throws {
        let req = ChatRequest(messages: [ChatMessage(role: "system", content: "You draft contracts."),
                                         ChatMessage(role: "user", content: "Clause 3?"),
                                         ChatMessage(role: "assistant", content: "Which contract?"),
                                         ChatMessage(role: "system", content: "Answer in English."),
                                         ChatMessage(role: "user", content: "The NDA.")],
                              model: "claude-haiku-4-5", maxTokens: 300)
        let (_, s) = try runAnthropic(Self.sse(AnthropicFixtures.normal), request: req)
        let json = try XCTUnwrap(s.requests.first).json
        XCTAssertEqual(json["model"] as? String, "claude-haiku-4-5")
        XCTAssertEqual(json["max_tokens"] as? Int, 300)
        XCTAssertEqual(json["system"] as? String, "You draft contracts.\n\nAnswer in English.")
        let messages = try XCTUnwrap(json["messages"] as? [[String: String]])
        XCTAssertEqual(messages.map { $0["role"]! }, ["user", "assistant", "user"])
    }

    func testSummaryModeCapsMaxTokensAndPrependsInstruction() throws {
        var req = ChatRequest(messages: [ChatMessage(role: "system", content: "Be formal."), ChatMessage(role: "user", content: "Q")])
        req.mode = .summary
        let (_, s) = try runAnthropic(Self.sse(AnthropicFixtures.normal), request: req) { $0.summaryMaxTokens = 400 }
        let json = try XCTUnwrap(s.requests.first).json
        XCTAssertEqual(json["max_tokens"] as? Int, 400)
        let system = try XCTUnwrap(json["system"] as? String)
        XCTAssertTrue(system.hasPrefix("Answer with a short summary"))
        XCTAssertTrue(system.hasSuffix("\n\nBe formal."))
    }

    func testChunksSplitMidLineAndMidUTF8() throws {
        let body = AnthropicFixtures.normal.bytes
        let piece = 5
        XCTAssertTrue(stride(from: piece, to: body.count, by: piece).contains { body[$0] & 0xC0 == 0x80 })
        let script = FakeUpstreamServer.Script([.head(status: 200, contentType: "text/event-stream"),
                                                .trickle(body, pieceSize: piece, pauseMs: 1)])
        let (events, _) = try runAnthropic(script)
        XCTAssertEqual(events.text, AnthropicFixtures.pieces.joined())
        XCTAssertEqual(events.last, expectedDone)
    }

    func testCRLFLineEndingsAndCommentsAndPings() throws {
        let body = (": hello\n\n" + AnthropicFixtures.normal).replacingOccurrences(of: "\n", with: "\r\n")
        let script = FakeUpstreamServer.Script([.head(status: 200, contentType: "text/event-stream"),
                                                .trickle(body.bytes, pieceSize: 41, pauseMs: 1)])
        let (events, _) = try runAnthropic(script)
        XCTAssertEqual(events.deltas, AnthropicFixtures.pieces)
        XCTAssertEqual(events.last, expectedDone)
    }

    func testMaxTokensStopReasonIsLength() throws {
        let (events, _) = try runAnthropic(Self.sse(AnthropicFixtures.maxTokens))
        XCTAssertEqual(events, [.delta("Trunc"), .done(finishReason: "length", usage: Usage(promptTokens: 10, completionTokens: 1))])
    }

    func testStopReasonMapping() {
        XCTAssertEqual(AnthropicDialect.finishReason(for: "end_turn"), "stop")
        XCTAssertEqual(AnthropicDialect.finishReason(for: "stop_sequence"), "stop")
        XCTAssertEqual(AnthropicDialect.finishReason(for: "max_tokens"), "length")
        XCTAssertEqual(AnthropicDialect.finishReason(for: "tool_use"), "tool_calls")
        XCTAssertEqual(AnthropicDialect.finishReason(for: "pause_turn"), "pause_turn")
    }

    func testErrorEventMidStream() throws {
        let (events, _) = try runAnthropic(Self.sse(AnthropicFixtures.midStreamError))
        XCTAssertEqual(events.first, .delta("Partial"))
        assertEndsWithError(events, status: 502, code: "upstream_error", containing: "upstream overloaded_error: Overloaded")
    }

    func testStatusErrorsBeforeTheStreamKeepTheUpstreamCode() throws {
        let cases: [(Int, String, String)] = [
            (401, AnthropicFixtures.authentication, "upstream 401 authentication_error: invalid x-api-key"),
            (429, AnthropicFixtures.rateLimited, "upstream 429 rate_limit_error: Number of request tokens"),
            (500, AnthropicFixtures.apiError, "upstream 500 api_error: Internal server error"),
        ]
        for (status, body, expected) in cases {
            let (events, _) = try runAnthropic(Self.errorAnswer(status, body))
            XCTAssertEqual(events.count, 1)
            assertEndsWithError(events, status: 502, code: "upstream_error", containing: expected)
        }
    }

    /// Unknown event, block and delta types are ignored, as the Messages API asks.
    func testUnknownEventTypesAreIgnored() throws {
        let body = AnthropicFixtures.messageStart(input: 3)
            + AnthropicFixtures.event("content_block_start", "{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"future_block\",\"stuff\":\"\"}}")
            + AnthropicFixtures.event("content_block_delta", "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"future_delta\",\"stuff\":\"hmm\"}}")
            + AnthropicFixtures.event("content_block_stop", "{\"type\":\"content_block_stop\",\"index\":0}")
            + AnthropicFixtures.event("some_future_event", "{\"type\":\"some_future_event\"}")
            + AnthropicFixtures.text("Yes") + AnthropicFixtures.messageDelta(stop: "end_turn", output: 2) + AnthropicFixtures.messageStop
        let (events, _) = try runAnthropic(Self.sse(body))
        XCTAssertEqual(events, [.delta("Yes"), .done(finishReason: "stop", usage: Usage(promptTokens: 3, completionTokens: 2))])
    }
}
