import Foundation
import RelayAuth
import RelayCore
import RelayRedis
import RelayTestKit
import RelayTestSupport
import XCTest
import RelayCluster

/// Resumes older than the 200-event window still lose nothing (docs/LOSSLESS_RESUME.md);
/// the catch-up counter counts the events read back from the text.
final class LosslessResumeTests: RelayTestCase {
    /// Text of events 1…k of `events` (k = 0: nothing).
    func prefix(_ events: [SSEMessage], _ k: Int) -> String { Chat.text(Array(events.prefix(k))) }

    func testFinishedThreeThousandEventStreamFromAnyPosition() throws {
        let relay = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "50000"])
        let token = RelayProcess.token()
        let id = Chat.newID()
        let all = try Chat.start(port: relay.port, token: token, requestID: id).readAll()
        XCTAssertGreaterThanOrEqual(all.count, 3000)
        let reference = Chat.text(all)
        let n = all.count
        var positions = [0, 1, 150, 2799, 2800, 2999, n - 201, n - 200, n - 1, n]
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<20 { positions.append(Int.random(in: 0...n, using: &rng)) }
        // The stream keeps at most 200 entries and at least 193 (StreamTrim: the exact
        // trim runs on every 8th event); the final event's script trims to 200.
        let retained = Int(try redis.cli("XLEN", streamKey(id, "events"))) ?? 0
        XCTAssertTrue((193...200).contains(retained), "retained \(retained)")
        for k in positions {
            let rest = try Chat.resume(port: relay.port, token: token, requestID: id, lastEventID: String(k)).readAll()
            XCTAssertEqual(prefix(all, k) + Chat.text(rest), reference, "resume from \(k)")
            // Behind the window or inside it: every event after k as it was streamed.
            XCTAssertEqual(rest.map(\.lastEventId), all[k...].map(\.lastEventId), "resume from \(k): every id once")
            XCTAssertTrue(rest.map(\.data) == all[k...].map(\.data), "resume from \(k): the same events")
        }
    }

    func testLiveStreamAcrossTwoRelaysAfterTheWindowMoved() throws {
        let a = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "800"])
        let b = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "800"])
        let reference = referenceText()
        let token = RelayProcess.token()
        let id = Chat.newID()
        let first = try Chat.start(port: a.port, token: token, requestID: id)
        var events: [SSEMessage] = []
        for _ in 0..<50 { events.append(try XCTUnwrap(try first.nextEvent())) }
        first.close()
        try eventually(20, "the window to move past the client") {
            try topSeq(id) > 50 + 400
        }
        // "Live": the generation is still running when the resume arrives (3,000 tokens
        // at 800/s take ~3.7 s; the window moves past event 50 after ~0.6 s).
        XCTAssertEqual(try redis.cli("HGET", streamKey(id, "meta"), "state"), "running", "the stream is still live at the resume")
        let rest = try Chat.resume(port: b.port, token: token, requestID: id, lastEventID: "50").readAll()
        XCTAssertEqual(rest.first?.lastEventId, "51", "the first missed event, at its own id")
        XCTAssertEqual(Chat.text(events) + Chat.text(rest), reference)
        let ids = rest.compactMap { Int($0.lastEventId) }
        XCTAssertEqual(ids, Array(51...ids.last!), "no gap or duplicate through the catch-up")
        // The events read back from the text are counted, each once.
        let caughtUp = try XCTUnwrap(try metric(b, "relay_catch_up_events_total"))
        XCTAssertGreaterThan(caughtUp, 0, "events behind the window came back from the text")
        XCTAssertLessThan(caughtUp, Double(ids.count), "the window's own events are not counted")
        XCTAssertEqual(try metric(a, "relay_catch_up_events_total"), 0)
    }

    func testArabicAnswerMidWordBoundaries() throws {
        let relay = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "50000"])
        let token = RelayProcess.token()
        let id = Chat.newID()
        let all = try Chat.start(port: relay.port, token: token, requestID: id, model: "simulated-ar").readAll()
        let reference = Chat.text(all)
        XCTAssertEqual(reference, referenceText(model: "simulated-ar"), "the relay's text is the document's own")
        XCTAssertTrue(reference.unicodeScalars.contains { (0x0600...0x06FF).contains($0.value) })
        // Cuts that fall inside a word: event k ends with an Arabic letter and event k+1
        // starts with one (the word continues across the cut).
        func isArabicLetter(_ s: Unicode.Scalar?) -> Bool {
            guard let s else { return false }
            return (0x0621...0x064A).contains(s.value) || (0x064B...0x0652).contains(s.value)
        }
        let deltas = all.map { (try? StreamEvent(json: $0.data)).flatMap { if case .delta(let t) = $0 { return t } else { return nil } } ?? "" }
        let midWord = (1..<(deltas.count - 1)).filter {
            isArabicLetter(deltas[$0 - 1].unicodeScalars.last) && isArabicLetter(deltas[$0].unicodeScalars.first)
        }
        XCTAssertGreaterThanOrEqual(midWord.count, 3, "the Arabic answer has cuts inside words")
        let cuts = [midWord[0], midWord[midWord.count / 2], midWord[midWord.count - 1]]
        for k in cuts {
            XCTAssertTrue(isArabicLetter(prefix(all, k).unicodeScalars.last), "cut \(k) is mid-word")
        }
        for k in [0, 3, 77, 500, all.count - 250] + cuts {
            let rest = try Chat.resume(port: relay.port, token: token, requestID: id, lastEventID: String(k)).readAll()
            XCTAssertEqual(prefix(all, k) + Chat.text(rest), reference, "Arabic resume from \(k)")
        }
    }

    // The catch-up script against emoji, ZWJ sequences and Arabic diacritics, driven by
    // the appender itself: `AppendTests.testTheCapStaysExactAndTheCatchUpByteExact`.

    func testTextGoneOrFeatureOffIs409AndExpiredStreamIs404() throws {
        // Without answer retention (PROTOCOL.md §6.5), which would answer the expired,
        // finished stream from its record (AnswerRetentionTests).
        let relay = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "50000", "RELAY_BUFFER_TTL": "2s", "RELAY_ANSWER_RETENTION": "0"])
        let token = RelayProcess.token()
        let id = Chat.newID()
        XCTAssertEqual(try Chat.start(port: relay.port, token: token, requestID: id, maxTokens: 500).readAll().count, 501)
        let auth = ("Authorization", "Bearer \(token)")
        let ok = try HTTPClient.request(port: relay.port, method: "GET", path: "/api/chat/stream/\(id)", headers: [auth, ("Last-Event-ID", "5")])
        XCTAssertEqual(ok.status, 200)
        try redis.cli("DEL", streamKey(id, "text"))
        let gap = try HTTPClient.request(port: relay.port, method: "GET", path: "/api/chat/stream/\(id)", headers: [auth, ("Last-Event-ID", "5")])
        XCTAssertEqual(gap.status, 409)
        XCTAssertEqual(gap.errorCode, "resume_gap")
        try eventually(6, "the stream's TTL to pass") { try redis.cli("EXISTS", streamKey(id, "meta")) == "0" }
        let gone = try HTTPClient.request(port: relay.port, method: "GET", path: "/api/chat/stream/\(id)", headers: [auth, ("Last-Event-ID", "5")])
        XCTAssertEqual(gone.status, 404, "after the TTL nothing is left: stream_not_found")

        // The feature turned off: no text key is written, and a resume from behind the
        // events window (RELAY_BUFFER_EVENTS) is 409 resume_gap, while one inside the
        // window still works.
        let off = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "50000", "RELAY_LOSSLESS_RESUME": "off",
                                  "RELAY_BUFFER_EVENTS": "50"])
        let offID = Chat.newID()
        XCTAssertEqual(try Chat.start(port: off.port, token: token, requestID: offID, maxTokens: 500).readAll().count, 501)
        XCTAssertEqual(try redis.cli("EXISTS", streamKey(offID, "text")), "0", "feature off: no text is kept")
        let offGap = try HTTPClient.request(port: off.port, method: "GET", path: "/api/chat/stream/\(offID)", headers: [auth, ("Last-Event-ID", "5")])
        XCTAssertEqual(offGap.status, 409, "feature off, behind the window: \(offGap.text)")
        XCTAssertEqual(offGap.errorCode, "resume_gap")
        let inWindow = try Chat.resume(port: off.port, token: token, requestID: offID, lastEventID: "480").readAll()
        XCTAssertEqual(inWindow.count, 21, "feature off, inside the window: events 481…501")
    }

    func testRedisMemoryPerStreamWithAndWithoutTheFeature() throws {
        var usage: [String: Int] = [:]
        for mode in ["on", "off"] {
            let relay = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "50000", "RELAY_LOSSLESS_RESUME": mode])
            let id = Chat.newID()
            _ = try Chat.start(port: relay.port, token: RelayProcess.token(), requestID: id).readAll()
            var total = 0
            for key in ["events", "meta", "text", "offsets"].map({ streamKey(id, $0) }) {
                total += Int(try redis.cli("MEMORY", "USAGE", key, "SAMPLES", "0")) ?? 0
            }
            usage[mode] = total
        }
        print("Redis memory per finished 3,000-token stream: lossless on \(usage["on"]!) bytes, off \(usage["off"]!) bytes")
        XCTAssertGreaterThan(usage["on"]!, usage["off"]!)
    }

    /// The catch-up counter (`relay_catch_up_events_total`): a finished stream
    /// resumed from many positions behind the retained window; a resume from k reads events
    /// k+1 … (first retained − 1) back from the text and counts each of them; a resume
    /// inside the window counts nothing.
    func testCatchUpCounterCountsEveryEventReadBackFromTheText() throws {
        let relay = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "50000", "RELAY_BUFFER_EVENTS": "60",
                                    "RELAY_WORKERS": "2"])
        let token = RelayProcess.token()
        let id = Chat.newID()
        let all = try Chat.start(port: relay.port, token: token, requestID: id, maxTokens: 700).readAll()
        let n = all.count
        XCTAssertEqual(n, 701)
        XCTAssertEqual(try metric(relay, "relay_catch_up_events_total"), 0, "nothing caught up yet")
        let retained = Int(try redis.cli("XLEN", streamKey(id, "events"))) ?? 0
        XCTAssertGreaterThan(retained, 0)
        let firstRetained = n - retained + 1
        let reference = Chat.text(all)
        var expected = 0
        for k in [0, 1, 2, firstRetained - 3, firstRetained - 2, firstRetained - 1, firstRetained, n - 1, n, 317] {
            let rest = try Chat.resume(port: relay.port, token: token, requestID: id, lastEventID: String(k)).readAll()
            XCTAssertEqual(Chat.text(Array(all.prefix(k))) + Chat.text(rest), reference, "resume from \(k)")
            XCTAssertEqual(rest.map(\.lastEventId), all[k...].map(\.lastEventId), "resume from \(k): every event at its own id")
            if k < firstRetained - 1 { expected += firstRetained - 1 - k }
            try eventually(5, "the counter after the resume from \(k)") {
                try metric(relay, "relay_catch_up_events_total") == Double(expected)
            }
        }
        XCTAssertEqual(try metric(relay, "relay_catch_up_events_total"), Double(expected))
        XCTAssertEqual(try metric(relay, "relay_deltas_merged_total"), 0, "no slow-link merge counted")
    }

    /// End to end on a Redis Cluster: relays with a 40-event window; the
    /// stream's slot migrates key by key while it is generated (text writes in flight:
    /// ASK / MOVED resends of the binary offsets); then the finished stream is resumed on
    /// the other relay from every position, most of them behind the window (a lossless
    /// catch-up reading the migrated offsets): every resume's text completes the answer
    /// byte for byte, and the catch-up counter is the sum of k - 1 over the catch-ups.
    func testResumesBehindTheWindowAfterASlotMigrationOnAClusterAreExact() throws {
        let cluster = try RedisCluster(primaries: 3)
        defer { cluster.stop() }
        func relay(_ rate: String) throws -> RelayProcess {
            let r = try RelayProcess(redisURL: cluster.url, env: ["RELAY_SIMULATED_TOKENS_PER_SECOND": rate, "RELAY_BUFFER_EVENTS": "40",
                                                                  "RELAY_COALESCE_BACKLOG": "0"])
            addTeardownBlock { r.kill9() }
            return r
        }
        let a = try relay("150"), b = try relay("150")
        let maxTokens = 300
        let reference = referenceText(maxTokens: maxTokens)
        let sub = "migrating-cluster-user"
        let token = RelayProcess.token(sub: sub)
        let id = Chat.newID()
        let key = { (part: String) in "relay:{\(OwnerHash.of(sub)):\(id)}:\(part)" }
        let slot = HashSlot.of(key("meta"))
        let from = try cluster.primaryPort(forSlot: slot)
        let to = try XCTUnwrap(try cluster.primaries(askingPort: from).keys.first { $0 != from })
        let c = try Chat.start(port: a.port, token: token, requestID: id, maxTokens: maxTokens)
        var events: [SSEMessage] = []
        while events.count < 60, let e = try c.nextEvent() { events.append(e) }
        let moved = try cluster.migrate(slot: slot, to: to, pauseMs: 200)
        XCTAssertGreaterThanOrEqual(moved, 3, "the stream's keys were migrated one by one")
        let midway = events.count
        events += try c.readAll(timeout: 30)
        XCTAssertLessThan(midway, events.count - 40, "the stream ran on well past the migration")
        XCTAssertEqual(Chat.text(events), reference, "the live answer")
        let n = events.count
        XCTAssertEqual(n, maxTokens + 1)
        XCTAssertEqual(try cluster.primaryPort(forSlot: slot), to)
        let retained = Int(try cluster.cli(to, ["XLEN", key("events")])) ?? 0
        XCTAssertTrue((1...40).contains(retained), "retained \(retained)")
        let firstRetained = n - retained + 1
        let before = try metric(b, "relay_catch_up_events_total") ?? -1
        var expected = before
        var wrong: [Int] = []
        for k in 0...n {
            let rest = try Chat.resume(port: b.port, token: token, requestID: id, lastEventID: String(k)).readAll()
            if Chat.text(Array(events.prefix(k))) + Chat.text(rest) != reference { wrong.append(k) }
            if rest.map(\.data) != events[k...].map(\.data) || rest.first.map({ $0.lastEventId != String(k + 1) }) == true { wrong.append(-k) }
            if k < firstRetained - 1 { expected += Double(firstRetained - 1 - k) }
        }
        XCTAssertEqual(wrong, [], "resumes whose text is wrong (negative: whose events differ from the streamed ones)")
        try eventually(5, "the catch-up counter") { try metric(b, "relay_catch_up_events_total") == expected }
        XCTAssertEqual(try metric(b, "relay_catch_up_events_total"), expected)
        print("lossless resume after a slot migration: \(moved) keys moved, first retained \(firstRetained), events caught up \(expected)")
    }
}
