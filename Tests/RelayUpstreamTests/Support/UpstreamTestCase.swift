import RelayTestSupport
import Foundation
import RelayCore
import RelayLoop
@testable import RelayUpstream
import XCTest

/// Base for the HTTP adapter tests: a `LoopHarness` per test, fake servers stopped at the end,
/// and helpers that point a factory at a fixture path.
class UpstreamTestCase: XCTestCase {
    var harness: LoopHarness!
    private var servers: [FakeUpstreamServer] = []

    override func setUpWithError() throws {
        harness = try LoopHarness()
    }

    override func tearDown() {
        for s in servers { s.stop() }
        servers = []
        harness = nil
    }

    /// A fake server with `routes`.
    func server(_ routes: [String: FakeUpstreamServer.Script]) throws -> FakeUpstreamServer {
        let s = try FakeUpstreamServer(routes: routes)
        servers.append(s)
        return s
    }

    /// Config for `server`, fixture prefix `prefix` (so the API path is `/<prefix>/v1/…`).
    func config(_ server: FakeUpstreamServer, _ prefix: String = "t") -> HTTPUpstreamConfig {
        var c = HTTPUpstreamConfig(baseURL: "\(server.baseURL)/\(prefix)", apiKey: "sk-test", defaultModel: "test-model")
        c.noProxy = "*"
        return c
    }

    static let openAIPath = "/t/v1/chat/completions"
    static let anthropicPath = "/t/v1/messages"
    static let responsesPath = "/t/v1/responses"

    static let question = ChatRequest(messages: [ChatMessage(role: "user", content: "Summarise clause 3, please.")])

    /// Runs one OpenAI-compatible request against `script` and returns its events.
    func runOpenAI(_ script: FakeUpstreamServer.Script, request: ChatRequest = question,
                   tweak: (inout HTTPUpstreamConfig) -> Void = { _ in },
                   file: StaticString = #filePath, line: UInt = #line) throws -> (events: [StreamEvent], server: FakeUpstreamServer) {
        let s = try server([Self.openAIPath: script])
        var c = config(s)
        tweak(&c)
        let up = try HTTPUpstreamFactory(.openAI, config: c, multi: harness.multi).makeUpstream(for: request, loop: harness.loop)
        return (harness.collect(up, file: file, line: line), s)
    }

    /// Runs one Anthropic request against `script` and returns its events.
    func runAnthropic(_ script: FakeUpstreamServer.Script, request: ChatRequest = question,
                      tweak: (inout HTTPUpstreamConfig) -> Void = { _ in },
                      file: StaticString = #filePath, line: UInt = #line) throws -> (events: [StreamEvent], server: FakeUpstreamServer) {
        let s = try server([Self.anthropicPath: script])
        var c = config(s)
        tweak(&c)
        let up = try HTTPUpstreamFactory(.anthropic, config: c, multi: harness.multi).makeUpstream(for: request, loop: harness.loop)
        return (harness.collect(up, file: file, line: line), s)
    }

    /// Runs one OpenAI Responses request against `script` and returns its events.
    func runOpenAIResponses(_ script: FakeUpstreamServer.Script, request: ChatRequest = question,
                            tweak: (inout HTTPUpstreamConfig) -> Void = { _ in },
                            file: StaticString = #filePath, line: UInt = #line) throws -> (events: [StreamEvent], server: FakeUpstreamServer) {
        let s = try server([Self.responsesPath: script])
        var c = config(s)
        tweak(&c)
        let up = try HTTPUpstreamFactory(.openAIResponses, config: c, multi: harness.multi).makeUpstream(for: request, loop: harness.loop)
        return (harness.collect(up, file: file, line: line), s)
    }

    /// A 200 `text/event-stream` script sending `body` in one piece.
    static func sse(_ body: String, chunked: Bool = true) -> FakeUpstreamServer.Script {
        .init([.head(status: 200, contentType: "text/event-stream; charset=utf-8", chunked: chunked), .send(body.bytes)])
    }

    /// A non-2xx JSON error answer.
    static func errorAnswer(_ status: Int, _ json: String) -> FakeUpstreamServer.Script {
        .init([.head(status: status, contentType: "application/json"), .send(json.bytes)])
    }

    /// Asserts `events` is exactly one terminal error with this status/code whose message
    /// contains `fragment`, possibly after some deltas.
    func assertEndsWithError(_ events: [StreamEvent], status: Int, code: String, containing fragment: String,
                             file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(events.filter(\.isTerminal).count, 1, "exactly one terminal event: \(events)", file: file, line: line)
        guard case .error(let s, let c, let m)? = events.last else {
            return XCTFail("last event is not an error: \(String(describing: events.last))", file: file, line: line)
        }
        XCTAssertEqual(s, status, file: file, line: line)
        XCTAssertEqual(c.rawValue, code, file: file, line: line)
        XCTAssertTrue(m.contains(fragment), "message \"\(m)\" lacks \"\(fragment)\"", file: file, line: line)
    }

    /// After a terminal event the worker's multi handle is left with no transfer and no
    /// watched socket (drained or aborted), within `ms`.
    func assertMultiIdle(within ms: UInt64 = 2_000, file: StaticString = #filePath, line: UInt = #line) {
        let m = harness.multi
        XCTAssertTrue(harness.spin(upTo: ms) { m.activeTransfers == 0 },
                      "transfers still active: \(m.activeTransfers)", file: file, line: line)
    }
}
