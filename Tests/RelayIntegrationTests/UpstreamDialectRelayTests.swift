import Foundation
import RelayCore
import RelayTestSupport
import XCTest

/// What a relay configured for an HTTP upstream (docs/UPSTREAMS.md) does end to end, with the fake
/// upstream server speaking each dialect: `RELAY_UPSTREAM=anthropic`, summary mode
/// (`"mode":"summary"`, `RELAY_SUMMARY_MAX_TOKENS`) for both dialects, and
/// `RELAY_UPSTREAM_IDLE_TIMEOUT` against an upstream that stalls.
final class UpstreamDialectRelayTests: RelayTestCase {
    static let anthropicPath = "/v1/messages"
    static let openAIPath = "/v1/chat/completions"

    func anthropicScript(_ body: String) -> FakeUpstreamServer.Script {
        .init([.head(status: 200, contentType: "text/event-stream"), .send(Array(body.utf8))])
    }

    func httpRelay(_ dialect: String, _ fake: FakeUpstreamServer, model: String, _ env: [String: String] = [:]) throws -> RelayProcess {
        var e = ["RELAY_UPSTREAM": dialect, "UPSTREAM_URL": fake.baseURL, "UPSTREAM_API_KEY": "key-\(dialect)-test",
                 "UPSTREAM_MODEL": model]
        for (k, v) in env { e[k] = v }
        return try startRelay(e)
    }

    /// Opens a stream with `body` (the JSON chat request).
    func stream(_ relay: RelayProcess, body: [UInt8], requestID: String = Chat.newID()) throws -> [SSEMessage] {
        try SSEConnection(port: relay.port, method: "POST", path: "/api/chat/stream",
                          headers: [("Authorization", "Bearer \(RelayProcess.token())"), ("Content-Type", "application/json"),
                                    ("X-Request-Id", requestID)],
                          body: body).readAll(timeout: 20)
    }

    /// The Messages API request (path, `x-api-key`, `anthropic-version`, `stream`, model)
    /// and its stream mapped to the relay's events: the text deltas in order (Arabic,
    /// emoji flags intact), `done` with `end_turn` → `stop` and the usage of
    /// `message_start` + `message_delta`; the stream's meta ends `done`.
    func testAnthropicUpstreamThroughTheRelay() throws {
        let fake = try FakeUpstreamServer(routes: [Self.anthropicPath: anthropicScript(AnthropicFixtures.normal)])
        defer { fake.stop() }
        let relay = try httpRelay("anthropic", fake, model: "claude-test")
        let id = Chat.newID()
        let events = try stream(relay, body: Chat.body(model: "claude-test", maxTokens: 200), requestID: id)
        XCTAssertEqual(Chat.text(events), AnthropicFixtures.pieces.joined())
        assertSequence(events)
        guard case .done(let finish, let usage, _)? = try? StreamEvent(json: events.last!.data) else {
            return XCTFail("ends with done, got \(events.last?.data ?? "nothing")")
        }
        XCTAssertEqual(finish, "stop", "end_turn maps to stop")
        XCTAssertEqual(usage.promptTokens, 25)
        XCTAssertEqual(usage.completionTokens, 15)
        let req = try XCTUnwrap(fake.requests.first)
        XCTAssertEqual(req.path, Self.anthropicPath)
        XCTAssertEqual(req.headers["x-api-key"], "key-anthropic-test")
        XCTAssertEqual(req.headers["anthropic-version"], "2023-06-01")
        XCTAssertNil(req.headers["authorization"], "Anthropic authenticates with x-api-key only")
        XCTAssertEqual(req.json["stream"] as? Bool, true)
        XCTAssertEqual(req.json["model"] as? String, "claude-test")
        XCTAssertEqual(req.json["max_tokens"] as? Int, 200)
        XCTAssertEqual(try redis.cli("HGET", streamKey(id, "meta"), "state"), "done")
    }

    /// An Anthropic `error` event mid-stream ends the relay's stream with one `error`
    /// event after the text so far (never a silent end).
    func testAnthropicMidStreamErrorEndsTheStreamWithAnErrorEvent() throws {
        let fake = try FakeUpstreamServer(routes: [Self.anthropicPath: anthropicScript(AnthropicFixtures.midStreamError)])
        defer { fake.stop() }
        let relay = try httpRelay("anthropic", fake, model: "claude-test")
        let id = Chat.newID()
        let events = try stream(relay, body: Chat.body(model: "claude-test", maxTokens: 50), requestID: id)
        guard case .error(let status, let code, _)? = try? StreamEvent(json: events.last?.data ?? "") else {
            return XCTFail("ends with an error event, got \(events.map(\.data))")
        }
        XCTAssertGreaterThanOrEqual(status, 500)
        XCTAssertFalse(code.rawValue.isEmpty)
        XCTAssertEqual(try redis.cli("HGET", streamKey(id, "meta"), "state"), "failed")
    }

