import Foundation
import RelayAuth
import RelayBudgets
import RelayCore
import RelayTestKit
import RelayTestSupport
import XCTest

/// An HTTP upstream at the relay level (docs/UPSTREAMS.md): a real OpenAI-compatible
/// upstream (the fake server),
/// Stop from any instance, an owner that dies, and memory over many cancels.
final class UpstreamRelayTests: RelayTestCase {
    /// One OpenAI-style chunk carrying `text` (JSON-escaped).
    static func openAIChunk(_ text: String) -> [UInt8] {
        Array("data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\(JSONText.quoted(text))},\"finish_reason\":null}]}\n\n".utf8)
    }

    /// A fake OpenAI-compatible upstream that answers every chat completion with `text` in one
    /// chunk, then `[DONE]`; it records each request (`FakeUpstreamServer.requests`).
    static func fakeOpenAI(replying text: String) throws -> FakeUpstreamServer {
        let fake = try FakeUpstreamServer(routes: [:])
        fake.setResponder("/v1/chat/completions") { _ in
            .init([.head(status: 200, contentType: "text/event-stream"),
                   .send(openAIChunk(text) + Array("data: [DONE]\n\n".utf8))])
        }
        return fake
    }

    static let pieces = ["Clause", " 1", " — Defini", "tions", " مرحبا", " 👋🏽", "\n\n"]

    static func normalStream() -> FakeUpstreamServer.Script {
        var steps: [FakeUpstreamServer.Step] = [.head(status: 200, contentType: "text/event-stream")]
        for p in pieces { steps.append(.send(openAIChunk(p))) }
        steps.append(.send(Array("data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n".utf8)))
        steps.append(.send(Array("data: {\"id\":\"c1\",\"choices\":[],\"usage\":{\"prompt_tokens\":11,\"completion_tokens\":7,\"total_tokens\":18}}\n\n".utf8)))
        steps.append(.send(Array("data: [DONE]\n\n".utf8)))
        return .init(steps)
    }

    func openAIRelay(_ fake: FakeUpstreamServer, _ env: [String: String] = [:]) throws -> RelayProcess {
        var e = ["RELAY_UPSTREAM": "openai", "UPSTREAM_URL": fake.baseURL, "UPSTREAM_API_KEY": "sk-test", "UPSTREAM_MODEL": "gpt-test"]
        for (k, v) in env { e[k] = v }
        return try startRelay(e)
    }

    func testOpenAICompatibleUpstreamThroughTheRelay() throws {
        let fake = try FakeUpstreamServer(routes: ["/v1/chat/completions": Self.normalStream()])
        defer { fake.stop() }
        let relay = try openAIRelay(fake)
        let events = try Chat.start(port: relay.port, token: RelayProcess.token(), model: "gpt-test").readAll()
        XCTAssertEqual(Chat.text(events), Self.pieces.joined())
        assertSequence(events)
        guard case .done("stop", let usage, _)? = try? StreamEvent(json: events.last!.data) else { return XCTFail("done") }
        XCTAssertEqual(usage.totalTokens, 18)
        let req = try XCTUnwrap(fake.requests.first)
        XCTAssertEqual(req.headers["authorization"], "Bearer sk-test")
        XCTAssertEqual(req.json["stream"] as? Bool, true)
    }

