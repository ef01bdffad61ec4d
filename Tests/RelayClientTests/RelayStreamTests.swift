import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RelayTestKit
import XCTest
import RelayCore
@testable import RelayClient

/// `RelayStream` over a scripted relay (`MockURLProtocol`): the networking layer's
/// use of `ReconnectPolicy` and `ResponseRenderer`.
final class RelayStreamTests: XCTestCase {
    let urls = [URL(string: "http://relay-a.test")!, URL(string: "http://relay-b.test")!]
    let words = (1...40).map { "word\($0) " }
    var deltas: [StreamEvent] { words.map { .delta($0) } }
    let done = StreamEvent.done(finishReason: "stop", usage: Usage(promptTokens: 5, completionTokens: 40))
    let request = ChatRequest(messages: [ChatMessage(role: "user", content: "hi")])

    func client(_ relay: MockRelay, clock: VirtualClock, tokens: LockedBox<Int> = LockedBox(0),
                telemetry: LockedBox<[TelemetryRecord]> = LockedBox([]), random: Double = 0,
                reasons: LockedBox<[RelayChatClient.TokenReason]> = LockedBox([])) -> RelayChatClient {
        RelayChatClient(baseURLs: urls, tokenProvider: { why in
                            reasons.mutate { $0.append(why) }
                            return tokens.mutate { $0 += 1; return "tok\($0)" }
                        }, clock: clock,
                        telemetry: { r in telemetry.mutate { $0.append(r) } },
                        transport: URLSessionTransport(configuration: relay.configuration), random: { random })
    }

    func testWholeStreamInOddChunks() async throws {
        let relay = MockRelay()
        let text = "retry: 1000\n\n: ping\n\n" + MockRelay.frames(deltas + [done])
        relay.answer { _, _ in .init(chunks: MockRelay.chunks(text, size: 7)) }
        let clock = VirtualClock()
        let tele = LockedBox<[TelemetryRecord]>([])
        let c = client(relay, clock: clock, telemetry: tele)
        let id = try RequestID(validating: "abcdefghijklmnop")
        let updates = await withRunningClock(clock) { await collect(c.startChat(request, options: .init(requestId: id))) }
        XCTAssertEqual(updates.finalText, words.joined())
        XCTAssertEqual(updates.completion, .finished(finishReason: "stop"))
        XCTAssertEqual(updates.telemetry?.tokensReceived, 40)
        XCTAssertEqual(updates.telemetry?.reconnections, 0)
        XCTAssertEqual(updates.telemetry?.requestId, "abcdefghijklmnop")
        XCTAssertEqual(tele.value, [updates.telemetry!])
        let r = relay.requests
        XCTAssertEqual(r.count, 1)
        XCTAssertEqual(r[0].method, "POST")
        XCTAssertEqual(r[0].url.absoluteString, "http://relay-a.test/api/chat/stream")
        XCTAssertEqual(r[0].header("Authorization"), "Bearer tok1")
        XCTAssertEqual(r[0].header("X-Request-Id"), "abcdefghijklmnop")
        XCTAssertEqual(r[0].body, request.jsonBody)
    }

    func testDropResumesWithLastEventIDOnTheNextURLWithAFreshToken() async {
        let relay = MockRelay()
        let all = deltas + [done]
        relay.answer { req, n in
            if n == 0 {   // 10 events, then the network fails
                return .init(chunks: [Data(MockRelay.frames(Array(all[0..<10])).utf8)], end: .some(URLError(.networkConnectionLost)))
            }
            let from = UInt64(req.value(forHTTPHeaderField: "Last-Event-ID") ?? "0") ?? 0
            return .init(chunks: MockRelay.chunks(MockRelay.frames(Array(all[Int(from)...]), from: from + 1), size: 5))
        }
        let clock = VirtualClock()
        let tokens = LockedBox(0)
        let updates = await withRunningClock(clock) { await collect(client(relay, clock: clock, tokens: tokens, random: 0.5).startChat(request)) }
        XCTAssertEqual(updates.finalText, words.joined())
        XCTAssertEqual(updates.completion, .finished(finishReason: "stop"))
        XCTAssertEqual(updates.telemetry?.reconnections, 1)
        XCTAssertTrue(updates.contains(.connection(.waitingToReconnect(attempt: 1, delayMs: 500))), "the full jitter: floor(0.5 × 1001)")
        let r = relay.requests
        XCTAssertEqual(r.count, 2)
        XCTAssertEqual(r[1].method, "GET")
        XCTAssertEqual(r[1].url.host, "relay-b.test")
        XCTAssertEqual(r[1].url.path, "/api/chat/stream/\(r[0].header("X-Request-Id")!)")
        XCTAssertEqual(r[1].header("Last-Event-ID"), "10")
        XCTAssertEqual(r[1].header("Authorization"), "Bearer tok2")
        XCTAssertEqual(tokens.value, 2)
    }

