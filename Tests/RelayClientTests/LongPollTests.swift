import Foundation
import RelayTestKit
import XCTest
import RelayCore
import RelayHTTP
@testable import RelayClient

/// Load balancers, buffering proxies and the long-poll read (conformance/CLIENT_RULES.md
/// "Reconnect decisions" and "Buffering proxies"; the relay's read at
/// `GET /api/chat/stream/{id}?offset=…&live=long-poll`) against a scripted relay on a
/// virtual clock.
final class LongPollTests: XCTestCase {
    let urls = [URL(string: "http://relay-a.test")!, URL(string: "http://relay-b.test")!]
    let words = (1...12).map { "word\($0) " }
    var all: [StreamEvent] { words.map { .delta($0) } + [.done(finishReason: "stop", usage: Usage(promptTokens: 1, completionTokens: 12))] }
    let request = ChatRequest(messages: [ChatMessage(role: "user", content: "hi")])
    let sse = ConnectionEvent.response(status: 200, contentType: "text/event-stream", retryAfter: nil)

    struct Setup {
        var transport = ScriptedTransport()
        var clock = VirtualClock()
        var reasons = LockedBox<[RelayChatClient.TokenReason]>([])
        var client: RelayChatClient!
    }

    func setup() -> Setup {
        var s = Setup()
        let reasons = s.reasons
        let count = LockedBox(0)
        s.client = RelayChatClient(baseURLs: urls, tokenProvider: { why in
            reasons.mutate { $0.append(why) }
            return count.mutate { $0 += 1; return "tok\($0)" }
        }, clock: s.clock, transport: s.transport, random: { 0 })
        return s
    }

    func frames(_ from: Int, _ to: Int) -> String { MockRelay.frames(Array(all[from..<to]), from: UInt64(from) + 1) }

    /// A long-poll `200`: events `all[from..<to]` as a JSON array, `Stream-Next-Offset` = seq `to`.
    func poll(_ from: Int, _ to: Int, closed: Bool = false) -> [ConnectionEvent] {
        let body = "[" + all[from..<to].map(\.json).joined(separator: ",") + "]"
        let offset = String(repeating: "0", count: 20 - String(to).count) + String(to)
        return [.response(status: 200, contentType: "application/json; charset=utf-8", retryAfter: nil,
                          stream: StreamReadHeaders(nextOffset: offset, closed: closed, upToDate: true, cursor: "c\(to)")),
                .data(Data(body.utf8)), .end(error: nil)]
    }

    func noContent(closed: Bool = false) -> [ConnectionEvent] {
        [.response(status: 204, contentType: nil, retryAfter: nil, stream: StreamReadHeaders(nextOffset: "0", closed: closed, upToDate: true)),
         .end(error: nil)]
    }

    func advance(_ clock: VirtualClock, step: Int64 = 50, until what: String, _ cond: @escaping () -> Bool) async throws {
        try await eventually(5, what, every: 0.001) {
            if cond() { return true }
            clock.advance(by: step)
            return false
        }
    }

    func pollURL(_ id: RequestID, _ query: String, host: String = "relay-a.test") -> String {
        "http://\(host)/api/chat/stream/\(id.value)?\(query)"
    }

    // MARK: - Load balancers

    func test502FromALoadBalancerResendsThePostToTheNextBaseURL() async throws {
        let s = setup()
        let t = s.transport
        let stream = s.client.startChat(request)
        let log = UpdateLog(stream)
        try await t.waitForRequests(1)
        t.send([.response(status: 502, contentType: "text/html", retryAfter: nil), .data(Data("<h1>502 Bad Gateway</h1>".utf8)),
                .end(error: nil)], to: 0)
        try await advance(s.clock, until: "the second attempt") { t.requests.count == 2 }
        XCTAssertEqual(t.requests[1].method, "POST")
        XCTAssertEqual(t.requests[1].url.host, "relay-b.test")
        XCTAssertEqual(t.requests[1].header("X-Request-Id"), stream.requestId.value)
        t.open(1, frames: frames(0, 4))
        t.send([.end(error: "connection reset")], to: 1)
        try await advance(s.clock, until: "the resume") { t.requests.count == 3 }
        t.send([.response(status: 504, contentType: "text/html", retryAfter: "2"), .end(error: nil)], to: 2)
        try await advance(s.clock, until: "the resume after the 504") { t.requests.count == 4 }
        XCTAssertEqual(t.requests[2].url.host, "relay-a.test")
        XCTAssertEqual(t.requests[3].url.host, "relay-b.test", "after the 504, the next base URL")
        XCTAssertEqual(t.requests[3].header("Last-Event-ID"), "4")
        t.open(3, frames: frames(4, all.count))
        t.send([.end(error: nil)], to: 3)
        let u = try await log.finished()
        XCTAssertEqual(u.completion, .finished(finishReason: "stop"))
        XCTAssertEqual(u.finalText, words.joined())
        let waits = u.compactMap { if case .connection(.waitingToReconnect(_, let d)) = $0 { return d } else { return nil } }
        XCTAssertEqual(waits, [1_000, 0, 2_000],
                       "502: the backoff; the drop after events: the full jitter, 0 for r = 0; 504 with Retry-After: 2 → 2 s")
    }

