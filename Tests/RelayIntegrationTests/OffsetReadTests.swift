import Foundation
import RelayCore
import RelayTestSupport
import RelayTestKit
import XCTest

/// Offset reads (docs/PROTOCOL.md §12; Durable Streams read protocol §5.6–5.8): catch-up,
/// long-poll and DS SSE on `GET /api/chat/stream/{id}?offset=…`, against real relays and
/// a real Redis.
final class OffsetReadTests: OffsetReadTestCase {
    func testCatchUpFromStartMiddleFinalAndNow() throws {
        let relay = try startRelay()
        let token = RelayProcess.token()
        let id = Chat.newID()
        let all = try Chat.start(port: relay.port, token: token, requestID: id, maxTokens: 20).readAll()
        XCTAssertEqual(all.count, 21)
        let whole = try get(relay, token, id, "offset=-1")
        XCTAssertEqual(whole.status, 200)
        XCTAssertEqual(whole.header("Content-Type"), "application/json")
        XCTAssertEqual(elements(whole), all.map(\.data).joined(separator: ","), "the SSE data lines, byte for byte")
        XCTAssertEqual(whole.header("Stream-Next-Offset"), offset(21))
        XCTAssertEqual(whole.header("Stream-Up-To-Date"), "true")
        XCTAssertEqual(whole.header("Stream-Closed"), "true")
        XCTAssertEqual(whole.header("Cache-Control"), "no-store")
        XCTAssertEqual(whole.header("X-Request-Id"), id)
        for mid in ["10", offset(10)] {
            let rest = try get(relay, token, id, "offset=\(mid)")
            XCTAssertEqual(rest.status, 200)
            XCTAssertEqual(elements(rest), all[10...].map(\.data).joined(separator: ","), "strictly after seq 10")
            XCTAssertEqual(rest.header("Stream-Next-Offset"), offset(21))
        }
        for atEnd in [offset(21), "now"] {
            let eof = try get(relay, token, id, "offset=\(atEnd)")
            XCTAssertEqual(eof.status, 200)
            XCTAssertEqual(eof.text, "[]")
            XCTAssertEqual(eof.header("Stream-Next-Offset"), offset(21))
            XCTAssertEqual(eof.header("Stream-Closed"), "true")
            XCTAssertEqual(eof.header("Stream-Up-To-Date"), "true")
        }
        // Without `offset` the SSE resume is unchanged.
        let sse = try Chat.resume(port: relay.port, token: token, requestID: id, lastEventID: "19").readAll()
        XCTAssertEqual(sse.map(\.lastEventId), ["20", "21"])
    }

    func testCatchUpOfARunningAnswerAtItsTailIsUpToDateButNotClosed() throws {
        let fake = try pausingUpstream(first: "Hello", pauseMs: 0, second: " world")
        defer { fake.stop() }
        let relay = try startRelay(openAIEnv(fake))
        let token = RelayProcess.token()
        let id = Chat.newID()
        let live = try Chat.start(port: relay.port, token: token, requestID: id, model: "gpt-test")
        _ = try XCTUnwrap(try live.nextEvent())
        let r = try get(relay, token, id, "offset=now")
        XCTAssertEqual(r.status, 200)
        XCTAssertEqual(r.text, "[]")
        XCTAssertEqual(r.header("Stream-Next-Offset"), offset(1))
        XCTAssertEqual(r.header("Stream-Up-To-Date"), "true")
        XCTAssertNil(r.header("Stream-Closed"))
        let fromStart = try get(relay, token, id, "offset=-1")
        XCTAssertEqual(fromStart.status, 200)
        XCTAssertEqual(fromStart.header("Stream-Next-Offset"), offset(1))
        XCTAssertNil(fromStart.header("Stream-Closed"))
        live.close()
    }

    func testLongPollIsWokenByAnEventGeneratedOnAnotherInstance() throws {
        let fake = try pausingUpstream(first: "Hello", pauseMs: 1500, second: " world")
        defer { fake.stop() }
        let a = try startRelay(openAIEnv(fake))
        // A timeout far beyond the upstream's pause: a 200 can only come from the wake.
        let b = try startRelay(["RELAY_LONG_POLL_TIMEOUT": "60s"])
        let token = RelayProcess.token()
        let id = Chat.newID()
        let live = try Chat.start(port: a.port, token: token, requestID: id, model: "gpt-test")
        let first = try XCTUnwrap(try live.nextEvent())
        XCTAssertEqual(first.lastEventId, "1")
        let r = try get(b, token, id, "offset=\(offset(1))&live=long-poll", timeout: 30)
        XCTAssertEqual(r.status, 200, r.text)
        XCTAssertTrue(r.text.hasPrefix("[{\"type\":\"delta\""), r.text)
        XCTAssertTrue(r.text.contains("world"), r.text)
        XCTAssertTrue([offset(2), offset(3)].contains(r.header("Stream-Next-Offset") ?? ""), "the events up to the one that woke it, or the next")
        XCTAssertEqual(r.header("Stream-Closed") == nil, r.header("Stream-Cursor") != nil, "a cursor while the answer is open (DS §5.7)")
        XCTAssertEqual(try generationsStarted([b]), 0, "nothing was generated on the polled instance")
        XCTAssertEqual(try live.readAll().map(\.lastEventId), ["2", "3"])
    }