    func testBodyEndingWithoutDoneIsADrop() async {
        let relay = MockRelay()
        let all = deltas + [done]
        relay.answer { _, n in
            n == 0 ? .init(chunks: [Data(MockRelay.frames(Array(all[0..<3])).utf8)])
                   : .init(chunks: [Data(MockRelay.frames(Array(all[3...]), from: 4).utf8)])
        }
        let clock = VirtualClock()
        let updates = await withRunningClock(clock) { await collect(client(relay, clock: clock).startChat(request)) }
        XCTAssertEqual(updates.finalText, words.joined())
        XCTAssertEqual(relay.requests.last?.header("Last-Event-ID"), "3")
    }

    func testThreeFailedReconnectionsNeedResumeAndResumeResends() async {
        let relay = MockRelay()
        relay.answer { _, n in
            n == 0 ? .init(chunks: [Data(MockRelay.frames([.delta("partial ")]).utf8)], end: .some(URLError(.networkConnectionLost)))
                   : .init(chunks: [], end: .some(URLError(.cannotConnectToHost)))
        }
        let clock = VirtualClock()
        let c = client(relay, clock: clock)
        let stream = c.startChat(request)
        let updates = await withRunningClock(clock) { await collect(stream) }
        XCTAssertEqual(updates.completion, .needsResume)
        XCTAssertEqual(updates.finalText, "partial ")
        XCTAssertEqual(relay.requests.map(\.method), ["POST", "GET", "GET", "GET"])
        XCTAssertEqual(relay.requests.map { $0.url.host! }, ["relay-a.test", "relay-b.test", "relay-a.test", "relay-b.test"])
        XCTAssertEqual(updates.telemetry?.reconnections, 3)

        relay.answer { _, _ in .init(chunks: [Data(MockRelay.frames([.delta("fresh answer"), self.done]).utf8)]) }
        let again = stream.resume()
        XCTAssertNotEqual(again.requestId, stream.requestId)
        let second = await withRunningClock(clock) { await collect(again) }
        XCTAssertEqual(second.finalText, "fresh answer")
        XCTAssertEqual(relay.requests.last?.method, "POST")
        XCTAssertEqual(relay.requests.last?.body, request.jsonBody, "the whole request is re-sent")
        XCTAssertEqual(second.telemetry?.reconnections, 4)
    }