    // MARK: - Buffering proxies

    func testAHeadWithoutAByteFor20SecondsSwitchesToLongPollForTheRestOfTheClient() async throws {
        let s = setup()
        let t = s.transport
        let stream = s.client.startChat(request)
        let id = stream.requestId
        let log = UpdateLog(stream)
        try await t.waitForRequests(1)
        t.send([sse], to: 0)
        try await advance(s.clock, step: 500, until: "the first long-poll read") { t.requests.count == 2 }
        XCTAssertGreaterThanOrEqual(s.clock.nowMs(), 20_000, "not before 20 s after the head")
        XCTAssertEqual(t.requests[1].method, "GET")
        XCTAssertEqual(t.requests[1].url.absoluteString, pollURL(id, "offset=-1&live=long-poll"), "same base URL; -1 before any event")
        XCTAssertEqual(t.requests[1].header("Accept"), "application/json")
        XCTAssertEqual(t.requests[1].header("Authorization"), "Bearer tok2")
        XCTAssertTrue(s.client.readsOverLongPoll)
        XCTAssertEqual(s.client.bufferingDetected, .silentAfterHeaders)
        t.send(poll(0, 5), to: 1)
        try await t.waitForRequests(3)
        XCTAssertEqual(t.requests[2].url.absoluteString, pollURL(id, "offset=5&live=long-poll&cursor=c5"))
        t.send(noContent(), to: 2)
        try await advance(s.clock, until: "the read after the 204") { t.requests.count == 4 }
        XCTAssertEqual(t.requests[3].url.absoluteString, pollURL(id, "offset=5&live=long-poll&cursor=c5"))
        t.send(poll(5, all.count, closed: true), to: 3)
        let u = try await log.finished()
        XCTAssertEqual(u.completion, .finished(finishReason: "stop"))
        XCTAssertEqual(u.finalText, words.joined(), "no token lost or repeated")
        XCTAssertTrue(u.contains(.connection(.longPoll(reason: .silentAfterHeaders, lastEventId: 0))))
        XCTAssertEqual(u.telemetry?.reconnections, 0, "a switch and its reads are not reconnections")
        XCTAssertEqual(t.requests.count, 4)

        // The next answer of this client: its POST starts it, its events come over long-poll.
        let second = s.client.startChat(request)
        let log2 = UpdateLog(second)
        try await t.waitForRequests(5)
        XCTAssertEqual(t.requests[4].method, "POST")
        t.send([sse], to: 4)
        try await t.waitForRequests(6)
        XCTAssertEqual(t.requests[5].url.absoluteString, pollURL(second.requestId, "offset=-1&live=long-poll"))
        t.send(poll(0, all.count, closed: true), to: 5)
        let u2 = try await log2.finished()
        XCTAssertEqual(u2.finalText, words.joined())
    }

    func testAPingWithin20SecondsKeepsSSE() async throws {
        let s = setup()
        let t = s.transport
        let log = UpdateLog(s.client.startChat(request))
        try await t.waitForRequests(1)
        t.send([sse], to: 0)
        s.clock.advance(by: 16_000)
        try await Task.sleep(nanoseconds: 20_000_000)
        t.send([.data(Data(": ping\n\n".utf8))], to: 0)
        try await advance(s.clock, step: 1_000, until: "30 s") { s.clock.nowMs() >= 30_000 }
        XCTAssertEqual(t.requests.count, 1)
        XCTAssertFalse(s.client.readsOverLongPoll)
        t.send([.data(Data(frames(0, all.count).utf8)), .end(error: nil)], to: 0)
        let u = try await log.finished()
        XCTAssertEqual(u.completion, .finished(finishReason: "stop"))
    }

