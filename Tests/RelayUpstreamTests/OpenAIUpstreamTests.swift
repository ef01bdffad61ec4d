import RelayTestSupport
import Foundation
import RelayCore
@testable import RelayUpstream
import XCTest

/// `RELAY_UPSTREAM=openai` against the fake server: request shape and stream mapping.
final class OpenAIUpstreamTests: UpstreamTestCase {
    private let expectedDone = StreamEvent.done(finishReason: "stop", usage: Usage(promptTokens: 35, completionTokens: 6))

    func testNormalStreamMapsDeltasAndDoneWithUsage() throws {
        let (events, s) = try runOpenAI(Self.sse(OpenAIFixtures.normal))
        XCTAssertEqual(events.deltas, OpenAIFixtures.pieces)
        XCTAssertEqual(events.last, expectedDone)
        XCTAssertEqual(events.count, OpenAIFixtures.pieces.count + 1)
        assertMultiIdle()

        let req = try XCTUnwrap(s.requests.first)
        XCTAssertEqual(req.method, "POST")
        XCTAssertEqual(req.path, Self.openAIPath)
        XCTAssertEqual(req.headers["authorization"], "Bearer sk-test")
        XCTAssertEqual(req.headers["content-type"], "application/json")
        XCTAssertEqual(req.headers["accept"], "text/event-stream")
        XCTAssertNil(req.headers["expect"])
        let json = req.json
        XCTAssertEqual(json["model"] as? String, "test-model")
        XCTAssertEqual(json["stream"] as? Bool, true)
        XCTAssertEqual((json["stream_options"] as? [String: Any])?["include_usage"] as? Bool, true)
        XCTAssertNil(json["max_tokens"])
        let messages = try XCTUnwrap(json["messages"] as? [[String: String]])
        XCTAssertEqual(messages, [["role": "user", "content": "Summarise clause 3, please."]])
    }

    func testRequestModelAndMaxTokensWin() throws {
        let req = ChatRequest(messages: [ChatMessage(role: "system", content: "Be terse."), ChatMessage(role: "user", content: "Hi")],
                              model: "llama-3.1-8b", maxTokens: 77)
        let (events, s) = try runOpenAI(Self.sse(OpenAIFixtures.normal), request: req)
        XCTAssertEqual(events.last, expectedDone)
        let json = try XCTUnwrap(s.requests.first).json
        XCTAssertEqual(json["model"] as? String, "llama-3.1-8b")
        XCTAssertEqual(json["max_tokens"] as? Int, 77)
        XCTAssertEqual((json["messages"] as? [[String: String]])?.first?["role"], "system")
    }

    func testSummaryModeCapsMaxTokensAndPrependsInstruction() throws {
        var req = Self.question
        req.mode = .summary
        req.maxTokens = 5000
        let (_, s) = try runOpenAI(Self.sse(OpenAIFixtures.normal), request: req) { $0.summaryMaxTokens = 400 }
        let json = try XCTUnwrap(s.requests.first).json
        XCTAssertEqual(json["max_tokens"] as? Int, 400)
        let messages = try XCTUnwrap(json["messages"] as? [[String: String]])
        XCTAssertEqual(messages.count, 2)
        XCTAssertEqual(messages[0]["role"], "system")
        XCTAssertTrue(messages[0]["content"]!.contains("summary"))
        XCTAssertEqual(messages[1]["content"], "Summarise clause 3, please.")

        req.maxTokens = 50  // a smaller request value stays
        let (_, s2) = try runOpenAI(Self.sse(OpenAIFixtures.normal), request: req)
        XCTAssertEqual(try XCTUnwrap(s2.requests.first).json["max_tokens"] as? Int, 50)
    }