    func testLongPollTimesOutWith204AndTheCurrentOffset() throws {
        let fake = try pausingUpstream(first: "Hello", pauseMs: 0, second: " world")  // holds open
        defer { fake.stop() }
        let relay = try startRelay(openAIEnv(fake, ["RELAY_LONG_POLL_TIMEOUT": "300ms"]))
        let token = RelayProcess.token()
        let id = Chat.newID()
        let live = try Chat.start(port: relay.port, token: token, requestID: id, model: "gpt-test")
        _ = try XCTUnwrap(try live.nextEvent())
        let r = try get(relay, token, id, "offset=\(offset(1))&live=long-poll&cursor=1")
        XCTAssertEqual(r.status, 204)
        XCTAssertEqual(r.text, "")
        XCTAssertEqual(r.header("Stream-Next-Offset"), offset(1))
        XCTAssertEqual(r.header("Stream-Up-To-Date"), "true")
        XCTAssertNil(r.header("Stream-Closed"))
        let cursor = try XCTUnwrap(r.header("Stream-Cursor").flatMap { UInt64($0) })
        XCTAssertGreaterThan(cursor, 1_000, "the DS §10.1 interval count since 2024-10-09")
        try eventually(10, "the waiting poll's connection slot is given back") {
            try self.metric(relay, "relay_live_connections") == 1
        }
        live.close()
    }

    func testLongPollAtTheEndOfAFinishedAnswerIs204StreamClosedAtOnce() throws {
        let relay = try startRelay(["RELAY_LONG_POLL_TIMEOUT": "120s"])
        let token = RelayProcess.token()
        let id = Chat.newID()
        let all = try Chat.start(port: relay.port, token: token, requestID: id, maxTokens: 5).readAll()
        // The client's read timeout (10 s) is far below the long-poll timeout: only an
        // answer at once passes.
        for o in [offset(all.count), "now"] {
            let r = try get(relay, token, id, "offset=\(o)&live=long-poll")
            XCTAssertEqual(r.status, 204)
            XCTAssertEqual(r.header("Stream-Closed"), "true")
            XCTAssertEqual(r.header("Stream-Up-To-Date"), "true")
            XCTAssertEqual(r.header("Stream-Next-Offset"), offset(all.count))
        }
    }