    /// Upstream text repairs (docs/UPSTREAMS.md): a split emoji is joined, an unpaired half
    /// and a chunk of an
    /// unknown shape are counted in `/metrics` and the answer still ends with `done`.
    func testUpstreamTextRepairsAreCountedInMetrics() throws {
        var steps: [FakeUpstreamServer.Step] = [.head(status: 200, contentType: "text/event-stream")]
        func raw(_ delta: String) -> [UInt8] {
            Array("data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\(delta)\"},\"finish_reason\":null}]}\n\n".utf8)
        }
        steps.append(.send(raw("a \\ud83d")))
        steps.append(.send(raw("\\ude00 b")))
        steps.append(.send(Array("data: {\"choices\":[7]}\n\n".utf8)))
        steps.append(.send(raw(" \\udc00 c")))
        steps.append(.send(Array("data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n".utf8)))
        steps.append(.send(Array("data: [DONE]\n\n".utf8)))
        let fake = try FakeUpstreamServer(routes: ["/v1/chat/completions": .init(steps)])
        defer { fake.stop() }
        let relay = try openAIRelay(fake)
        let events = try Chat.start(port: relay.port, token: RelayProcess.token(), model: "gpt-test").readAll()
        XCTAssertEqual(Chat.text(events), "a 😀 b \u{FFFD} c")
        guard case .done("stop", _, _)? = try? StreamEvent(json: events.last!.data) else { return XCTFail("done") }
        XCTAssertEqual(try metric(relay, "relay_upstream_chunks_skipped_total"), 1)
        XCTAssertEqual(try metric(relay, "relay_upstream_unpaired_surrogates_total"), 1)
        let text = try HTTPClient.request(port: relay.port, method: "GET", path: "/metrics").text
        XCTAssertTrue(text.contains("# HELP relay_upstream_chunks_skipped_total "))
        XCTAssertTrue(text.contains("# HELP relay_upstream_unpaired_surrogates_total "))
    }

    /// One 300,000-byte delta followed at once by more events reaches a
    /// client that reads at full speed (RELAY_MAX_PENDING_BYTES 256 KiB), complete with `done`.
    func testEventLargerThanThePendingLimitReachesAFastReader() throws {
        let big = String(repeating: "Large clause text. ", count: 300_000 / 19 + 1)
        var steps: [FakeUpstreamServer.Step] = [.head(status: 200, contentType: "text/event-stream")]
        var chunk = Self.openAIChunk(big)
        for i in 0..<20 { chunk += Self.openAIChunk(" tail \(i)") }
        steps.append(.send(chunk))
        steps.append(.send(Array("data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n".utf8)))
        let fake = try FakeUpstreamServer(routes: ["/v1/chat/completions": .init(steps)])
        defer { fake.stop() }
        let relay = try openAIRelay(fake, ["RELAY_MAX_PENDING_BYTES": "262144"])
        let events = try Chat.start(port: relay.port, token: RelayProcess.token(), model: "gpt-test").readAll(timeout: 30)
        assertSequence(events)
        XCTAssertEqual(Chat.text(events), big + (0..<20).map { " tail \($0)" }.joined())
        guard case .done("stop", _, _)? = try? StreamEvent(json: events.last!.data) else { return XCTFail("ends with done") }
        XCTAssertEqual(try metric(relay, "relay_slow_consumer_disconnects_total"), 0)
    }

    func testUpstreamFailureEndsTheStreamWithOneErrorEvent() throws {
        let fake = try FakeUpstreamServer(routes: ["/v1/chat/completions": .init([
            .head(status: 429, contentType: "application/json", chunked: false),
            .send(Array("{\"error\":{\"message\":\"Rate limit reached\",\"type\":\"requests\",\"code\":\"rate_limit_exceeded\"}}".utf8)),
        ])])
        defer { fake.stop() }
        let relay = try openAIRelay(fake)
        let id = Chat.newID()
        let events = try Chat.start(port: relay.port, token: RelayProcess.token(), requestID: id, model: "gpt-test").readAll()
        XCTAssertEqual(events.count, 1)
        guard case .error(502, "upstream_error", let message)? = try? StreamEvent(json: events[0].data) else {
            return XCTFail("one 502 upstream_error event, got \(events.map(\.data))")
        }
        XCTAssertTrue(message.contains("429"), message)
        XCTAssertEqual(try redis.cli("HGET", streamKey(id, "meta"), "state"), "failed")
        XCTAssertEqual(try metric(relay, "relay_upstream_errors_total"), 1, "the upstream error is counted")
    }

