import Foundation
import RelayCore
import RelayTestKit
import RelayTestSupport
import XCTest

/// The Durable Streams project's server conformance cases that apply to a read-only stream
/// (its `packages/server-conformance-tests/src/index.ts`; Durable Streams PROTOCOL.md §5.5–§5.8,
/// §8, §10.1, §12.7), ported: the stream is an answer started by `POST /api/chat/stream` and
/// read with the bearer token; each test names the DS cases it carries.
final class DurableStreamsReadConformanceTests: RelayTestCase {
    private func request(_ relay: RelayProcess, _ method: String = "GET", _ token: String, _ id: String, _ query: String = "",
                         headers: [(String, String)] = []) throws -> HTTPResponse {
        try HTTPClient.request(port: relay.port, method: method, path: "/api/chat/stream/\(id)" + (query.isEmpty ? "" : "?\(query)"),
                               headers: [("Authorization", "Bearer \(token)")] + headers)
    }

    private func finishedAnswer(_ relay: RelayProcess, maxTokens: Int = 20) throws -> (token: String, id: String) {
        let token = RelayProcess.token()
        let id = Chat.newID()
        _ = try Chat.start(port: relay.port, token: token, requestID: id, maxTokens: maxTokens).readAll()
        return (token, id)
    }

    /// DS "should return metadata without body", "should return tail offset",
    /// "head-closed-stream", "head-open-stream-no-closed-header", "should return 404 for
    /// non-existent stream", Cache-Control `no-store` on HEAD.
    func testHeadOfTheStreamURLGivesTheTailAndWhetherItIsClosed() throws {
        let relay = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "20"])
        let token = RelayProcess.token()
        let id = Chat.newID()
        let live = try Chat.start(port: relay.port, token: token, requestID: id, maxTokens: 200)
        for _ in 0..<3 { _ = try XCTUnwrap(try live.nextEvent()) }
        let open1 = try request(relay, "HEAD", token, id)
        XCTAssertEqual(open1.status, 200)
        XCTAssertEqual(open1.header("Content-Type"), "application/json")
        XCTAssertTrue(open1.body.isEmpty)
        XCTAssertNil(open1.header("Content-Length"), "a HEAD answered from the plan claims no length for the GET's body")
        XCTAssertNil(open1.header("Stream-Closed"), "an open stream")
        XCTAssertTrue(open1.header("Cache-Control")?.contains("no-store") == true)
        XCTAssertNotNil(open1.header("X-Read-Ticket"), "a bearer request on the stream gets a fresh read ticket (PROTOCOL §2.5)")
        let first = try XCTUnwrap(open1.header("Stream-Next-Offset"))
        try eventually(5, "more events") { try self.request(relay, "HEAD", token, id).header("Stream-Next-Offset") != first }
        live.close()
        let (doneToken, doneID) = try finishedAnswer(relay)
        let closed = try request(relay, "HEAD", doneToken, doneID)
        XCTAssertEqual(closed.header("Stream-Closed"), "true")
        XCTAssertEqual(closed.header("Stream-Next-Offset"), String(format: "%020d", 21))
        XCTAssertEqual(try request(relay, "HEAD", token, Chat.newID()).status, 404)
    }

    /// DS "should correctly set headers on GET", "should return same data for offset=-1 and no
    /// offset", "should return empty body with up-to-date for empty stream": a client's default
    /// call sends no offset and gets the catch-up from the start.
    func testAGetWithoutAnOffsetIsACatchUpFromTheStart() throws {
        let relay = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "50000"])
        let (token, id) = try finishedAnswer(relay)
        let bare = try request(relay, "GET", token, id, headers: [("Accept", "*/*")])
        let fromStart = try request(relay, "GET", token, id, "offset=-1")
        XCTAssertEqual(bare.status, 200)
        XCTAssertEqual(bare.header("Content-Type"), "application/json")
        XCTAssertEqual(bare.text, fromStart.text)
        XCTAssertEqual(bare.header("Stream-Next-Offset"), fromStart.header("Stream-Next-Offset"))
        XCTAssertEqual(bare.header("Stream-Up-To-Date"), "true")
        XCTAssertTrue(bare.text.hasPrefix("[{\"type\":\"delta\""), bare.text.prefix(60).description)
        // An SSE client (Accept: text/event-stream) or a resume (Last-Event-ID) keeps the SSE resume.
        let sse = try request(relay, "GET", token, id, headers: [("Accept", "text/event-stream")])
        XCTAssertTrue(sse.header("Content-Type")?.hasPrefix("text/event-stream") == true)
        let resumed = try request(relay, "GET", token, id, headers: [("Last-Event-ID", "19")])
        XCTAssertTrue(resumed.header("Content-Type")?.hasPrefix("text/event-stream") == true)
        XCTAssertTrue(resumed.text.contains("id: 20"), resumed.text)
    }

    /// DS "should require offset parameter for long-poll", "should require offset parameter for
    /// SSE mode"; malformed offsets (a comma, a space, empty, repeated) and unknown parameters.
    func testLiveWithoutAnOffsetAndMalformedOffsetsAreRefused() throws {
        let relay = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "50000"])
        let (token, id) = try finishedAnswer(relay)
        for q in ["live=long-poll", "live=sse", "offset=1,2", "offset=1%202", "offset=", "offset=-1&offset=-1"] {
            let r = try request(relay, "GET", token, id, q)
            XCTAssertEqual(r.status, 400, q)
            XCTAssertEqual(r.errorCode, "invalid_offset", q)
        }
        XCTAssertEqual(try request(relay, "GET", token, id, "offset=-1&foo=bar").status, 200, "unknown parameters are ignored")
    }

    /// DS "should generate ETag on GET", "should return 304 for matching If-None-Match",
    /// "should return 200 for non-matching If-None-Match", "should return new ETag after data
    /// changes", offset=now has no ETag (§8).
    func testCatchUpsCarryAnETagAndAMatchingIfNoneMatchGets304() throws {
        let relay = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "20"])
        let token = RelayProcess.token()
        let id = Chat.newID()
        let live = try Chat.start(port: relay.port, token: token, requestID: id, maxTokens: 40)
        for _ in 0..<3 { _ = try XCTUnwrap(try live.nextEvent()) }
        let first = try request(relay, "GET", token, id, "offset=-1")
        let tag = try XCTUnwrap(first.header("ETag"))
        XCTAssertTrue(tag.hasPrefix("\"") && tag.hasSuffix("\""), tag)
        XCTAssertEqual(try request(relay, "GET", token, id, "offset=-1", headers: [("If-None-Match", "\"other\"")]).status, 200)
        _ = try live.readAll()
        let later = try request(relay, "GET", token, id, "offset=-1", headers: [("If-None-Match", tag)])
        XCTAssertEqual(later.status, 200, "the range grew: the old tag no longer matches")
        let closedTag = try XCTUnwrap(later.header("ETag"))
        XCTAssertNotEqual(closedTag, tag)
        XCTAssertTrue(closedTag.hasSuffix(":c\""), "a closed answer's tag says so: \(closedTag)")
        let notModified = try request(relay, "GET", token, id, "offset=-1", headers: [("If-None-Match", closedTag)])
        XCTAssertEqual(notModified.status, 304)
        XCTAssertTrue(notModified.body.isEmpty)
        XCTAssertEqual(notModified.header("ETag"), closedTag)
        XCTAssertEqual(notModified.header("X-Content-Type-Options"), "nosniff")
        let now = try request(relay, "GET", token, id, "offset=now")
        XCTAssertNil(now.header("ETag"), "the tail moves: offset=now has no tag")
        XCTAssertEqual(now.header("Stream-Closed"), "true")
        XCTAssertEqual(now.text, "[]")
    }

    /// DS §12.7 cases: `X-Content-Type-Options: nosniff` on GET, HEAD, SSE, long-poll and an
    /// error; `Cross-Origin-Resource-Policy` one of the three values.
    func testEveryResponseCarriesNosniffAndACrossOriginResourcePolicy() throws {
        let relay = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "50000"])
        let (token, id) = try finishedAnswer(relay)
        let responses = [try request(relay, "GET", token, id, "offset=-1"), try request(relay, "HEAD", token, id),
                         try request(relay, "GET", token, id, "offset=-1&live=sse"),
                         try request(relay, "GET", token, id, "offset=\(String(format: "%020d", 21))&live=long-poll"),
                         try request(relay, "GET", token, Chat.newID(), "offset=-1"),
                         try request(relay, "GET", token, id, headers: [("Last-Event-ID", "3")]),
                         try HTTPClient.request(port: relay.port, method: "GET", path: "/healthz")]
        for r in responses {
            XCTAssertEqual(r.header("X-Content-Type-Options"), "nosniff", "status \(r.status)")
            XCTAssertTrue(["same-origin", "same-site", "cross-origin"].contains(r.header("Cross-Origin-Resource-Policy") ?? ""),
                          "status \(r.status)")
        }
        XCTAssertEqual(responses[4].status, 404)
    }

    /// DS SSE cases: `Content-Type: text/event-stream`, `Cache-Control` with `no-cache`, each
    /// `control` event's `data:` a JSON object as the suite's pattern reads it, `streamClosed`
    /// at the end.
    func testDurableStreamsSSEFramesMatchTheSuitesPattern() throws {
        let relay = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "50000"])
        let (token, id) = try finishedAnswer(relay)
        let r = try request(relay, "GET", token, id, "offset=-1&live=sse")
        XCTAssertEqual(r.header("Content-Type"), "text/event-stream")
        XCTAssertTrue(r.header("Cache-Control")?.contains("no-cache") == true)
        let pattern = try NSRegularExpression(pattern: "event: control\\s*\\ndata:(\\{[^}]+\\})")
        let text = r.text
        let matches = pattern.matches(in: text, range: NSRange(text.startIndex..., in: text))
        XCTAssertFalse(matches.isEmpty, text)
        let last = try XCTUnwrap(matches.last.flatMap { Range($0.range(at: 1), in: text) }.map { String(text[$0]) })
        let control = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any])
        XCTAssertEqual(control["streamClosed"] as? Bool, true)
        XCTAssertEqual(control["streamNextOffset"] as? String, String(format: "%020d", 21))
    }
}
