import Foundation
import RelayTestKit
import XCTest
import RelayCore
import RelayHTTP
@testable import RelayClient

/// Recovery (conformance/CLIENT_RULES.md) against a scripted relay (`ScriptedTransport`)
/// on a virtual clock: token
/// expiry, 503 with `Retry-After`, a revoked session, a drop in the background and a
/// late foreground, and a Stop whose `DELETE` is retried in the background.
final class RelayStreamRecoveryTests: XCTestCase {
    let urls = [URL(string: "http://relay-a.test")!, URL(string: "http://relay-b.test")!]
    let words = (1...20).map { "word\($0) " }
    var all: [StreamEvent] { words.map { .delta($0) } + [.done(finishReason: "stop", usage: Usage(promptTokens: 1, completionTokens: 20))] }
    let request = ChatRequest(messages: [ChatMessage(role: "user", content: "hi")])

    struct Setup {
        var transport = ScriptedTransport()
        var clock = VirtualClock()
        var reasons = LockedBox<[RelayChatClient.TokenReason]>([])
        var client: RelayChatClient!
    }

    func setup(jitter: Int64 = 0) -> Setup {
        var s = Setup()
        let reasons = s.reasons
        let count = LockedBox(0)
        s.client = RelayChatClient(baseURLs: urls, tokenProvider: { why in
            reasons.mutate { $0.append(why) }
            return count.mutate { $0 += 1; return "tok\($0)" }
        }, clock: s.clock, transport: s.transport, jitter: { jitter })
        return s
    }

    /// Frames of `all[from..<to]` with seqs `from + 1 …`.
    func frames(_ from: Int, _ to: Int) -> String { MockRelay.frames(Array(all[from..<to]), from: UInt64(from) + 1) }

    /// Advances the virtual clock in `step` ms steps until `cond` holds (5 s real deadline).
    func advance(_ clock: VirtualClock, step: Int64 = 50, until what: String, _ cond: @escaping () -> Bool) async throws {
        try await eventually(5, what, every: 0.001) {
            if cond() { return true }
            clock.advance(by: step)
            return false
        }
    }

    /// Starts a chat, streams `events` deltas on the first connection, drops it with
    /// `error`, and advances the clock to the first reconnection. Returns the update log.
    func dropThenReconnect(_ s: Setup, after events: Int, error: String) async throws -> UpdateLog {
        let t = s.transport
        let log = UpdateLog(s.client.startChat(request))
        try await t.waitForRequests(1)
        t.open(0, frames: frames(0, events))
        t.send([.end(error: error)], to: 0)
        try await advance(s.clock, until: "reconnection 1") { t.requests.count == 2 }
        return log
    }

    /// Starts a chat, streams 5 deltas, goes to the background and drops the connection.
    func dropInTheBackground(_ s: Setup) async throws -> (RelayStream, UpdateLog) {
        let t = s.transport
        let stream = s.client.startChat(request)
        let log = UpdateLog(stream)
        try await t.waitForRequests(1)
        t.open(0, frames: frames(0, 5))
        stream.enterBackground()
        t.send([.end(error: "network connection lost")], to: 0)
        return (stream, log)
    }

    func waits(_ u: [ChatUpdate]) -> [[Int64]] {
        u.compactMap { if case .connection(.waitingToReconnect(let a, let d)) = $0 { return [Int64(a), d] } else { return nil } }
    }

    func testTokenExpiredEventAsksForAFreshTokenOnceAndResumesFromTheLastId() async throws {
        let s = setup(jitter: 100)
        let t = s.transport
        let log = UpdateLog(s.client.startChat(request))
        try await t.waitForRequests(1)
        // The relay's expiry event repeats the last delta's seq (docs/PROTOCOL.md "Numbering").
        t.open(0, frames: frames(0, 5) + SSEFrame.event(seq: 5, json: StreamEvent.error(status: 401, code: "token_expired", message: "expired").json))
        try await log.wait("the reconnection wait") { self.waits($0) == [[1, 100]] }   // jitter only, no backoff
        try await advance(s.clock, until: "the reconnection") { t.requests.count == 2 }
        let r = t.requests[1]
        XCTAssertEqual(r.method, "GET")
        XCTAssertEqual(r.url.host, "relay-b.test")
        XCTAssertEqual(r.header("Last-Event-ID"), "5")
        XCTAssertEqual(r.header("Authorization"), "Bearer tok2")
        XCTAssertEqual(s.reasons.value, [.connect, .expired])
        t.open(1, frames: frames(5, all.count))
        t.send([.end(error: nil)], to: 1)
        let u = try await log.finished()
        XCTAssertEqual(u.completion, .finished(finishReason: "stop"))
        XCTAssertEqual(u.finalText, words.joined(), "no token lost or repeated")
        XCTAssertEqual(u.telemetry?.reconnections, 1)
        XCTAssertEqual(u.telemetry?.tokensReceived, 20)
    }

