import RelayTestSupport
import Foundation
import RelayCore
@testable import RelayUpstream
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// Upstream failures: each ends the stream with exactly one 502/504 error, never a hang,
/// and leaves no transfer behind.
final class UpstreamFailureTests: UpstreamTestCase {
    func testConnectFailure() throws {
        // A port with nothing listening: bind, read the port, close.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { p -> Int32 in
                _ = bind(fd, p, len)
                return getsockname(fd, p, &len)
            }
        }
        close(fd)
        let port = UInt16(bigEndian: addr.sin_port)
        var c = HTTPUpstreamConfig(baseURL: "http://127.0.0.1:\(port)", apiKey: "k", defaultModel: "m")
        c.noProxy = "*"
        let up = try HTTPUpstreamFactory(.openAI, config: c, multi: harness.multi).makeUpstream(for: Self.question, loop: harness.loop)
        let events = harness.collect(up)
        assertEndsWithError(events, status: 502, code: "upstream_error", containing: "upstream connection failed")
        XCTAssertEqual(events.count, 1)
        assertMultiIdle()
    }

    func testStallHitsIdleTimeout() throws {
        let script = FakeUpstreamServer.Script([.head(status: 200, contentType: "text/event-stream"),
                                                .send((OpenAIFixtures.roleChunk + OpenAIFixtures.content("Hi")).bytes),
                                                .holdOpen])
        let started = DispatchTime.now()
        let (events, s) = try runOpenAI(script) { $0.idleTimeoutMs = 300 }
        let ms = Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e6
        XCTAssertEqual(events.first, .delta("Hi"))
        assertEndsWithError(events, status: 504, code: "upstream_timeout", containing: "300 ms")
        XCTAssertGreaterThanOrEqual(ms, 280)
        XCTAssertLessThan(ms, 3_000)
        XCTAssertEqual(s.waitForCloses(1).count, 1, "the stalled connection was closed")
        assertMultiIdle()
    }

    func testStallBeforeHeadersHitsIdleTimeout() throws {
        let (events, _) = try runAnthropic(.init([.holdOpen])) { $0.idleTimeoutMs = 200 }
        assertEndsWithError(events, status: 504, code: "upstream_timeout", containing: "no data")
    }

    func testPrematureCloseChunked() throws {
        let body = AnthropicFixtures.messageStart(input: 5) + AnthropicFixtures.blockStart + AnthropicFixtures.text("Half")
        let (events, _) = try runAnthropic(.init([.head(status: 200, contentType: "text/event-stream"), .send(body.bytes), .hangUp]))
        XCTAssertEqual(events.first, .delta("Half"))
        assertEndsWithError(events, status: 502, code: "upstream_error", containing: "closed the stream before its end")
        assertMultiIdle()
    }

    func testPrematureCloseOfCloseDelimitedBody() throws {
        // Without chunked framing the close is a normal end for HTTP: only the missing
        // [DONE] tells it was premature.
        let body = OpenAIFixtures.roleChunk + OpenAIFixtures.content("Half")
        let (events, _) = try runOpenAI(Self.sse(body, chunked: false))
        XCTAssertEqual(events.first, .delta("Half"))
        assertEndsWithError(events, status: 502, code: "upstream_error", containing: "closed the stream before its end")
    }

    func testCloseAfterFinishReasonWithoutDoneIsStillDone() throws {
        let body = OpenAIFixtures.roleChunk + OpenAIFixtures.content("All") + OpenAIFixtures.finish("stop")
        let (events, _) = try runOpenAI(Self.sse(body, chunked: false))
        guard case .done(let reason, let usage, _)? = events.last else { return XCTFail("\(events)") }
        XCTAssertEqual(reason, "stop")
        XCTAssertEqual(usage.completionTokens, 1)
    }

    func testHTMLInsteadOfSSE() throws {
        let html = "<!DOCTYPE html>\n<html><head><title>Login</title></head><body>Please sign in</body></html>\n"
        let (events, _) = try runOpenAI(.init([.head(status: 200, contentType: "text/html; charset=utf-8"), .send(html.bytes)]))
        XCTAssertEqual(events.count, 1)
        assertEndsWithError(events, status: 502, code: "upstream_error", containing: "HTML page instead of text/event-stream")

        let (bad, _) = try runOpenAI(.init([.head(status: 502, contentType: "text/html"), .send(html.bytes)]))
        assertEndsWithError(bad, status: 502, code: "upstream_error", containing: "upstream 502 (HTML page")

        // HTML labelled as an event stream: no event, then the close → premature.
        let (mislabelled, _) = try runOpenAI(Self.sse(html))
        assertEndsWithError(mislabelled, status: 502, code: "upstream_error", containing: "before its end")
        assertMultiIdle()
    }

    func testJSONInsteadOfSSE() throws {
        let json = "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion\",\"choices\":[]}"
        let (events, _) = try runOpenAI(.init([.head(status: 200, contentType: "application/json"), .send(json.bytes)]))
        assertEndsWithError(events, status: 502, code: "upstream_error", containing: "application/json instead of text/event-stream")
    }

    func testEmptyBody() throws {
        let (events, _) = try runOpenAI(.init([.head(status: 200, contentType: "text/event-stream")]))
        assertEndsWithError(events, status: 502, code: "upstream_error", containing: "upstream 200 answered with an empty body")
        let (e2, _) = try runOpenAI(.init([.head(status: 503, contentType: "application/json")]))
        assertEndsWithError(e2, status: 502, code: "upstream_error", containing: "upstream 503 (empty body)")
    }

    func testEndlessLineIsCutAtTheLineLimit() throws {
        let script = FakeUpstreamServer.Script([.head(status: 200, contentType: "text/event-stream"),
                                                .send((OpenAIFixtures.roleChunk + OpenAIFixtures.content("x")).bytes),
                                                .flood(line: Array("data: {\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa".utf8), totalBytes: 50 << 20),
                                                .holdOpen])
        let (events, s) = try runOpenAI(script)
        XCTAssertEqual(events.first, .delta("x"))
        assertEndsWithError(events, status: 502, code: "upstream_error", containing: "line longer than 1048576 bytes")
        XCTAssertEqual(s.waitForCloses(1).count, 1, "the flooding connection was closed")
        assertMultiIdle()
    }

    func testTenMegabyteSingleLineEvent() throws {
        var body = Array("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"".utf8)
        body += [UInt8](repeating: UInt8(ascii: "z"), count: 10 << 20)
        body += Array("\"}}]}\n\n".utf8)
        let (events, _) = try runAnthropic(.init([.head(status: 200, contentType: "text/event-stream"), .send(body), .holdOpen]))
        assertEndsWithError(events, status: 502, code: "upstream_error", containing: "line longer than")
        assertMultiIdle()
    }

    func testTenMegabyteEventOfManyLinesIsCutAtTheEventLimit() throws {
        // 1 KiB data lines, never a blank line: each line is fine, the event is not.
        let line = Array(("data: " + String(repeating: "y", count: 1017) + "\n").utf8)
        let script = FakeUpstreamServer.Script([.head(status: 200, contentType: "text/event-stream"),
                                                .send(AnthropicFixtures.messageStart(input: 1).bytes),
                                                .flood(line: line, totalBytes: 10 << 20), .holdOpen])
        let (events, s) = try runAnthropic(script)
        assertEndsWithError(events, status: 502, code: "upstream_error", containing: "more than 4194304 bytes without completing an event")
        XCTAssertEqual(s.waitForCloses(1).count, 1)
        assertMultiIdle()
    }

    func testErrorBodyIsBounded() throws {
        let big = "{\"error\":{\"type\":\"x\",\"message\":\"" + String(repeating: "m", count: 1 << 20) + "\"}}"
        let (events, _) = try runOpenAI(Self.errorAnswer(500, big)) { $0.maxErrorBodyBytes = 4096 }
        assertEndsWithError(events, status: 502, code: "upstream_error", containing: "upstream 500")
        if case .error(_, _, let m)? = events.last { XCTAssertLessThan(m.count, 1_000) }
    }
}