    /// `"mode":"summary"` through the relay, for both dialects: the upstream request's
    /// `max_tokens` is capped at `RELAY_SUMMARY_MAX_TOKENS` (123 here, not the asked 3,000)
    /// and the summary instruction comes first in the system prompt.
    func testSummaryModeThroughTheRelayForBothDialects() throws {
        let fake = try FakeUpstreamServer(routes: [Self.anthropicPath: anthropicScript(AnthropicFixtures.normal),
                                                   Self.openAIPath: UpstreamRelayTests.normalStream()])
        defer { fake.stop() }
        for dialect in ["anthropic", "openai"] {
            let before = fake.requests.count
            let relay = try httpRelay(dialect, fake, model: "m-\(dialect)", ["RELAY_SUMMARY_MAX_TOKENS": "123"])
            let events = try stream(relay, body: Chat.body(model: "m-\(dialect)", maxTokens: 3000, mode: "summary"))
            XCTAssertTrue(events.last.map { (try? StreamEvent(json: $0.data))?.isTerminal == true } ?? false, dialect)
            XCTAssertEqual(fake.requests.count, before + 1, dialect)
            let json = try XCTUnwrap(fake.requests.last).json
            XCTAssertEqual(json["max_tokens"] as? Int, 123, "\(dialect): the summary cap")
            let system: String?
            if dialect == "anthropic" {
                system = json["system"] as? String
            } else {
                let messages = json["messages"] as? [[String: Any]] ?? []
                system = messages.first { $0["role"] as? String == "system" }?["content"] as? String
            }
            XCTAssertTrue(system?.hasPrefix("Answer with a short summary") == true, "\(dialect): system \(system ?? "nil")")
            // Without summary mode the same request keeps its max_tokens and no instruction.
            _ = try stream(relay, body: Chat.body(model: "m-\(dialect)", maxTokens: 300))
            let plain = try XCTUnwrap(fake.requests.last).json
            XCTAssertEqual(plain["max_tokens"] as? Int, 300, "\(dialect): normal mode")
            XCTAssertFalse(String(decoding: try JSONSerialization.data(withJSONObject: plain), as: UTF8.self)
                .contains("Answer with a short summary"), "\(dialect): no instruction in normal mode")
        }
    }

    /// An upstream that sends one chunk and then nothing: after
    /// `RELAY_UPSTREAM_IDLE_TIMEOUT` (600 ms) the relay ends the stream with a 504
    /// `upstream_timeout` event after the delta, closes the upstream connection, and the
    /// stream fails — not before the timeout, and not long after it.
    func testUpstreamIdleTimeoutEndsAStalledStream() throws {
        let fake = try FakeUpstreamServer(routes: [Self.openAIPath: .init([
            .head(status: 200, contentType: "text/event-stream"),
            .send(UpstreamRelayTests.openAIChunk("Partial")),
            .holdOpen,
        ])])
        defer { fake.stop() }
        let relay = try httpRelay("openai", fake, model: "gpt-test", ["RELAY_UPSTREAM_IDLE_TIMEOUT": "600ms", "RELAY_HEARTBEAT": "200ms"])
        let id = Chat.newID()
        let c = try SSEConnection(port: relay.port, method: "POST", path: "/api/chat/stream",
                                  headers: [("Authorization", "Bearer \(RelayProcess.token())"), ("Content-Type", "application/json"),
                                            ("X-Request-Id", id)],
                                  body: Chat.body(model: "gpt-test", maxTokens: 50))
        let first = try XCTUnwrap(try c.nextEvent(timeout: 10))
        let afterFirst = Date()
        XCTAssertEqual(Chat.text([first]), "Partial")
        let rest = try c.readAll(timeout: 15)
        let elapsed = Date().timeIntervalSince(afterFirst)
        XCTAssertEqual(rest.count, 1, "one terminal event after the delta: \(rest.map(\.data))")
        guard case .error(504, "upstream_timeout", _)? = try? StreamEvent(json: rest.last?.data ?? "") else {
            return XCTFail("ends with 504 upstream_timeout, got \(rest.map(\.data))")
        }
        // The idle clock starts at the upstream's last byte, just before the delta arrived.
        XCTAssertGreaterThanOrEqual(elapsed, 0.5, "not before the idle timeout")
        XCTAssertLessThan(elapsed, 6, "soon after the idle timeout (loose for a loaded machine)")
        XCTAssertEqual(fake.waitForCloses(1, timeout: 5).count, 1, "the stalled upstream connection is closed")
        XCTAssertEqual(try redis.cli("HGET", streamKey(id, "meta"), "state"), "failed")
    }
}