    func test401ToAReconnectRefreshesOnceThenASecond401Fails() async throws {
        let s = setup()
        let t = s.transport
        let log = try await dropThenReconnect(s, after: 3, error: "connection reset")
        t.refuse(1, status: 401, code: "token_expired")
        try await advance(s.clock, until: "reconnection 2") { t.requests.count == 3 }
        XCTAssertEqual(s.reasons.value, [.connect, .connect, .expired])
        XCTAssertEqual(t.requests[2].header("Last-Event-ID"), "3")
        t.refuse(2, status: 401, code: "unauthorized")
        let u = try await log.finished()
        XCTAssertEqual(u.completion, .failed(status: 401, code: "unauthorized", message: "unauthorized"))
        XCTAssertEqual(waits(u), [[1, 1_000], [2, 0]])
        XCTAssertEqual(s.reasons.value.filter { $0 == .expired }.count, 1, "the provider is asked once per expiry")
    }

    func test503WithRetryAfterIsARetryableDropOnTheNextURL() async throws {
        let s = setup(jitter: 70)
        let t = s.transport
        let log = try await dropThenReconnect(s, after: 2, error: "connection refused")
        XCTAssertEqual(t.requests[1].url.host, "relay-b.test")
        t.refuse(1, status: 503, code: "not_ready", retryAfter: "2")
        try await advance(s.clock, until: "reconnection 2") { t.requests.count == 3 }
        XCTAssertEqual(t.requests[2].url.host, "relay-a.test")
        XCTAssertEqual(t.requests[2].header("Last-Event-ID"), "2")
        t.open(2, frames: frames(2, all.count))
        t.send([.end(error: nil)], to: 2)
        let u = try await log.finished()
        XCTAssertEqual(waits(u), [[1, 1_070], [2, 2_070]], "max(Retry-After, 1 s) + jitter")
        XCTAssertEqual(u.completion, .finished(finishReason: "stop"))
        XCTAssertEqual(u.finalText, words.joined())
        XCTAssertEqual(u.telemetry?.reconnections, 2)
    }

    func testSessionRevokedOnAReconnectIsTerminal() async throws {
        let s = setup()
        let t = s.transport
        let log = try await dropThenReconnect(s, after: 2, error: "reset")
        t.refuse(1, status: 401, code: "session_revoked")
        let u = try await log.finished()
        XCTAssertEqual(u.completion, .failed(status: 401, code: "session_revoked", message: "session_revoked"))
        XCTAssertEqual(s.reasons.value, [.connect, .connect], "no fresh token for a revoked session")
        XCTAssertEqual(t.requests.count, 2)
    }

    func testDropInTheBackgroundResumesOnForegroundNinetySecondsLater() async throws {
        let s = setup()
        let t = s.transport
        let (stream, log) = try await dropInTheBackground(s)
        s.clock.advance(by: 90_000)   // the hard timeout must not count this
        stream.enterForeground()
        try await t.waitForRequests(2)
        XCTAssertEqual(t.requests[1].header("Last-Event-ID"), "5")
        t.open(1, frames: frames(5, all.count))
        t.send([.end(error: nil)], to: 1)
        let u = try await log.finished()
        XCTAssertEqual(u.completion, .finished(finishReason: "stop"))
        XCTAssertEqual(u.finalText, words.joined(), "no token dropped")
        XCTAssertEqual(waits(u), [], "the foreground reconnects at once")
    }

    /// The answer finished on the relay while the app was away > 5 minutes: the late
    /// resume (docs/PROTOCOL.md §6.5) gets the rest as one delta (id final − 1) and the
    /// done, and the kit renders the whole answer.
    func testForegroundAfterFiveIdleMinutesFetchesTheRestOfAFinishedAnswer() async throws {
        let s = setup()
        let t = s.transport
        let (stream, log) = try await dropInTheBackground(s)
        s.clock.advance(by: 600_000)
        stream.enterForeground()
        try await t.waitForRequests(2)
        XCTAssertEqual(t.requests[1].header("Last-Event-ID"), "5")
        let rest = words[5...].joined()
        t.open(1, frames: SSEFrame.event(seq: UInt64(words.count), json: StreamEvent.delta(rest).json)
                   + SSEFrame.event(seq: UInt64(all.count), json: all.last!.json))
        t.send([.end(error: nil)], to: 1)
        let u = try await log.finished()
        XCTAssertEqual(u.completion, .finished(finishReason: "stop"))
        XCTAssertEqual(u.finalText, words.joined(), "the rest, nothing twice")
        XCTAssertEqual(waits(u), [], "the foreground resumes at once")
    }