    func testDeleteOnAnotherInstanceClosesTheUpstreamConnection() throws {
        var steps: [FakeUpstreamServer.Step] = [.head(status: 200, contentType: "text/event-stream")]
        for p in Self.pieces { steps.append(.send(Self.openAIChunk(p))) }
        steps.append(.holdOpen)
        let fake = try FakeUpstreamServer(routes: ["/v1/chat/completions": .init(steps)])
        defer { fake.stop() }
        let a = try openAIRelay(fake)
        let b = try openAIRelay(fake)
        var timings: [Double] = []
        for _ in 0..<5 {
            let token = RelayProcess.token()
            let id = Chat.newID()
            let c = try Chat.start(port: a.port, token: token, requestID: id, model: "gpt-test")
            for _ in Self.pieces { _ = try XCTUnwrap(try c.nextEvent()) }
            let closesBefore = fake.closes.count
            let t0 = DispatchTime.now().uptimeNanoseconds
            let del = try HTTPClient.request(port: b.port, method: "DELETE", path: "/api/chat/stream/\(id)",
                                             headers: [("Authorization", "Bearer \(token)")])
            XCTAssertEqual(del.status, 202)
            let closes = fake.waitForCloses(closesBefore + 1, timeout: 5)
            XCTAssertGreaterThan(closes.count, closesBefore, "the owner closed its upstream connection")
            if let close = closes.last { timings.append(Double(close.atNanos - t0) / 1e6) }
            let rest = try c.readAll(timeout: 5)
            guard case .done("cancelled", let usage, _)? = try? StreamEvent(json: rest.last?.data ?? "") else {
                return XCTFail("ends with done cancelled, got \(rest.map(\.data))")
            }
            XCTAssertGreaterThanOrEqual(usage.completionTokens, Self.pieces.count)
            XCTAssertEqual(try redis.cli("HGET", streamKey(id, "meta"), "state"), "cancelled")
            let again = try HTTPClient.request(port: b.port, method: "DELETE", path: "/api/chat/stream/\(id)",
                                               headers: [("Authorization", "Bearer \(token)")])
            XCTAssertEqual(again.status, 202, "a second DELETE changes nothing")
            XCTAssertEqual(try redis.cli("HGET", streamKey(id, "meta"), "state"), "cancelled")
        }
        timings.sort()
        print(String(format: "DELETE on relay B → upstream connection closed by relay A: median %.1f ms, max %.1f ms (%d tries)",
                     timings[timings.count / 2], timings.last ?? 0, timings.count))
    }

    func testADeleteBeforeItsPostEndsTheStreamWithoutCallingTheUpstreamOrCharging() throws {
        let fake = try FakeUpstreamServer(routes: ["/v1/chat/completions": Self.normalStream()])
        defer { fake.stop() }
        let a = try openAIRelay(fake)
        let b = try openAIRelay(fake)
        let sub = "early-stopper-\(UUID().uuidString.prefix(6))"
        let token = RelayProcess.token(sub: sub)
        let id = Chat.newID()
        let del = try HTTPClient.request(port: b.port, method: "DELETE", path: "/api/chat/stream/\(id)",
                                         headers: [("Authorization", "Bearer \(token)")])
        XCTAssertEqual(del.status, 202)
        XCTAssertEqual(del.text, "{\"requestId\":\"\(id)\",\"state\":\"pending\"}")
        XCTAssertEqual(try redis.cli("PTTL", streamKey(id, "cancel", sub: sub)).count > 0, true)
        let events = try Chat.start(port: a.port, token: token, requestID: id, model: "gpt-test").readAll()
        XCTAssertEqual(events.map(\.data), ["{\"type\":\"done\",\"finish_reason\":\"cancelled\",\"usage\":{\"prompt_tokens\":0,\"completion_tokens\":0,\"total_tokens\":0}}"])
        XCTAssertEqual(try redis.cli("HGET", streamKey(id, "meta", sub: sub), "state"), "cancelled")
        XCTAssertEqual(fake.requests.count, 0, "no upstream call")
        let budget = "relay:budget:{u:\(OwnerHash.of(sub))}:\(BudgetPolicy.period(now: Int64(Date().timeIntervalSince1970)))"
        try eventually(5, "the reservation settled") { try redis.cli("HGET", budget, "s:\(OwnerHash.of(sub)):\(id)") == "0" }
        XCTAssertEqual(try redis.cli("HGET", budget, "used"), "0")
        XCTAssertEqual(try redis.cli("HGET", budget, "reserved"), "0")
        XCTAssertEqual(try metric(a, "relay_cancels_total"), 1)
        XCTAssertEqual(try metric(b, "relay_cancels_pending_total"), 1)
        // A retry of the POST resumes the cancelled stream; it never generates.
        let again = try Chat.start(port: b.port, token: token, requestID: id, model: "gpt-test").readAll()
        XCTAssertEqual(again.map(\.data), events.map(\.data))
        XCTAssertEqual(fake.requests.count, 0)
    }