    func testHTTPErrorFailsWithoutReconnect() async {
        let relay = MockRelay()
        relay.answer { _, _ in
            .init(status: 429, contentType: "application/json",
                  chunks: [Data(#"{"error":{"code":"token_budget_exhausted","message":"no tokens left"}}"#.utf8)])
        }
        let clock = VirtualClock()
        let updates = await withRunningClock(clock) { await collect(client(relay, clock: clock).startChat(request)) }
        XCTAssertEqual(updates.completion, .failed(status: 429, code: "token_budget_exhausted", message: "no tokens left"))
        XCTAssertEqual(relay.requests.count, 1)
    }

    func testWrongContentTypeFailsWithoutReconnect() async {
        let relay = MockRelay()
        relay.answer { _, _ in .init(contentType: "text/html", chunks: [Data("<html>".utf8)]) }
        let clock = VirtualClock()
        let updates = await withRunningClock(clock) { await collect(client(relay, clock: clock).startChat(request)) }
        guard case .failed(200, "bad_content_type", _)? = updates.completion else { return XCTFail("\(updates)") }
        XCTAssertEqual(relay.requests.count, 1)
    }

    func testRevokedSessionIsAnErrorNotAReconnectLoop() async {
        let relay = MockRelay()
        let revoked = StreamEvent.error(status: 401, code: "session_revoked", message: "session revoked")
        relay.answer { _, _ in .init(chunks: [Data(MockRelay.frames([.delta("Some text "), revoked]).utf8)]) }
        let clock = VirtualClock()
        let updates = await withRunningClock(clock) { await collect(client(relay, clock: clock).startChat(request)) }
        XCTAssertEqual(updates.completion, .failed(status: 401, code: "session_revoked", message: "session revoked"))
        XCTAssertEqual(updates.finalText, "Some text ")
        XCTAssertEqual(relay.requests.count, 1)
    }

    func testStopCancelsAndSendsDelete() async {
        let relay = MockRelay()
        relay.answer { req, _ in
            req.httpMethod == "DELETE"
                ? .init(status: 202, contentType: "application/json", chunks: [Data("{}".utf8)])
                : .init(chunks: [Data(MockRelay.frames([.delta("Hello there, general ")]).utf8)], end: .none)   // stays open
        }
        let clock = VirtualClock()
        let c = client(relay, clock: clock)
        let stream = c.startChat(request)
        let updates = await withRunningClock(clock) { () -> [ChatUpdate] in
            var all: [ChatUpdate] = []
            for await u in stream {
                all.append(u)
                if case .connection(.streaming) = u { stream.stop() }
            }
            return all
        }
        XCTAssertEqual(updates.completion, .stopped)
        await c.waitForStopDeliveries()
        XCTAssertEqual(c.stopDeliveries.delivered, 1)
        XCTAssertEqual(relay.requests.map(\.method), ["POST", "DELETE"])
        XCTAssertEqual(relay.requests[1].url.path, "/api/chat/stream/\(stream.requestId.value)")
        XCTAssertEqual(relay.requests[1].header("Authorization"), "Bearer tok2")
        XCTAssertFalse(updates.contains { if case .connection(.waitingToReconnect) = $0 { return true } else { return false } },
                       "a stop is not a network failure")
    }

    func testDropAfterEventsShowsAResume() async {
        let relay = MockRelay()
        let all = deltas + [done]
        relay.answer { req, _ in
            let from = Int(req.value(forHTTPHeaderField: "Last-Event-ID") ?? "0") ?? 0
            return .init(chunks: [Data(MockRelay.frames(Array(all[from...]), from: UInt64(from) + 1).utf8)])
        }
        let clock = VirtualClock()
        let updates = await withRunningClock(clock) {
            await collect(client(relay, clock: clock).startChat(request, options: .init(dropAfterEvents: 7)))
        }
        XCTAssertEqual(updates.finalText, words.joined())
        XCTAssertEqual(relay.requests.count, 2)
        XCTAssertEqual(relay.requests[1].header("Last-Event-ID"), "7")
        XCTAssertEqual(updates.telemetry?.reconnections, 1)
    }

    func testBudgetFetchAndDoneUsage() async throws {
        let relay = MockRelay()
        relay.answer { req, _ in
            req.url!.path == "/api/budget"
                ? .init(contentType: "application/json", chunks: [Data(#"{"tier":"free","limit":10000,"used":7000,"remaining":3000,"period":"2026-11"}"#.utf8)])
                : .init(chunks: [Data(MockRelay.frames([.delta("ok"), self.done]).utf8)])
        }
        let clock = VirtualClock()
        let c = client(relay, clock: clock)
        let b = try await c.fetchBudget()
        XCTAssertEqual(b.pillText, "~3,000 tokens remaining this month")
        XCTAssertEqual(relay.requests[0].header("Authorization"), "Bearer tok1")
        let updates = await withRunningClock(clock) { await collect(c.startChat(request)) }
        XCTAssertTrue(updates.contains(.budget(BudgetState(tier: "free", limit: 10_000, used: 7_045, remaining: 2_955, period: "2026-11"))))
        XCTAssertEqual(c.budget?.remaining, 2_955)
    }

    func testNetworkAdviceIsAnnouncedAndSlowRTTLengthensBackoff() async {
        let relay = MockRelay()
        relay.answer { _, n in
            n == 0 ? .init(chunks: [], end: .some(URLError(.networkConnectionLost)))
                   : .init(chunks: [Data(MockRelay.frames([.delta("x"), self.done]).utf8)])
        }
        let clock = VirtualClock()
        let opts = RelayChatClient.ChatOptions(network: NetworkConditions(connectionType: "2g", rttMs: 900, downlinkMbps: 0.2))
        let updates = await withRunningClock(clock) { await collect(client(relay, clock: clock, random: 0.999).startChat(request, options: opts)) }
        guard case .advice(let a)? = updates.first else { return XCTFail("\(updates)") }
        XCTAssertEqual(a.warning, NetworkAdvice.slowConnectionWarning)
        XCTAssertTrue(a.suggestsSummaryMode)
        XCTAssertTrue(updates.contains(.connection(.waitingToReconnect(attempt: 1, delayMs: 2_997))),
                      "the full jitter over the 3 s backoff: floor(0.999 × 3001)")
        XCTAssertEqual(updates.completion, .finished(finishReason: "stop"))
    }
}
