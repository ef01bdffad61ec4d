import Foundation
import RelayCore
import RelayTestKit
import RelayTestSupport
import XCTest

/// The bytes of stream responses against the WHATWG HTML SSE format (§9.2) and HTTP (RFC 9110,
/// RFC 9112): charset, where `retry:` and `id:` sit, the `204` that ends a finished stream,
/// `HEAD` on every `GET` route, and how a response the relay ends itself ends
/// (docs/PROTOCOL.md §1, §4).
final class WireFormatTests: RelayTestCase {
    /// The whole body of `c` as text, read to its end.
    private func body(_ c: SSEConnection) throws -> String {
        var out: [UInt8] = []
        while let chunk = try c.readBody(timeout: 10) { out += chunk }
        return String(decoding: out, as: UTF8.self)
    }

    /// `Content-Type: text/event-stream; charset=utf-8`; the body's first block is the first
    /// event with `retry:` (500–1500 ms) in it; every event is `data:` then `id:` then the
    /// blank line, ids 1, 2, 3 …; the response ends with the last chunk.
    func testEventsCarryTheirIDLastAndRetrySitsInTheFirstEventsBlock() throws {
        let relay = try startRelay()
        let c = try Chat.start(port: relay.port, token: RelayProcess.token(), maxTokens: 20)
        XCTAssertEqual(c.header("Content-Type"), "text/event-stream; charset=utf-8")
        let text = try body(c)
        XCTAssertTrue(c.endedWithLastChunk)
        let blocks = text.components(separatedBy: "\n\n").filter { !$0.isEmpty }
        XCTAssertEqual(blocks.count, 21, text)
        let first = blocks[0].split(separator: "\n").map(String.init)
        XCTAssertEqual(first.count, 3, "retry, data, id in one block: \(first)")
        XCTAssertTrue(first[0].hasPrefix("retry: "), first[0])
        let retry = Int(first[0].dropFirst("retry: ".count)) ?? 0
        XCTAssertTrue((500...1500).contains(retry), "retry \(retry)")
        for (i, block) in blocks.enumerated() {
            let lines = block.split(separator: "\n").map(String.init).drop { $0.hasPrefix("retry: ") }
            XCTAssertEqual(lines.count, 2, block)
            XCTAssertTrue(lines.first?.hasPrefix("data: {") == true, block)
            XCTAssertEqual(lines.last, "id: \(i + 1)", "the id last, just before the blank line")
        }
        XCTAssertFalse(text.contains("retry: \(retry)\n\n"), "retry never travels in a block of its own")
    }

    /// Two connections get different `retry:` values (the spread is per connection): over 12
    /// connections at least two distinct values (a chance of 1001⁻¹¹ to fail by luck).
    func testRetryDiffersBetweenConnections() throws {
        let relay = try startRelay()
        let token = RelayProcess.token()
        var seen = Set<Int>()
        for _ in 0..<12 {
            let c = try Chat.start(port: relay.port, token: token, maxTokens: 1)
            _ = try c.readAll()
            seen.insert(try XCTUnwrap(c.parser.retry))
        }
        XCTAssertGreaterThan(seen.count, 1, "\(seen)")
        XCTAssertTrue(seen.allSatisfy { (500...1500).contains($0) }, "\(seen)")
    }

    /// A resume of a finished stream from its final event: `204` with the stream's
    /// `Content-Type`, no body.
    func testTheNoContentEndOfAFinishedStreamNamesTheEventStreamType() throws {
        let relay = try startRelay()
        let token = RelayProcess.token()
        let id = Chat.newID()
        XCTAssertEqual(try Chat.start(port: relay.port, token: token, requestID: id, maxTokens: 3).readAll().count, 4)
        let r = try HTTPClient.request(port: relay.port, method: "GET", path: "/api/chat/stream/\(id)",
                                       headers: [("Authorization", "Bearer \(token)"), ("Last-Event-ID", "4")])
        XCTAssertEqual(r.status, 204)
        XCTAssertEqual(r.header("Content-Type"), "text/event-stream; charset=utf-8")
        XCTAssertEqual(r.body, [])
    }

    /// One `HEAD` request on a fresh connection: the response's status, head and what follows
    /// the head (nothing) until the relay closes (`Connection: close`).
    private func head(_ port: Int, _ path: String, _ headers: [(String, String)] = []) throws -> (status: Int, head: String, rest: [UInt8]) {
        let c = try RawConnection(port: port)
        defer { c.close() }
        var req = "HEAD \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        for (k, v) in headers { req += "\(k): \(v)\r\n" }
        try c.send(req + "\r\n")
        let all = c.readToEnd(timeout: 10)
        guard let end = all.firstRange(of: Array("\r\n\r\n".utf8)) else {
            throw TestFailure("no response head: \(String(decoding: all, as: UTF8.self))")
        }
        let head = String(decoding: all[..<end.lowerBound], as: UTF8.self)
        let status = Int(head.split(separator: " ").dropFirst().first ?? "") ?? 0
        return (status, head, Array(all[end.upperBound...]))
    }