    func testChunksSplitMidLineAndMidUTF8() throws {
        let body = OpenAIFixtures.normal.bytes
        let piece = 7
        // The fixture does put some piece boundaries inside multi-byte characters.
        XCTAssertTrue(stride(from: piece, to: body.count, by: piece).contains { body[$0] & 0xC0 == 0x80 })
        let script = FakeUpstreamServer.Script([.head(status: 200, contentType: "text/event-stream"),
                                                .trickle(body, pieceSize: piece, pauseMs: 1)])
        let s = try server([Self.openAIPath: script])
        let up = try HTTPUpstreamFactory(.openAI, config: config(s), multi: harness.multi).makeUpstream(for: Self.question, loop: harness.loop)
        let events = harness.collect(up)
        XCTAssertEqual(events.text, OpenAIFixtures.pieces.joined())
        XCTAssertEqual(events.last, expectedDone)
        let pieces = try XCTUnwrap(up as? SSEStreamUpstream<OpenAIDialect>).bodyPieces
        print("split stream: \(body.count) bytes arrived in \(pieces) pieces")
        XCTAssertGreaterThan(pieces, body.count / piece / 4, "the body really arrived in small pieces")
    }

    func testCRLFLineEndings() throws {
        let crlf = OpenAIFixtures.normal.replacingOccurrences(of: "\n", with: "\r\n")
        let script = FakeUpstreamServer.Script([.head(status: 200, contentType: "text/event-stream"),
                                                .trickle(crlf.bytes, pieceSize: 33, pauseMs: 1)])
        let (events, _) = try runOpenAI(script)
        XCTAssertEqual(events.deltas, OpenAIFixtures.pieces)
        XCTAssertEqual(events.last, expectedDone)
    }

    func testKeepAliveCommentsAreIgnored() throws {
        let (events, _) = try runOpenAI(Self.sse(OpenAIFixtures.withComments))
        XCTAssertEqual(events.deltas, OpenAIFixtures.pieces)
        XCTAssertEqual(events.last, expectedDone)
    }

    func testFinishReasonLengthAndUsageChunk() throws {
        let (events, _) = try runOpenAI(Self.sse(OpenAIFixtures.length))
        XCTAssertEqual(events, [.delta("Only"), .delta(" this"),
                                .done(finishReason: "length", usage: Usage(promptTokens: 9, completionTokens: 2))])
    }

    func testWithoutUsageChunkUsageIsEstimated() throws {
        let body = OpenAIFixtures.roleChunk + OpenAIFixtures.content("One") + OpenAIFixtures.content(" two")
            + OpenAIFixtures.finish("stop") + OpenAIFixtures.done
        let (events, _) = try runOpenAI(Self.sse(body))
        guard case .done(let reason, let usage, _)? = events.last else { return XCTFail("\(events)") }
        XCTAssertEqual(reason, "stop")
        XCTAssertEqual(usage.completionTokens, 2)
        XCTAssertGreaterThan(usage.promptTokens, 0)
    }

    func testErrorObjectMidStream() throws {
        let (events, _) = try runOpenAI(Self.sse(OpenAIFixtures.midStreamError))
        XCTAssertEqual(events.first, .delta("Partial"))
        assertEndsWithError(events, status: 502, code: "upstream_error", containing: "upstream server_error: The server had an error")
    }

    func testStatusErrorsBeforeTheStreamKeepTheUpstreamCode() throws {
        let cases: [(Int, String, String)] = [
            (401, OpenAIFixtures.invalidKey, "upstream 401 invalid_api_key: Incorrect API key provided"),
            (429, OpenAIFixtures.rateLimited, "upstream 429 rate_limit_exceeded: Rate limit reached"),
            (500, OpenAIFixtures.serverError, "upstream 500 server_error: The server had an error"),
        ]
        for (status, body, expected) in cases {
            let (events, _) = try runOpenAI(Self.errorAnswer(status, body))
            XCTAssertEqual(events.count, 1)
            assertEndsWithError(events, status: 502, code: "upstream_error", containing: expected)
        }
        assertMultiIdle()
    }