    /// Reading a whole answer by repeated long-polls from `-1`, on another instance than
    /// the one generating, while it is generated, yields exactly the SSE answer's events.
    func testRepeatedLongPollsReadTheWholeAnswerByteIdenticalToSSE() throws {
        let a = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "200"])
        let b = try startRelay()
        let token = RelayProcess.token()
        for model in ["simulated", "simulated-ar"] {
            let id = Chat.newID()
            let live = try Chat.start(port: a.port, token: token, requestID: id, model: model, maxTokens: 300)
            var bodies: [String] = []
            var next = "-1"
            var polls = 0
            while polls < 2_000 {
                polls += 1
                let r = try get(b, token, id, "offset=\(next)&live=long-poll", timeout: 30)
                XCTAssertTrue([200, 204].contains(r.status), "\(r.status) \(r.text)")
                next = try XCTUnwrap(r.header("Stream-Next-Offset"))
                if r.status == 200 { bodies.append(elements(r)) }
                if r.header("Stream-Closed") == "true" { break }
            }
            let sse = try live.readAll()
            XCTAssertEqual(bodies.filter { !$0.isEmpty }.joined(separator: ","), sse.map(\.data).joined(separator: ","), model)
            XCTAssertEqual(Chat.text(sse), referenceText(model: model, maxTokens: 300), model)
            XCTAssertEqual(next, offset(sse.count))
        }
    }

    /// A client that goes away while its long-poll waits frees the wait (its subscription
    /// and connection slot) at once, not at the timeout.
    func testAClientClosingAWaitingLongPollEndsTheWaitAtOnce() throws {
        let fake = try pausingUpstream(first: "Hello", pauseMs: 0, second: " world")
        defer { fake.stop() }
        let relay = try startRelay(openAIEnv(fake, ["RELAY_LONG_POLL_TIMEOUT": "600s"]))
        let token = RelayProcess.token()
        let id = Chat.newID()
        let live = try Chat.start(port: relay.port, token: token, requestID: id, model: "gpt-test")
        _ = try XCTUnwrap(try live.nextEvent())
        for _ in 0..<3 {
            let c = try RawConnection(port: relay.port)
            try c.send("GET /api/chat/stream/\(id)?offset=\(offset(1))&live=long-poll HTTP/1.1\r\nHost: x\r\n" +
                       "Authorization: Bearer \(token)\r\n\r\n")
            try eventually(10, "the poll waits") { try self.metric(relay, "relay_live_connections") == 2 }
            c.close()
            try eventually(10, "the wait ended with its client") { try self.metric(relay, "relay_live_connections") == 1 }
        }
        live.close()
    }

    /// An offset read behind the retained window gets the events read back from the text
    /// (docs/PROTOCOL.md §6.3), then the retained ones: every event as streamed, nothing twice.
    func testAnOffsetReadBehindTheRetainedWindowIsCaughtUpLosslessly() throws {
        let relay = try startRelay()
        let token = RelayProcess.token()
        let id = Chat.newID()
        let all = try Chat.start(port: relay.port, token: token, requestID: id, maxTokens: 400).readAll()
        XCTAssertEqual(all.count, 401)
        let firstKept = try XCTUnwrap(try storedSeqs(id).first)
        XCTAssertGreaterThan(firstKept, 2, "the window moved")
        let r = try get(relay, token, id, "offset=-1")
        XCTAssertEqual(r.status, 200)
        let items = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(r.body)) as? [[String: Any]])
        XCTAssertEqual(items.count, all.count, "every event, behind the window and in it")
        XCTAssertEqual(r.text, "[" + all.map(\.data).joined(separator: ",") + "]", "the events as streamed")
        let text = items.compactMap { $0["type"] as? String == "delta" ? $0["content"] as? String : nil }.joined()
        XCTAssertEqual(text, Chat.text(all))
        XCTAssertEqual(text, referenceText(maxTokens: 400))
        XCTAssertEqual(r.header("Stream-Closed"), "true")
        XCTAssertEqual(r.header("Stream-Next-Offset"), offset(all.count))
        let off = try HTTPClient.request(port: relay.port, method: "GET", path: "/api/chat/stream/\(id)?offset=-1",
                                         headers: [("Authorization", "Bearer \(token)")])
        XCTAssertEqual(off.status, 200)
    }

    /// A long-poll waits longer than `RELAY_REQUEST_TIMEOUT` (a limit on receiving the
    /// request, not on answering it) and is still answered by its own timeout.
    func testALongPollOutlastsTheRequestTimeout() throws {
        let fake = try pausingUpstream(first: "Hello", pauseMs: 0, second: " world")
        defer { fake.stop() }
        let relay = try startRelay(openAIEnv(fake, ["RELAY_REQUEST_TIMEOUT": "1s", "RELAY_LONG_POLL_TIMEOUT": "2500ms"]))
        let token = RelayProcess.token()
        let id = Chat.newID()
        let live = try Chat.start(port: relay.port, token: token, requestID: id, model: "gpt-test")
        _ = try XCTUnwrap(try live.nextEvent())
        let r = try get(relay, token, id, "offset=\(offset(1))&live=long-poll", timeout: 20)
        XCTAssertEqual(r.status, 204)
        XCTAssertEqual(r.header("Stream-Next-Offset"), offset(1))
        live.close()
    }

    /// DS SSE on another instance than the generating one: the events arrive live as
    /// `data` + `control` pairs, the last control closes the stream.
    func testDurableStreamsSSEModeFollowsALiveAnswerOnAnotherInstance() throws {
        let fake = try pausingUpstream(first: "Hello", pauseMs: 1000, second: " world")
        defer { fake.stop() }
        let a = try startRelay(openAIEnv(fake))
        let b = try startRelay()
        let token = RelayProcess.token()
        let id = Chat.newID()
        let live = try Chat.start(port: a.port, token: token, requestID: id, model: "gpt-test")
        let first = try XCTUnwrap(try live.nextEvent())
        let c = try SSEConnection(port: b.port, method: "GET", path: "/api/chat/stream/\(id)?offset=-1&live=sse",
                                  headers: [("Authorization", "Bearer \(token)")])
        XCTAssertEqual(c.status, 200)
        let messages = try c.readAll(timeout: 20)
        let sse = [first] + (try live.readAll())
        let data = messages.filter { $0.type == "data" }.map { String($0.data.dropFirst().dropLast()) }
        XCTAssertEqual(data.joined(separator: ","), sse.map(\.data).joined(separator: ","))
        XCTAssertGreaterThanOrEqual(data.count, 2, "the first event, then the live ones in later data events")
        XCTAssertEqual(messages.last?.type, "control")
        XCTAssertTrue(messages.last?.data.contains("\"streamClosed\":true") ?? false)
        for (i, m) in messages.enumerated() where m.type == "data" {
            XCTAssertEqual(messages[i + 1].type, "control", "every data event is followed by its control event")
        }
    }
}
