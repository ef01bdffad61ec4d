import Foundation
import RelayCore
import RelayRedis
import RelayTestSupport
import XCTest
import RelayEventStore

/// Resuming from `Last-Event-ID` on any instance, exactly once, in order
/// (docs/PROTOCOL.md "Resuming").
final class ResumeTests: RelayTestCase {
    /// A finished stream resumed from its final event answers 204 No Content
    /// (what stops a standard EventSource); one event earlier still replays the end; an
    /// unknown id keeps its 404.
    func testResumeOfAFinishedStreamFromItsFinalEventIs204() throws {
        let relay = try startRelay()
        let token = RelayProcess.token()
        let id = Chat.newID()
        let events = try Chat.start(port: relay.port, token: token, requestID: id, maxTokens: 5).readAll()
        assertSequence(events)
        let last = try XCTUnwrap(events.last?.lastEventId)
        let auth = [("Authorization", "Bearer \(token)")]
        let atEnd = try HTTPClient.request(port: relay.port, method: "GET", path: "/api/chat/stream/\(id)",
                                           headers: auth + [("Last-Event-ID", last)])
        XCTAssertEqual(atEnd.status, 204)
        XCTAssertEqual(atEnd.text, "", "204 has no body")
        XCTAssertEqual(atEnd.header("X-Request-Id"), id)
        let viaQuery = try HTTPClient.request(port: relay.port, method: "GET", path: "/api/chat/stream/\(id)?lastEventId=\(last)",
                                              headers: auth)
        XCTAssertEqual(viaQuery.status, 204)
        let before = try Chat.resume(port: relay.port, token: token, requestID: id, lastEventID: String(UInt64(last)! - 1))
        XCTAssertEqual(before.status, 200)
        XCTAssertEqual(try before.readAll().map(\.lastEventId), [last], "one event earlier replays the final event")
        let unknown = try HTTPClient.request(port: relay.port, method: "GET", path: "/api/chat/stream/\(Chat.newID())",
                                             headers: auth + [("Last-Event-ID", last)])
        XCTAssertEqual(unknown.status, 404)
        XCTAssertTrue(unknown.text.contains("stream_not_found"))
    }

    func testResumingAFinishedStreamFromEveryPositionYieldsExactlyTheRest() throws {
        let relay = try startRelay()
        let id = Chat.newID()
        let token = RelayProcess.token()
        let all = try Chat.start(port: relay.port, token: token, requestID: id, maxTokens: 60).readAll()
        XCTAssertEqual(all.count, 61)
        for k in 0...61 {
            let rest = try Chat.resume(port: relay.port, token: token, requestID: id, lastEventID: String(k)).readAll()
            XCTAssertEqual(rest.map(\.data), all[k...].map(\.data), "resume from \(k)")
            XCTAssertEqual(rest.map(\.lastEventId), all[k...].map(\.lastEventId))
        }
        let viaQuery = try SSEConnection(port: relay.port, method: "GET", path: "/api/chat/stream/\(id)?lastEventId=50",
                                         headers: [("Authorization", "Bearer \(token)")]).readAll()
        XCTAssertEqual(viaQuery.map(\.data), all[50...].map(\.data))
    }