    /// The late resume finds nothing (404: not retained, or a running answer silent > 5
    /// minutes): `needsResume`, as the idle rule always said — not a failure.
    func testALateResumeAnswered404NeedsResume() async throws {
        let s = setup()
        let t = s.transport
        let (stream, log) = try await dropInTheBackground(s)
        s.clock.advance(by: 300_001)
        stream.enterForeground()
        try await t.waitForRequests(2)
        t.refuse(1, status: 404, code: "stream_not_found")
        let u = try await log.finished()
        XCTAssertEqual(u.completion, .needsResume)
        XCTAssertEqual(t.requests.count, 2)
    }

    func testStopCompletesAtOnceAndTheDeleteIsRetriedAcrossURLs() async throws {
        let s = setup()
        let t = s.transport
        let stream = s.client.startChat(request)
        let log = UpdateLog(stream)
        try await t.waitForRequests(1)
        t.open(0, frames: frames(0, 3))
        try await log.wait("streaming") { $0.contains(.connection(.streaming)) }
        stream.stop()
        let u = try await log.finished()   // while no DELETE has been answered
        XCTAssertEqual(u.completion, .stopped)
        XCTAssertEqual(s.client.stopDeliveries.inFlight, 1)
        try await t.waitForFetches(1)
        try await t.answerFetch(status: 0, error: URLError(.timedOut))
        try await advance(s.clock, until: "the second DELETE") { t.fetched.count == 2 }
        try await t.answerFetch(status: 0, error: URLError(.cannotConnectToHost))
        try await advance(s.clock, until: "the third DELETE") { t.fetched.count == 3 }
        try await t.answerFetch(status: 202)
        await s.client.waitForStopDeliveries()
        let f = t.fetched
        XCTAssertEqual(f.map(\.method), ["DELETE", "DELETE", "DELETE"])
        XCTAssertEqual(f.map { $0.url.host ?? "" }, ["relay-a.test", "relay-b.test", "relay-a.test"])
        XCTAssertEqual(Set(f.map(\.url.path)), ["/api/chat/stream/\(stream.requestId.value)"])
        XCTAssertEqual(Set(f.map(\.timeoutMs)), [10_000])
        var expected = StopDelivery.Counts()
        expected.requested = 1
        expected.attempts = 3
        expected.delivered = 1
        XCTAssertEqual(s.client.stopDeliveries, expected)
    }

    func testStopDeliveryGivesUpAfterThreeAttempts() async throws {
        let s = setup()
        let t = s.transport
        let stream = s.client.startChat(request)
        let log = UpdateLog(stream)
        try await t.waitForRequests(1)
        t.open(0)
        try await log.wait("streaming") { $0.contains(.connection(.streaming)) }
        stream.stop()
        _ = try await log.finished()
        for n in 1...3 {
            try await advance(s.clock, until: "DELETE \(n)") { t.fetched.count == n }
            try await t.answerFetch(status: 503)
        }
        await s.client.waitForStopDeliveries()
        XCTAssertEqual(s.client.stopDeliveries.failed, 1)
        XCTAssertEqual(s.client.stopDeliveries.attempts, 3)
        XCTAssertEqual(t.fetched.count, 3)
    }

    func testStopWhoseDeleteIsAnswered404IsRetriedUntilAccepted() async throws {
        let s = setup()
        let t = s.transport
        let stream = s.client.startChat(request)
        let log = UpdateLog(stream)
        try await t.waitForRequests(1)
        stream.stop()   // before any byte of the stream: the relay may not have created it yet
        let u = try await log.finished()
        XCTAssertEqual(u.completion, .stopped)
        try await t.waitForFetches(1)
        try await t.answerFetch(status: 404)
        try await advance(s.clock, until: "the DELETE retried after a 404") { t.fetched.count == 2 }
        try await t.answerFetch(status: 202)
        await s.client.waitForStopDeliveries()
        XCTAssertEqual(t.fetched.map { $0.url.host ?? "" }, ["relay-a.test", "relay-b.test"])
        XCTAssertEqual(s.client.stopDeliveries.delivered, 1)
        XCTAssertEqual(s.client.stopDeliveries.attempts, 2)
    }

    func testStopAnswered404OnEveryAttemptCountsAsDelivered() async throws {
        let s = setup()
        let t = s.transport
        let stream = s.client.startChat(request)
        let log = UpdateLog(stream)
        try await t.waitForRequests(1)
        stream.stop()
        _ = try await log.finished()
        for n in 1...3 {
            try await advance(s.clock, until: "DELETE \(n)") { t.fetched.count == n }
            try await t.answerFetch(status: 404)
        }
        await s.client.waitForStopDeliveries()
        XCTAssertEqual(s.client.stopDeliveries.delivered, 1)
        XCTAssertEqual(s.client.stopDeliveries.attempts, 3)
    }
}