    /// Data that is not JSON at all is still fatal (valid JSON of an odd shape is skipped:
    /// see `UpstreamTextTests`).
    func testMalformedChunk() throws {
        let body = OpenAIFixtures.roleChunk + OpenAIFixtures.content("ok") + "data: {\"choices\":[{\"delta\":{\"content\":\"x\"\n\n"
            + OpenAIFixtures.content("never")
        let (events, _) = try runOpenAI(Self.sse(body))
        XCTAssertEqual(events.first, .delta("ok"))
        assertEndsWithError(events, status: 502, code: "upstream_error", containing: "malformed OpenAI-compatible stream chunk")

        let (notJSON, _) = try runOpenAI(Self.sse("data: this is not json\n\n"))
        assertEndsWithError(notJSON, status: 502, code: "upstream_error", containing: "malformed")
    }

    func testBaseURLEndingInV1IsNotDoubled() {
        var c = HTTPUpstreamConfig(baseURL: "https://api.example.com/v1/", apiKey: "")
        XCTAssertEqual(c.endpoint("/v1/chat/completions"), "https://api.example.com/v1/chat/completions")
        c.baseURL = "http://127.0.0.1:11434"
        XCTAssertEqual(c.endpoint("/v1/chat/completions"), "http://127.0.0.1:11434/v1/chat/completions")
    }

    func testConfigValidation() throws {
        XCTAssertNoThrow(try HTTPUpstreamConfig(baseURL: "https://api.openai.com", apiKey: "sk-1", defaultModel: "gpt-4o-mini").validate())
        XCTAssertNoThrow(try HTTPUpstreamConfig(baseURL: "http://127.0.0.1:8000/v1", apiKey: "").validate())
        for bad in ["", "api.openai.com", "ftp://x", "https://", "https:///path", "http://a b"] {
            XCTAssertThrowsError(try HTTPUpstreamConfig(baseURL: bad, apiKey: "k").validate(), bad)
        }
        XCTAssertThrowsError(try HTTPUpstreamConfig(baseURL: "https://a", apiKey: "k\r\nX-Evil: 1").validate())
        var c = HTTPUpstreamConfig(baseURL: "https://a", apiKey: "k")
        c.idleTimeoutMs = 0
        XCTAssertThrowsError(try c.validate())
    }

    func testNoModelAnywhereIsInvalidRequest() throws {
        let f = HTTPUpstreamFactory(.openAI, config: HTTPUpstreamConfig(baseURL: "http://127.0.0.1:9", apiKey: ""), multi: harness.multi)
        XCTAssertThrowsError(try f.makeUpstream(for: Self.question, loop: harness.loop)) { e in
            XCTAssertEqual((e as? APIError)?.code, "invalid_request")
        }
    }

    func testEmptyKeySendsNoAuthorization() throws {
        let (_, s) = try runOpenAI(Self.sse(OpenAIFixtures.normal)) { $0.apiKey = "" }
        XCTAssertNil(try XCTUnwrap(s.requests.first).headers["authorization"])
    }

    func testSuccessiveStreamsReuseTheConnection() throws {
        let s = try server([Self.openAIPath: Self.sse(OpenAIFixtures.normal)])
        let f = HTTPUpstreamFactory(.openAI, config: config(s), multi: harness.multi)
        for _ in 0..<3 {
            let events = harness.collect(try f.makeUpstream(for: Self.question, loop: harness.loop))
            XCTAssertEqual(events.last, expectedDone)
            assertMultiIdle()  // the rest of the response (terminal chunk) was drained
        }
        XCTAssertEqual(s.requests.count, 3)
        XCTAssertEqual(s.connectionCount, 1, "kept-alive connection reused after [DONE]")
    }

    func testFactoryMakesItsOwnMultiWhenNoneGiven() throws {
        let s = try server([Self.openAIPath: Self.sse(OpenAIFixtures.normal)])
        let f = HTTPUpstreamFactory(.openAI, config: config(s))
        let events = harness.collect(try f.makeUpstream(for: Self.question, loop: harness.loop))
        XCTAssertEqual(events.last, expectedDone)
    }
}