    func testTheWholeBodyAtTheEndIsShownAndTheNextAnswerUsesLongPoll() async throws {
        let s = setup()
        let t = s.transport
        let log = UpdateLog(s.client.startChat(request))
        try await t.waitForRequests(1)
        t.send([sse, .data(Data("retry: 1000\n\n".utf8))], to: 0)
        try await advance(s.clock, step: 500, until: "8 s") { s.clock.nowMs() >= 8_000 }
        t.send([.data(Data(frames(0, all.count).utf8)), .end(error: nil)], to: 0)
        let u = try await log.finished()
        XCTAssertEqual(u.completion, .finished(finishReason: "stop"))
        XCTAssertEqual(u.finalText, words.joined())
        XCTAssertEqual(s.client.bufferingDetected, .wholeBodyAtEnd)
        XCTAssertTrue(s.client.readsOverLongPoll)
        let second = s.client.startChat(request)
        _ = UpdateLog(second)
        try await t.waitForRequests(2)
        t.send([sse], to: 1)
        try await t.waitForRequests(3)
        XCTAssertEqual(t.requests[2].url.absoluteString, pollURL(second.requestId, "offset=-1&live=long-poll"))
    }

    func testABurstCutWithoutDoneIsFinishedOverLongPollFromTheLastEvent() async throws {
        let s = setup()
        let t = s.transport
        let stream = s.client.startChat(request)
        let log = UpdateLog(stream)
        try await t.waitForRequests(1)
        try await advance(s.clock, step: 500, until: "6 s") { s.clock.nowMs() >= 6_000 }
        t.send([sse, .data(Data(frames(0, 6).utf8)), .end(error: nil)], to: 0)
        try await t.waitForRequests(2)
        XCTAssertEqual(t.requests[1].url.absoluteString, pollURL(stream.requestId, "offset=6&live=long-poll"), "at once, no backoff")
        t.send(poll(6, all.count, closed: true), to: 1)
        let u = try await log.finished()
        XCTAssertEqual(u.finalText, words.joined())
        XCTAssertEqual(u.completion, .finished(finishReason: "stop"))
    }

    // MARK: - Long-poll reads

    func testLongPollReadsFailOverLikeResumesAndRefreshAnExpiredToken() async throws {
        let s = setup()
        let t = s.transport
        s.client.readMode = .longPoll
        let stream = s.client.startChat(request)
        let id = stream.requestId
        let log = UpdateLog(stream)
        try await t.waitForRequests(1)
        t.send([sse], to: 0)
        try await t.waitForRequests(2)
        t.send(poll(0, 3), to: 1)
        try await t.waitForRequests(3)
        t.send([.response(status: 502, contentType: "text/html", retryAfter: nil), .end(error: nil)], to: 2)
        try await advance(s.clock, until: "the read after the 502") { t.requests.count == 4 }
        XCTAssertEqual(t.requests[3].url.absoluteString, pollURL(id, "offset=3&live=long-poll&cursor=c3", host: "relay-b.test"))
        t.send([.end(error: "Could not connect: connection refused")], to: 3)
        try await advance(s.clock, until: "the read after the refusal") { t.requests.count == 5 }
        XCTAssertEqual(t.requests[4].url.host, "relay-a.test")
        t.refuse(4, status: 401, code: "token_expired")
        try await advance(s.clock, until: "the read with a fresh token") { t.requests.count == 6 }
        XCTAssertEqual(s.reasons.value.last, .expired, "a 401 to a read asks for a fresh token")
        XCTAssertEqual(t.requests[5].url.absoluteString, pollURL(id, "offset=3&live=long-poll&cursor=c3", host: "relay-b.test"))
        t.send(poll(3, all.count, closed: true), to: 5)
        let u = try await log.finished()
        XCTAssertEqual(u.completion, .finished(finishReason: "stop"))
        XCTAssertEqual(u.finalText, words.joined())
    }