    func testResumingALiveStreamOnASecondRelayProcess() throws {
        // 300 tokens at 100/s: 3 s, so the cut at 150 leaves 1.5 s of live generation.
        let a = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "100"])
        let b = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "100"])
        let reference = referenceText(maxTokens: 300)
        let token = RelayProcess.token()
        for cut in [1, 37, 150] {
            let id = Chat.newID()
            let first = try Chat.start(port: a.port, token: token, requestID: id, maxTokens: 300)
            var events: [SSEMessage] = []
            for _ in 0..<cut { events.append(try XCTUnwrap(try first.nextEvent())) }
            first.close()
            XCTAssertEqual(try redis.cli("HGET", streamKey(id, "meta"), "state"), "running", "cut \(cut): the stream is live at the resume")
            let rest = try Chat.resume(port: b.port, token: token, requestID: id, lastEventID: events.last!.lastEventId).readAll()
            events += rest
            assertSequence(events)
            XCTAssertEqual(Chat.text(events), reference, "text after a cut at \(cut) equals an uninterrupted run")
        }
    }

    func testRetriedPostWithSameRequestIDResumesInsteadOfStartingAgain() throws {
        let relay = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "300"])
        let id = Chat.newID()
        let token = RelayProcess.token()
        let first = try Chat.start(port: relay.port, token: token, requestID: id, maxTokens: 100)
        var events: [SSEMessage] = []
        for _ in 0..<10 { events.append(try XCTUnwrap(try first.nextEvent())) }
        first.close()
        let retry = try Chat.start(port: relay.port, token: token, requestID: id, maxTokens: 100,
                                   extraHeaders: [("Last-Event-ID", "10")])
        events += try retry.readAll()
        assertSequence(events)
        XCTAssertEqual(events.count, 101)
        // Without Last-Event-ID, a retried POST replays the stream from the start.
        let again = try Chat.start(port: relay.port, token: token, requestID: id, maxTokens: 100).readAll()
        XCTAssertEqual(again.map(\.data), events.map(\.data))
        XCTAssertEqual(try redis.cli("HGET", streamKey(id, "meta"), "last_seq"), "101")
        XCTAssertEqual(try generationsStarted([relay]), 1, "one generation only for the POST and its two retries")
    }

    func testStallBetweenSubscribeAndReplayLosesNothing() throws {
        let a = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "300"])
        let b = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "300", "RELAY_DEBUG_REPLAY_DELAY": "400ms"])
        let reference = referenceText(maxTokens: 400)
        let token = RelayProcess.token()
        let id = Chat.newID()
        let first = try Chat.start(port: a.port, token: token, requestID: id, maxTokens: 400)
        var events: [SSEMessage] = []
        for _ in 0..<20 { events.append(try XCTUnwrap(try first.nextEvent())) }
        first.close()
        events += try Chat.resume(port: b.port, token: token, requestID: id, lastEventID: "20").readAll()
        assertSequence(events)
        XCTAssertEqual(Chat.text(events), reference)
    }

    func testResumeErrors() throws {
        let relay = try startRelay(["RELAY_LOSSLESS_RESUME": "off", "RELAY_SIMULATED_TOKENS_PER_SECOND": "20000"])
        let token = RelayProcess.token()
        let id = Chat.newID()
        XCTAssertEqual(try Chat.start(port: relay.port, token: token, requestID: id, maxTokens: 300).readAll().count, 301)

        func status(_ path: String, _ headers: [(String, String)]) throws -> (Int, String?) {
            let r = try HTTPClient.request(port: relay.port, method: "GET", path: path, headers: headers)
            return (r.status, r.errorCode)
        }
        let auth = ("Authorization", "Bearer \(token)")
        let path = "/api/chat/stream/\(id)"
        XCTAssertEqual(try status(path, [auth, ("Last-Event-ID", "10")]).1, "resume_gap")
        XCTAssertEqual(try status(path, [auth, ("Last-Event-ID", "10")]).0, 409)
        // 301 events: the exact trim runs on every 8th seq (StreamTrim), the final
        // event's script trims to 200: 193…200 entries are retained.
        let oldest = try XCTUnwrap(EventLog.seq(ofEntryID: String(try redis.cli("XRANGE", streamKey(id, "events"), "-", "+", "COUNT", "1")
            .split(separator: "\n").first ?? "")))
        XCTAssertTrue((102...109).contains(oldest), "oldest retained \(oldest)")
        XCTAssertEqual(try status(path, [auth, ("Last-Event-ID", String(oldest - 2))]).1, "resume_gap")
        XCTAssertEqual(try status(path, [auth, ("Last-Event-ID", String(oldest - 1))]).0, 200, "oldest retained is \(oldest)")
        XCTAssertEqual(try status(path, [auth, ("Last-Event-ID", "302")]).1, "invalid_last_event_id")
        for bad in ["-1", "abc", "1.5", String(repeating: "9", count: 40), "0x10"] {
            let (s, code) = try status(path, [auth, ("Last-Event-ID", bad)])
            XCTAssertEqual(s, 400, bad)
            XCTAssertEqual(code, "invalid_last_event_id", bad)
        }
        XCTAssertEqual(try status("/api/chat/stream/\(Chat.newID())", [auth, ("Last-Event-ID", "3")]).1, "stream_not_found")
        XCTAssertEqual(try status(path, [("Authorization", "Bearer \(RelayProcess.token(sub: "mallory"))")]).0, 404,
                       "another user's stream is 404, never 403")
        XCTAssertEqual(try status(path, []).0, 401)
        XCTAssertEqual(try status("/api/chat/stream/short", [auth]).1, "invalid_request")
        XCTAssertEqual(try status("/api/chat/stream/" + String(repeating: "a", count: 65), [auth]).1, "invalid_request")
        XCTAssertEqual(try status("/api/chat/stream/abcdefghijklmnop%2Fqrs", [auth]).1, "invalid_request")
        // A POST resume of an unknown id never starts a stream under that id.
        let unknown = Chat.newID()
        let r = try HTTPClient.request(port: relay.port, method: "POST", path: "/api/chat/stream",
                                       headers: [auth, ("Content-Type", "application/json"), ("X-Request-Id", unknown), ("Last-Event-ID", "5")],
                                       body: Chat.body())
        XCTAssertEqual(r.status, 404)
        XCTAssertEqual(try redis.cli("EXISTS", streamKey(unknown, "meta")), "0")
    }

    /// On one relay with two workers, short answers are cancelled (DELETE) at random
    /// moments around their final event while a resume from 0 races the generation
    /// (landing on the owning worker or the other): every client gets one contiguous
    /// sequence that ends with exactly one terminal event, and both clients of a
    /// stream get the same events.
    func testCancelsRacingTheFinalEventAndResumesOnEitherWorker() throws {
        let a = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "400", "RELAY_WORKERS": "2"])
        for round in 0..<24 {
            let token = RelayProcess.token()
            let id = Chat.newID()
            let poster = try Chat.start(port: a.port, token: token, requestID: id, maxTokens: 8)
            let first = try XCTUnwrap(try poster.nextEvent(), "round \(round)")
            usleep(UInt32.random(in: 0...25_000))   // pacing on purpose: the cancel and resume land at a random moment around the final event
            let resume = try Chat.resume(port: a.port, token: token, requestID: id, lastEventID: "0")
            if round % 2 == 0 {
                _ = try HTTPClient.request(port: a.port, method: "DELETE", path: "/api/chat/stream/\(id)",
                                           headers: [("Authorization", "Bearer \(token)")])
            }
            let posted = [first] + (try poster.readAll(timeout: 10))
            let resumed = try resume.readAll(timeout: 10)
            assertSequence(posted)
            assertSequence(resumed)
            for evs in [posted, resumed] {
                XCTAssertEqual(evs.filter(isTerminal).count, 1, "round \(round): one terminal event")
                XCTAssertTrue(evs.last.map(isTerminal) == true, "round \(round): the terminal event is last")
            }
            XCTAssertEqual(posted.map(\.data), resumed.map(\.data), "round \(round): both clients got the same events")
        }
    }
}