    /// `HEAD` is served wherever `GET` is (RFC 9110 §9.3.2): `/api/budget`, `/metrics` and the
    /// stream resume answer the `GET`'s status and head without content; the resume's `HEAD`
    /// starts no subscription (no live connection, no resume counted) and says `204` for a
    /// finished stream read from its end; `Allow` lists `HEAD`.
    func testHeadOnEveryGetRouteAnswersTheGetsHeadWithoutContent() throws {
        let relay = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "20"])
        let token = RelayProcess.token()
        let auth = [("Authorization", "Bearer \(token)")]
        let budget = try head(relay.port, "/api/budget", auth)
        XCTAssertEqual(budget.status, 200, budget.head)
        XCTAssertTrue(budget.head.contains("Content-Type: application/json"), budget.head)
        let getBudget = try HTTPClient.request(port: relay.port, method: "GET", path: "/api/budget", headers: auth)
        XCTAssertTrue(budget.head.contains("Content-Length: \(getBudget.body.count)"), budget.head)
        XCTAssertEqual(budget.rest, [])
        XCTAssertEqual(try head(relay.port, "/api/budget").status, 401, "HEAD is authenticated as GET is")
        let metrics = try head(relay.port, "/metrics")
        XCTAssertEqual(metrics.status, 200)
        XCTAssertTrue(metrics.head.contains("Content-Type: text/plain; version=0.0.4"), metrics.head)
        XCTAssertEqual(metrics.rest, [])

        // A running stream (20 tokens/s: ~5 s for 100).
        let id = Chat.newID()
        let live = try Chat.start(port: relay.port, token: token, requestID: id, maxTokens: 100)
        _ = try live.nextEvent()
        try eventually(5, "the POST's live connection in /metrics") { try metric(relay, "relay_live_connections") == 1 }
        let resumesBefore = try metricSum(relay, "relay_resumes_total")
        let stream = try head(relay.port, "/api/chat/stream/\(id)", auth + [("Last-Event-ID", "1")])
        XCTAssertEqual(stream.status, 200, stream.head)
        XCTAssertTrue(stream.head.contains("Content-Type: text/event-stream; charset=utf-8"), stream.head)
        XCTAssertTrue(stream.head.contains("X-Request-Id: \(id)"), stream.head)
        XCTAssertEqual(stream.rest, [], "no body, no subscription")
        XCTAssertEqual(try head(relay.port, "/api/chat/stream/\(id)").status, 401)
        XCTAssertEqual(try head(relay.port, "/api/chat/stream/\(Chat.newID())", auth).status, 404)
        try consistently(for: 1.5, "HEAD counts no resume and holds no connection") {
            let resumes = try metricSum(relay, "relay_resumes_total"), live = try metric(relay, "relay_live_connections")
            if resumes != resumesBefore || live != 1 { print("resumes \(resumes) (before: \(resumesBefore)), live \(String(describing: live))") }
            return resumes == resumesBefore && live == 1
        }
        let events = try live.readAll()
        let last = try XCTUnwrap(events.last?.lastEventId)
        let done = try head(relay.port, "/api/chat/stream/\(id)", auth + [("Last-Event-ID", last)])
        XCTAssertEqual(done.status, 204, done.head)
        XCTAssertTrue(done.head.contains("Content-Type: text/event-stream; charset=utf-8"), done.head)

        let put = try HTTPClient.request(port: relay.port, method: "PUT", path: "/api/chat/stream/\(id)", headers: auth)
        XCTAssertEqual(put.status, 405)
        XCTAssertEqual(put.header("Allow"), "GET, HEAD, DELETE")
        XCTAssertEqual(try HTTPClient.request(port: relay.port, method: "POST", path: "/api/budget", headers: auth).header("Allow"), "GET, HEAD")
    }

    /// SIGTERM: open streams' responses end with the chunked last chunk (RFC 9112 §7.1),
    /// without a terminal event, and their connections close — a clean end an `EventSource`
    /// reconnects after (WHATWG HTML §9.2.3), not a reset — both on an instance that keeps
    /// generating the answer during its drain and on one that generates nothing and exits at
    /// once (it exits only once the ended responses are written out). A resume elsewhere
    /// gets the rest.
    func testADrainEndsOpenStreamsWithTheLastChunkThenCloses() throws {
        let owner = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "100"])
        let reader = try startRelay()
        let other = try startRelay()
        let token = RelayProcess.token()
        let id = Chat.newID()
        let c = try Chat.start(port: owner.port, token: token, requestID: id, maxTokens: 400)
        for _ in 0..<5 { _ = try c.nextEvent() }
        let r = try Chat.resume(port: reader.port, token: token, requestID: id, lastEventID: "0")
        for _ in 0..<5 { _ = try r.nextEvent() }

        kill(reader.process.processIdentifier, SIGTERM)
        let readerRest = try r.readAll(timeout: 10)
        XCTAssertTrue(r.endedWithLastChunk, "the reader's response ended with 0\\r\\n\\r\\n, not a reset or a bare close")
        XCTAssertFalse(readerRest.contains(where: isTerminal))
        XCTAssertEqual(reader.terminate(timeout: 20), 0, "an instance without generations exits after its drain")

        kill(owner.process.processIdentifier, SIGTERM)
        let rest = try c.readAll(timeout: 10)
        XCTAssertTrue(c.endedWithLastChunk, "the generating instance's client too")
        XCTAssertFalse(rest.contains(where: isTerminal), "cut, not finished, by the drain")
        let last = rest.last?.lastEventId ?? "5"
        let resumed = try Chat.resume(port: other.port, token: token, requestID: id, lastEventID: last).readAll(timeout: 30)
        XCTAssertEqual(resumed.last.map(isTerminal), true)
        assertSequence(resumed, from: (UInt64(last) ?? 0) + 1)
    }
}