    func testDeleteErrors() throws {
        let relay = try startRelay()
        let token = RelayProcess.token()
        let auth = ("Authorization", "Bearer \(token)")
        XCTAssertEqual(try HTTPClient.request(port: relay.port, method: "DELETE", path: "/api/chat/stream/bad!id", headers: [auth]).status, 400)
        let early = try HTTPClient.request(port: relay.port, method: "DELETE", path: "/api/chat/stream/\(Chat.newID())", headers: [auth])
        XCTAssertEqual(early.status, 202, "a DELETE before its stream is remembered (docs/PROTOCOL.md §7)")
        XCTAssertTrue(early.text.contains("\"state\":\"pending\""), early.text)
        let id = Chat.newID()
        _ = try Chat.start(port: relay.port, token: token, requestID: id, maxTokens: 3).readAll()
        XCTAssertEqual(try HTTPClient.request(port: relay.port, method: "DELETE", path: "/api/chat/stream/\(id)", headers: [auth]).status, 202,
                       "DELETE of a finished stream is 202")
        XCTAssertEqual(try redis.cli("HGET", streamKey(id, "meta"), "state"), "done")
    }

    /// Takeovers off (`RELAY_MAX_CONTINUATIONS=0`; with them on: `TakeoverTests`).
    func testKilledOwnerEndsWithUpstreamLostForAResumedClient() throws {
        let a = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "30", "RELAY_MAX_CONTINUATIONS": "0"])
        let b = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "30", "RELAY_MAX_CONTINUATIONS": "0"])
        let token = RelayProcess.token()
        let id = Chat.newID()
        let c = try Chat.start(port: a.port, token: token, requestID: id, maxTokens: 500)
        var events: [SSEMessage] = []
        for _ in 0..<5 { events.append(try XCTUnwrap(try c.nextEvent())) }
        a.kill9()
        let t0 = Date()
        let resumed = try Chat.resume(port: b.port, token: token, requestID: id, lastEventID: events.last!.lastEventId)
        let rest = try resumed.readAll(timeout: 10)
        let elapsed = Date().timeIntervalSince(t0)
        guard case .error(503, "upstream_lost", _)? = try? StreamEvent(json: rest.last?.data ?? "") else {
            return XCTFail("ends with upstream_lost, got \(rest.suffix(2).map(\.data))")
        }
        // The lease is 5 s; 2 s of margin for a loaded 2-core machine.
        XCTAssertLessThan(elapsed, 7, "seen within the 5 s lease of the owner's death")
        assertSequence(events + rest)
        XCTAssertEqual(try redis.cli("HGET", streamKey(id, "meta"), "state"), "failed")
        print(String(format: "owner SIGKILL → upstream_lost on the other relay after %.2f s", elapsed))
    }

    func testMemoryDoesNotGrowOverAThousandCancelledGenerations() throws {
        let relay = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "100", "RELAY_WORKERS": "1"])
        func cycle(_ n: Int) throws {
            for _ in 0..<n {
                let token = RelayProcess.token()
                let id = Chat.newID()
                let c = try Chat.start(port: relay.port, token: token, requestID: id, maxTokens: 1000)
                _ = try c.nextEvent()
                let del = try HTTPClient.request(port: relay.port, method: "DELETE", path: "/api/chat/stream/\(id)",
                                                 headers: [("Authorization", "Bearer \(token)")])
                XCTAssertEqual(del.status, 202)
                _ = try c.readAll(timeout: 5)
            }
        }
        try cycle(200)  // warm-up: allocator pools, caches
        let before = try ProcStatus.rssKiB(relay.process.processIdentifier)
        try cycle(1000)
        let after = try ProcStatus.rssKiB(relay.process.processIdentifier)
        print("relay RSS over 1,000 cancelled generations: \(before / 1024) MiB → \(after / 1024) MiB")
        XCTAssertLessThan(after - before, 16 * 1024, "RSS grew by \(after - before) KiB")
        XCTAssertTrue(relay.log.contains("\"outcome\":\"done\""), "streams ended normally")
    }
}