    /// A 502 storm: every long-poll read on every base URL gets a load balancer's 502. The
    /// reads rotate base URLs, each waits the backoff after the last (no hot loop), and the
    /// answer ends `needsResume` after the bounded reconnections, with the text it had.
    func testA502StormOnEveryBaseURLOverLongPollEndsInNeedsResumeAfterBoundedReads() async throws {
        let s = setup()
        let t = s.transport
        s.client.readMode = .longPoll
        let stream = s.client.startChat(request)
        let log = UpdateLog(stream)
        try await t.waitForRequests(1)
        t.send([sse], to: 0)
        try await t.waitForRequests(2)
        t.send(poll(0, 3), to: 1)
        var answered = 2
        let storm = Task {
            // Answers every request from the third on with a 502, until the stream ends.
            while !Task.isCancelled {
                let n = t.requests.count
                while answered < n {
                    t.send([.response(status: 502, contentType: "text/html", retryAfter: nil), .data(Data("<h1>502</h1>".utf8)),
                            .end(error: nil)], to: answered)
                    answered += 1
                }
                try? await Task.sleep(nanoseconds: 1_000_000)
                s.clock.advance(by: 100)
            }
        }
        let u = try await log.finished()
        storm.cancel()
        XCTAssertEqual(u.completion, .needsResume)
        XCTAssertEqual(u.finalText, words.prefix(3).joined(), "what arrived is kept")
        let reads = t.requests.dropFirst(2)
        XCTAssertTrue((1...6).contains(reads.count), "bounded reads: \(reads.count)")
        XCTAssertEqual(Set(reads.map { $0.url.host ?? "" }).count, 2, "both base URLs tried")
        XCTAssertTrue(reads.allSatisfy { $0.url.query?.hasPrefix("offset=3&live=long-poll") == true }, "each from the last event")
        let waits = u.compactMap { if case .connection(.waitingToReconnect(_, let d)) = $0 { return d } else { return nil } }
        XCTAssertTrue(waits.allSatisfy { $0 >= 1_000 }, "each read waits the backoff: \(waits)")
    }

    func testStreamClosedWithoutTheTerminalEventFailsAndAMalformedReadIsADrop() async throws {
        let s = setup()
        let t = s.transport
        s.client.readMode = .longPoll
        let log = UpdateLog(s.client.startChat(request))
        try await t.waitForRequests(1)
        t.send([sse], to: 0)
        try await t.waitForRequests(2)
        t.send(poll(0, 2), to: 1)
        try await t.waitForRequests(3)
        t.send([.response(status: 200, contentType: "application/json", retryAfter: nil, stream: StreamReadHeaders(nextOffset: "x")),
                .data(Data("[]".utf8)), .end(error: nil)], to: 2)
        try await advance(s.clock, until: "the read after the malformed one") { t.requests.count == 4 }
        XCTAssertEqual(t.requests[3].url.host, "relay-b.test", "a malformed read is a drop: the next base URL")
        XCTAssertEqual(t.requests[3].url.query, "offset=2&live=long-poll&cursor=c2")
        t.send(noContent(closed: true), to: 3)
        let u = try await log.finished()
        XCTAssertEqual(u.completion, .failed(status: 204, code: "stream_closed", message: "the answer ended without its terminal event"))
    }

    func testARelayWithoutTheLongPollReadIsReadOverSSEWithoutRepeats() async throws {
        let s = setup()
        let t = s.transport
        s.client.readMode = .longPoll
        let log = UpdateLog(s.client.startChat(request))
        try await t.waitForRequests(1)
        t.send([sse], to: 0)
        try await t.waitForRequests(2)
        t.send(poll(0, 4), to: 1)
        try await t.waitForRequests(3)
        t.open(2, frames: frames(0, all.count))   // the whole answer again, over SSE
        t.send([.end(error: nil)], to: 2)
        let u = try await log.finished()
        XCTAssertEqual(u.completion, .finished(finishReason: "stop"))
        XCTAssertEqual(u.finalText, words.joined(), "nothing repeated")
        XCTAssertFalse(s.client.readsOverLongPoll)
        XCTAssertEqual(s.client.readMode, .sse)
    }

    func testABudgetLimitedDoneOverLongPollFlagsTheFinalUpdate() async throws {
        let s = setup()
        let t = s.transport
        s.client.readMode = .longPoll
        let log = UpdateLog(s.client.startChat(request))
        try await t.waitForRequests(1)
        t.send([sse], to: 0)
        try await t.waitForRequests(2)
        let body = #"[{"type":"delta","content":"Clause 1"},{"type":"done","finish_reason":"length","usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3},"budget_limited":true}]"#
        t.send([.response(status: 200, contentType: "application/json", retryAfter: nil,
                          stream: StreamReadHeaders(nextOffset: "00000000000000000002", closed: true)),
                .data(Data(body.utf8)), .end(error: nil)], to: 1)
        let u = try await log.finished()
        XCTAssertEqual(u.completion, .finished(finishReason: "length"))
        XCTAssertEqual(u.renders.last?.budgetLimited, true)
        XCTAssertEqual(u.finalText, "Clause 1")
    }
}
