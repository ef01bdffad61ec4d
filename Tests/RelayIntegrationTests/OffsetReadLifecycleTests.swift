import Foundation
import RelayCore
import RelayTestSupport
import RelayTestKit
import XCTest

/// Offset reads (docs/PROTOCOL.md §12) as the rest of the relay meets them: HEAD, refusals,
/// the connection limit, tokens expiring and sessions revoked while a read waits, pipelining,
/// a killed generator, the drain, and the Durable Streams SSE framing and Python client.
final class OffsetReadLifecycleTests: OffsetReadTestCase {
    /// A waiting long-poll holds a slot of `RELAY_MAX_CONNECTIONS` like a stream, and gives
    /// it back when answered.
    func testAWaitingLongPollCountsAgainstTheConnectionLimit() throws {
        let fake = try pausingUpstream(first: "Hello", pauseMs: 0, second: " world")
        defer { fake.stop() }
        let a = try startRelay(openAIEnv(fake))
        let b = try startRelay(["RELAY_MAX_CONNECTIONS": "1", "RELAY_LONG_POLL_TIMEOUT": "1500ms"])
        let token = RelayProcess.token()
        let id = Chat.newID()
        let live = try Chat.start(port: a.port, token: token, requestID: id, model: "gpt-test")
        _ = try XCTUnwrap(try live.nextEvent())
        let poll = try SSEConnectionInBackground(port: b.port, path: "/api/chat/stream/\(id)?offset=\(offset(1))&live=long-poll", token: token)
        try eventually(10, "the poll waits") { try self.metric(b, "relay_live_connections") == 1 }
        let refused = try get(b, token, id, "offset=\(offset(1))&live=long-poll")
        XCTAssertEqual(refused.status, 503)
        XCTAssertEqual(refused.errorCode, "not_ready")
        XCTAssertTrue(["1", "2", "3"].contains(refused.header("Retry-After") ?? ""),
                      "Retry-After of 1–3 s (PROTOCOL.md §4.3), got \(refused.header("Retry-After") ?? "none")")
        XCTAssertEqual(try poll.result(timeout: 20).status, 204)
        try eventually(10, "the slot is free again") { try self.metric(b, "relay_live_connections") == 0 }
        XCTAssertEqual(try get(b, token, id, "offset=-1").status, 200)
        live.close()
    }

    /// `HEAD` of an offset read in any mode (RFC 9110 §9.3.2, docs/PROTOCOL.md §12) answers
    /// from the plan: the tail's `Stream-Next-Offset` at once, no subscription, no slot of
    /// `RELAY_MAX_CONNECTIONS` held, and a request pipelined behind it is answered at once.
    func testAHeadOfAnyOffsetReadModeAnswersAtOnceAndHoldsNoSlot() throws {
        let fake = try pausingUpstream(first: "Hello", pauseMs: 0, second: " world")
        defer { fake.stop() }
        let relay = try startRelay(openAIEnv(fake, ["RELAY_MAX_CONNECTIONS": "2", "RELAY_LONG_POLL_TIMEOUT": "600s"]))
        let token = RelayProcess.token()
        let id = Chat.newID()
        let live = try Chat.start(port: relay.port, token: token, requestID: id, model: "gpt-test")
        _ = try XCTUnwrap(try live.nextEvent())
        var pipelined = ""
        for q in ["offset=now&live=sse", "offset=now&live=long-poll", "offset=-1&live=sse", "offset=-1"] {
            pipelined += "HEAD /api/chat/stream/\(id)?\(q) HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\n\r\n"
        }
        let c = try RawConnection(port: relay.port)
        try c.send(pipelined + "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let text = String(decoding: c.readToEnd(timeout: 10), as: UTF8.self)
        c.close()
        let statuses = text.components(separatedBy: "\r\n").filter { $0.hasPrefix("HTTP/1.1 ") }
        XCTAssertEqual(statuses, [String](repeating: "HTTP/1.1 200 OK", count: 5), text)
        XCTAssertEqual(text.components(separatedBy: "Stream-Next-Offset: \(offset(1))").count - 1, 4, "each HEAD names the tail: \(text)")
        XCTAssertFalse(text.contains("Stream-Closed"), "the answer still runs")
        XCTAssertTrue(text.contains("Content-Type: text/event-stream"), "an SSE read's HEAD has the SSE type")
        // 40 HEADs of SSE reads on a 2-slot relay: every one answered, no slot held.
        for _ in 0..<40 {
            let h = try HTTPClient.request(port: relay.port, method: "HEAD", path: "/api/chat/stream/\(id)?offset=now&live=sse",
                                           headers: [("Authorization", "Bearer \(token)")])
            XCTAssertEqual(h.status, 200)
        }
        XCTAssertEqual(try metric(relay, "relay_live_connections"), 1, "only the live answer holds a slot")
        XCTAssertEqual(try get(relay, token, id, "offset=-1").status, 200, "a real reader is served")
        live.close()
    }

    func testOffsetReadRefusals() throws {
        let relay = try startRelay(["RELAY_ADMIN_KEY": Self.adminKey])
        let sid = "s-" + UUID().uuidString
        let token = RelayProcess.token(sid: sid)
        let id = Chat.newID()
        _ = try Chat.start(port: relay.port, token: token, requestID: id, maxTokens: 3).readAll()
        let bob = RelayProcess.token(sub: "bob")
        let other = try get(relay, bob, id, "offset=-1")
        XCTAssertEqual(other.status, 404)
        XCTAssertEqual(other.errorCode, "stream_not_found")
        XCTAssertEqual(try get(relay, bob, id, "offset=-1&live=long-poll").status, 404)
        for bad in ["offset=", "offset=abc", "offset=-2", "offset=123456789012345678901", "offset=99", "offset=-1&live=auto",
                    "offset=-1&live="] {
            let r = try get(relay, token, id, bad)
            XCTAssertEqual(r.status, 400, bad)
            XCTAssertEqual(r.errorCode, "invalid_offset", bad)
            XCTAssertEqual(r.header("Content-Type"), "application/json", bad)
        }
        for method in ["PUT", "POST"] {
            let r = try HTTPClient.request(port: relay.port, method: method, path: "/api/chat/stream/\(id)?offset=-1",
                                           headers: [("Authorization", "Bearer \(token)")])
            XCTAssertEqual(r.status, 405, method)
            XCTAssertEqual(r.errorCode, "method_not_allowed", method)
        }
        XCTAssertEqual(try get(relay, "not-a-token", id, "offset=-1").status, 401)
        XCTAssertEqual(try HTTPClient.request(port: relay.port, method: "POST", path: "/admin/sessions/\(sid)/revoke",
                                              headers: [("Authorization", "Bearer \(Self.adminKey)")]).status, 202)
        for q in ["offset=-1", "offset=now&live=long-poll", "offset=-1&live=sse"] {
            let r = try get(relay, token, id, q)
            XCTAssertEqual(r.status, 401, q)
            XCTAssertEqual(r.errorCode, "unauthorized", q)
        }
    }

    /// Hostile query strings: a repeated `offset` or `live` (which one a proxy or cache
    /// acts on is anyone's guess) and a percent-encoded NUL after a valid value are
    /// `400 invalid_offset`, not the first value or the text before the NUL; `%30` is the
    /// digit 0, signs and non-ASCII digits are refused, `live` is case-sensitive, and
    /// `offset` wins over a `Last-Event-ID` sent with it (docs/PROTOCOL.md §12.1).
    func testRepeatedParametersAndEncodedNULsInAnOffsetReadAreRefused() throws {
        let relay = try startRelay()
        let token = RelayProcess.token()
        let id = Chat.newID()
        let all = try Chat.start(port: relay.port, token: token, requestID: id, maxTokens: 5).readAll()
        XCTAssertEqual(all.count, 6)
        for bad in ["offset=1&offset=5", "offset=-1&offset", "offset=now%00x", "offset=-1%00zz", "offset=3%00",
                    "offset=-1&live=sse%00x", "offset=-1&live=long-poll&live=sse", "offset=-1&live=sse&live=sse",
                    "offset=%2B1", "offset=+1", "offset=%EF%BC%91", "offset=%D9%A1", "offset=-0", "offset=-1&live=LONG-POLL",
                    "offset=000000000000000000005"] {
            let r = try get(relay, token, id, bad)
            XCTAssertEqual(r.status, 400, bad)
            XCTAssertEqual(r.errorCode, "invalid_offset", bad)
        }
        let zero = try get(relay, token, id, "offset=%30")
        XCTAssertEqual(zero.status, 200)
        XCTAssertEqual(elements(zero), all.map(\.data).joined(separator: ","), "%30 is offset 0: the whole answer")
        let both = try HTTPClient.request(port: relay.port, method: "GET", path: "/api/chat/stream/\(id)?offset=4&lastEventId=1",
                                          headers: [("Authorization", "Bearer \(token)"), ("Last-Event-ID", "2")])
        XCTAssertEqual(both.status, 200)
        XCTAssertEqual(elements(both), all[4...].map(\.data).joined(separator: ","), "offset selects the offset read")
        // The SSE resume's `?lastEventId=` is decoded the same way: a NUL does not end it.
        let resume = try HTTPClient.request(port: relay.port, method: "GET", path: "/api/chat/stream/\(id)?lastEventId=3%00x",
                                            headers: [("Authorization", "Bearer \(token)")])
        XCTAssertEqual(resume.status, 400)
        XCTAssertEqual(resume.errorCode, "invalid_last_event_id")
    }

    /// A token that expires while its long-poll waits: the wait ends `401` (the read is
    /// cut like a stream, docs/PROTOCOL.md §12.1, §2.3), not at the long-poll timeout.
    func testAWaitingLongPollWhoseTokenExpiresAnswers401() throws {
        let fake = try pausingUpstream(first: "Hello", pauseMs: 0, second: " world")
        defer { fake.stop() }
        let relay = try startRelay(openAIEnv(fake, ["RELAY_LONG_POLL_TIMEOUT": "120s", "RELAY_JWT_LEEWAY": "0"]))
        let id = Chat.newID()
        let live = try Chat.start(port: relay.port, token: RelayProcess.token(), requestID: id, model: "gpt-test")
        _ = try XCTUnwrap(try live.nextEvent())
        let poll = try SSEConnectionInBackground(port: relay.port, path: "/api/chat/stream/\(id)?offset=\(offset(1))&live=long-poll",
                                                 token: RelayProcess.token(ttl: 2))
        let r = try poll.result(timeout: 40)
        XCTAssertEqual(r.status, 401, r.text)
        XCTAssertEqual(r.errorCode, "unauthorized")
        try eventually(10, "the wait's slot is freed") { try self.metric(relay, "relay_live_connections") == 1 }
        live.close()
    }

    /// A long-poll sent with a token past its `exp` but within `RELAY_JWT_LEEWAY` (accepted,
    /// as on a stream, docs/PROTOCOL.md §2.3) and woken by an event within the leeway gets
    /// the event, not a 401: the wait judges expiry with the leeway, as the stream cut does.
    func testALongPollWokenWithinTheTokenLeewayGetsTheEvent() throws {
        let fake = try pausingUpstream(first: "Hello", pauseMs: 5000, second: " world")
        defer { fake.stop() }
        let relay = try startRelay(openAIEnv(fake, ["RELAY_LONG_POLL_TIMEOUT": "60s", "RELAY_JWT_LEEWAY": "60s"]))
        let id = Chat.newID()
        let live = try Chat.start(port: relay.port, token: RelayProcess.token(), requestID: id, model: "gpt-test")
        _ = try XCTUnwrap(try live.nextEvent())
        let short = RelayProcess.token(ttl: 1)
        Thread.sleep(forTimeInterval: 2.2)   // the token's exp (whole seconds) has passed; within the leeway
        let r = try get(relay, short, id, "offset=\(offset(1))&live=long-poll", timeout: 30)
        XCTAssertEqual(r.status, 200, r.text)
        XCTAssertTrue(r.text.contains("world"), r.text)
        live.close()
    }

    /// Requests pipelined behind a waiting long-poll on one connection are answered after
    /// it, in order (RFC 9112 §9.3.2); the client closing the connection still ends the wait.
    func testRequestsPipelinedBehindALongPollAreAnsweredInOrder() throws {
        let fake = try pausingUpstream(first: "Hello", pauseMs: 0, second: " world")
        defer { fake.stop() }
        let relay = try startRelay(openAIEnv(fake, ["RELAY_LONG_POLL_TIMEOUT": "1s"]))
        let token = RelayProcess.token()
        let id = Chat.newID()
        let live = try Chat.start(port: relay.port, token: token, requestID: id, model: "gpt-test")
        _ = try XCTUnwrap(try live.nextEvent())
        let poll = "GET /api/chat/stream/\(id)?offset=now&live=long-poll HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\n\r\n"
        let c = try RawConnection(port: relay.port)
        try c.send(poll + poll + "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let text = String(decoding: c.readToEnd(timeout: 20), as: UTF8.self)
        let statuses = text.components(separatedBy: "\r\n").filter { $0.hasPrefix("HTTP/1.1 ") }
        XCTAssertEqual(statuses, ["HTTP/1.1 204 No Content", "HTTP/1.1 204 No Content", "HTTP/1.1 200 OK"], text)
        c.close()
        let relay2 = try startRelay(openAIEnv(fake, ["RELAY_LONG_POLL_TIMEOUT": "600s"]))
        let d = try RawConnection(port: relay2.port)
        try d.send(poll + "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        try eventually(10, "the poll waits") { try self.metric(relay2, "relay_live_connections") == 1 }
        d.close()
        try eventually(10, "the wait ended with its client") { try self.metric(relay2, "relay_live_connections") == 0 }
        live.close()
    }

    /// The instance generating the answer is killed (SIGKILL) while a long-poll and a DS
    /// SSE read wait on another: both get the `upstream_lost` error event that ends the
    /// answer once its owner's lease lapses (docs/PROTOCOL.md §5.4), with `Stream-Closed`.
    func testReadsWaitingOnAnotherInstanceEndWithUpstreamLostWhenTheGeneratorIsKilled() throws {
        let fake = try pausingUpstream(first: "Hello", pauseMs: 0, second: " world")
        defer { fake.stop() }
        let a = try startRelay(openAIEnv(fake))
        let b = try startRelay(["RELAY_LONG_POLL_TIMEOUT": "120s", "RELAY_MAX_CONTINUATIONS": "0"])
        let token = RelayProcess.token()
        let id = Chat.newID()
        let live = try Chat.start(port: a.port, token: token, requestID: id, model: "gpt-test")
        _ = try XCTUnwrap(try live.nextEvent())
        let poll = try SSEConnectionInBackground(port: b.port, path: "/api/chat/stream/\(id)?offset=\(offset(1))&live=long-poll", token: token)
        let sse = try SSEConnectionInBackground(port: b.port, path: "/api/chat/stream/\(id)?offset=-1&live=sse", token: token)
        try eventually(10, "both wait") { try self.metric(b, "relay_live_connections") == 2 }
        a.kill9()
        let r = try poll.result(timeout: 40)
        XCTAssertEqual(r.status, 200, r.text)
        XCTAssertTrue(r.text.contains("\"code\":\"upstream_lost\""), r.text)
        XCTAssertEqual(r.header("Stream-Closed"), "true")
        XCTAssertEqual(r.header("Stream-Next-Offset"), offset(2))
        let s = try sse.result(timeout: 40)
        XCTAssertTrue(s.text.contains("\"code\":\"upstream_lost\""), s.text)
        XCTAssertTrue(s.text.contains("\"streamClosed\":true"), s.text)
        live.close()
    }

    func testAWaitingLongPollOfARevokedSessionAnswers401() throws {
        let fake = try pausingUpstream(first: "Hello", pauseMs: 0, second: " world")
        defer { fake.stop() }
        let a = try startRelay(openAIEnv(fake, ["RELAY_ADMIN_KEY": Self.adminKey]))
        let b = try startRelay(["RELAY_ADMIN_KEY": Self.adminKey, "RELAY_LONG_POLL_TIMEOUT": "60s"])
        let sid = "s-" + UUID().uuidString
        let token = RelayProcess.token(sid: sid)
        let id = Chat.newID()
        let live = try Chat.start(port: a.port, token: token, requestID: id, model: "gpt-test")
        _ = try XCTUnwrap(try live.nextEvent())
        let poll = try SSEConnectionInBackground(port: b.port, path: "/api/chat/stream/\(id)?offset=\(offset(1))&live=long-poll", token: token)
        try eventually(10, "the poll waits") { try self.metric(b, "relay_live_connections") == 1 }
        XCTAssertEqual(try HTTPClient.request(port: a.port, method: "POST", path: "/admin/sessions/\(sid)/revoke",
                                              headers: [("Authorization", "Bearer \(Self.adminKey)")]).status, 202)
        let r = try poll.result(timeout: 20)
        XCTAssertEqual(r.status, 401, r.text)
        live.close()
    }

    func testDrainAnswersAWaitingLongPoll204AtOnce() throws {
        let fake = try pausingUpstream(first: "Hello", pauseMs: 0, second: " world")
        defer { fake.stop() }
        let a = try startRelay(openAIEnv(fake))
        let b = try startRelay(["RELAY_LONG_POLL_TIMEOUT": "60s"])
        let token = RelayProcess.token()
        let id = Chat.newID()
        let live = try Chat.start(port: a.port, token: token, requestID: id, model: "gpt-test")
        _ = try XCTUnwrap(try live.nextEvent())
        let poll = try SSEConnectionInBackground(port: b.port, path: "/api/chat/stream/\(id)?offset=\(offset(1))&live=long-poll", token: token)
        try eventually(10, "the poll waits") { try self.metric(b, "relay_live_connections") == 1 }
        DispatchQueue.global().async { _ = b.terminate() }
        let r = try poll.result(timeout: 20)
        XCTAssertEqual(r.status, 204)
        XCTAssertEqual(r.header("Stream-Next-Offset"), offset(1))
        XCTAssertNil(r.header("Stream-Closed"))
        live.close()
    }

    func testDurableStreamsSSEModeCarriesDataAndControlEvents() throws {
        let relay = try startRelay()
        let token = RelayProcess.token()
        let id = Chat.newID()
        let all = try Chat.start(port: relay.port, token: token, requestID: id, maxTokens: 10).readAll()
        let c = try SSEConnection(port: relay.port, method: "GET", path: "/api/chat/stream/\(id)?offset=\(offset(4))&live=sse",
                                  headers: [("Authorization", "Bearer \(token)")])
        XCTAssertEqual(c.status, 200)
        let messages = try c.readAll()
        XCTAssertEqual(messages.map(\.type), ["data", "control"])
        XCTAssertEqual(messages.first?.data, "[" + all[4...].map(\.data).joined(separator: ",") + "]")
        XCTAssertEqual(messages.last?.data, "{\"streamNextOffset\":\"\(offset(all.count))\",\"upToDate\":true,\"streamClosed\":true}")
        let atEnd = try SSEConnection(port: relay.port, method: "GET", path: "/api/chat/stream/\(id)?offset=now&live=sse",
                                      headers: [("Authorization", "Bearer \(token)")]).readAll()
        XCTAssertEqual(atEnd.map(\.type), ["control"])
    }

    /// The Durable Streams Python client (`durable-streams` on PyPI) reads a whole answer
    /// given its URL and the bearer token: live (its `auto` mode: a catch-up, then
    /// long-polls), while the answer is generated, and once ended in one catch-up
    /// (`live=False`). Its 0.1.0 release does not read `Stream-Closed`, so the live reader
    /// stops at the relay's terminal event (`done`/`error`, docs/PROTOCOL.md §5).
    func testDurableStreamsPythonClientReadsTheWholeAnswer() throws {
        let python = try Self.pythonWithDurableStreams()
        let relay = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "300"])
        let token = RelayProcess.token()
        let id = Chat.newID()
        let live = try Chat.start(port: relay.port, token: token, requestID: id, model: "simulated-ar", maxTokens: 150)
        let first = try XCTUnwrap(try live.nextEvent())
        let script = """
        import json, sys
        from durable_streams import stream
        url, token, mode = sys.argv[1], sys.argv[2], sys.argv[3]
        out = []
        with stream(url, offset="-1", live=(False if mode == "catch-up" else "auto"),
                    headers={"Authorization": "Bearer " + token}) as res:
            for item in res.iter_json():
                out.append(item)
                if item.get("type") in ("done", "error"):
                    break
        json.dump(out, sys.stdout)
        """
        let url = "http://127.0.0.1:\(relay.port)/api/chat/stream/\(id)"
        var sse: [SSEMessage]?
        for mode in ["live", "catch-up"] {
            let run = try ToolProcess.run(python, ["-c", script, url, token, mode], timeout: 60)
            XCTAssertEqual(run.status, 0, run.stderr)
            let items = try XCTUnwrap(try JSONSerialization.jsonObject(with: run.stdoutData) as? [[String: Any]], mode)
            if sse == nil { sse = [first] + (try live.readAll()) }
            let expected = try sse!.map { try XCTUnwrap(try JSONSerialization.jsonObject(with: Data($0.data.utf8)) as? NSDictionary) }
            XCTAssertEqual(items.map { $0 as NSDictionary }, expected, "\(mode): every event, as the SSE answer carries it")
            let text = items.compactMap { $0["type"] as? String == "delta" ? $0["content"] as? String : nil }.joined()
            XCTAssertEqual(text, referenceText(model: "simulated-ar", maxTokens: 150), mode)
            XCTAssertEqual(items.last?["type"] as? String, "done", mode)
        }
    }

    /// A `python3` that imports `durable_streams` (`pip install durable-streams`).
    static func pythonWithDurableStreams() throws -> String {
        var candidates = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map { "\($0)/python3" }
        candidates += ["/root/.pyenv/shims/python3", "/usr/local/bin/python3", "/usr/bin/python3"]
        if let root = try? FileManager.default.contentsOfDirectory(atPath: "/root/.pyenv/versions") {
            candidates += root.map { "/root/.pyenv/versions/\($0)/bin/python3" }
        }
        for p in candidates where FileManager.default.isExecutableFile(atPath: p) {
            if let r = try? ToolProcess.run(p, ["-c", "import durable_streams"], timeout: 20), r.status == 0 { return p }
        }
        throw TestFailure("no python3 with durable_streams (pip install durable-streams)")
    }
}
