import Foundation
import RelayAuth
import RelayCore
import RelayTestKit
import RelayTestSupport
import XCTest

/// Finished answers are kept for `RELAY_ANSWER_RETENTION` (docs/PROTOCOL.md §6.5, §9.6,
/// docs/DATA_MODEL.md §14): once a stream's events expired (a 1 s `RELAY_BUFFER_TTL` here), a
/// resume from any `Last-Event-ID` gets exactly the rest of the answer as one delta (id
/// final − 1) and the original `done`; `GET /api/chat/answers/{id}` returns the record; the
/// owner, revocation, the cap, retention 0 and the admin erase by `sub` hold.
final class AnswerRetentionTests: RelayTestCase {
    static let adminKey = "admin-key-for-retention-tests-0123"

    private func startRetainingRelay(_ env: [String: String] = [:]) throws -> RelayProcess {
        var e = ["RELAY_BUFFER_TTL": "1s", "RELAY_ADMIN_KEY": Self.adminKey]
        for (k, v) in env { e[k] = v }
        return try startRelay(e)
    }

    /// Runs an answer to its end and waits until its stream's keys expired.
    private func finishedAndExpired(_ relay: RelayProcess, token: String, sub: String = "alice", maxTokens: Int,
                                    id: String = Chat.newID()) throws -> (id: String, events: [SSEMessage]) {
        let events = try Chat.start(port: relay.port, token: token, requestID: id, maxTokens: maxTokens).readAll()
        assertSequence(events)
        try eventually(10, "the stream's keys to expire") {
            (try? redis.cli("EXISTS", streamKey(id, "meta", sub: sub), streamKey(id, "events", sub: sub))) == "0"
        }
        return (id, events)
    }

    private func get(_ relay: RelayProcess, _ path: String, token: String) throws -> HTTPResponse {
        try HTTPClient.request(port: relay.port, method: "GET", path: path, headers: [("Authorization", "Bearer \(token)")])
    }

    func testResumeAfterTheEventsExpiredGetsExactlyTheRestFromEveryPosition() throws {
        let relay = try startRetainingRelay()
        let token = RelayProcess.token()
        let (id, all) = try finishedAndExpired(relay, token: token, maxTokens: 60)
        XCTAssertEqual(all.count, 61)
        let reference = referenceText(maxTokens: 60)
        XCTAssertEqual(Chat.text(all), reference)
        for k in [0, 1, 2, 17, 30, 58, 59] {
            let rest = try Chat.resume(port: relay.port, token: token, requestID: id, lastEventID: String(k))
            XCTAssertEqual(rest.status, 200, "resume from \(k)")
            let got = try rest.readAll()
            // The events as they were streamed: the same ids and the same data, from k + 1 to done.
            XCTAssertEqual(got.map(\.lastEventId), all[k...].map(\.lastEventId), "every event after \(k), with its own id")
            XCTAssertEqual(got.map(\.data), all[k...].map(\.data), "the same events after \(k)")
            XCTAssertEqual(got.last?.data, all.last?.data, "the original done")
            // A kit that has events 1…k appends the rest: the whole answer, nothing twice.
            XCTAssertEqual(Chat.text(Array(all[..<k])) + Chat.text(got), reference, "from \(k)")
        }
        let onlyDone = try Chat.resume(port: relay.port, token: token, requestID: id, lastEventID: "60").readAll()
        XCTAssertEqual(onlyDone.map(\.lastEventId), ["61"], "the client has every delta: only done")
        XCTAssertEqual(onlyDone.map(\.data), [all.last!.data])
        let atEnd = try HTTPClient.request(port: relay.port, method: "GET", path: "/api/chat/stream/\(id)",
                                           headers: [("Authorization", "Bearer \(token)"), ("Last-Event-ID", "61")])
        XCTAssertEqual(atEnd.status, 204, "a resume from the final event is 204, as for a stream within its TTL")
        let beyond = try HTTPClient.request(port: relay.port, method: "GET", path: "/api/chat/stream/\(id)",
                                            headers: [("Authorization", "Bearer \(token)"), ("Last-Event-ID", "62")])
        XCTAssertEqual(beyond.status, 400)
        XCTAssertTrue(beyond.text.contains("invalid_last_event_id"))
        XCTAssertGreaterThanOrEqual(try metric(relay, "relay_resumes_total{outcome=\"retained\"}") ?? 0, 8)
        XCTAssertEqual(try metric(relay, "relay_answers_retained_total"), 1)
    }

    /// Offset reads (docs/PROTOCOL.md §12, the long-poll kits' reads) of an expired, retained
    /// answer get the same events as the stream had, as a JSON array, closed.
    func testOffsetReadsAfterTheEventsExpiredGetTheRestAndTheDone() throws {
        let relay = try startRetainingRelay()
        let token = RelayProcess.token()
        let (id, all) = try finishedAndExpired(relay, token: token, maxTokens: 30)
        for (query, k) in [("offset=-1", 0), ("offset=7", 7), ("offset=7&live=long-poll", 7), ("offset=29", 29), ("offset=30", 30)] {
            let r = try get(relay, "/api/chat/stream/\(id)?\(query)", token: token)
            XCTAssertEqual(r.status, 200, query)
            XCTAssertEqual(r.header("Stream-Closed"), "true", query)
            let array = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(r.text.utf8)) as? [[String: Any]], r.text)
            let texts = array.compactMap { $0["type"] as? String == "delta" ? $0["content"] as? String : nil }
            XCTAssertEqual(texts.joined(), Chat.text(Array(all[k...])), query)
            XCTAssertEqual(array.last?["type"] as? String, "done", query)
            XCTAssertEqual(array.count, 31 - k, "every event after the offset, as streamed: \(query)")
            let streamed = try all[k...].map { try XCTUnwrap(JSONSerialization.jsonObject(with: Data($0.data.utf8)) as? [String: Any]) }
            XCTAssertEqual(array.map { $0["content"] as? String }, streamed.map { $0["content"] as? String }, query)
        }
        let closed = try get(relay, "/api/chat/stream/\(id)?offset=31&live=long-poll", token: token)
        XCTAssertEqual(closed.status, 204)
        XCTAssertEqual(closed.header("Stream-Closed"), "true")
        let head = try HTTPClient.request(port: relay.port, method: "HEAD", path: "/api/chat/stream/\(id)?offset=31&live=long-poll",
                                          headers: [("Authorization", "Bearer \(token)")])
        XCTAssertEqual(head.status, 204, "a HEAD answers as its GET does")
        XCTAssertEqual(head.header("Stream-Closed"), "true")
        XCTAssertEqual(try get(relay, "/api/chat/stream/\(id)?offset=32", token: token).status, 400)
        XCTAssertEqual(try get(relay, "/api/chat/stream/\(id)?offset=3", token: RelayProcess.token(sub: "bob")).status, 404)
    }

    func testGetAnswerReturnsTheRecordAsJSONToItsOwnerOnly() throws {
        let relay = try startRetainingRelay()
        let token = RelayProcess.token()
        let (id, all) = try finishedAndExpired(relay, token: token, maxTokens: 40)
        let r = try get(relay, "/api/chat/answers/\(id)", token: token)
        XCTAssertEqual(r.status, 200)
        // One `Cache-Control` field (RFC 9111 §5.2): the record is never stored by a cache.
        XCTAssertEqual(r.headers.filter { $0.0.lowercased() == "cache-control" }.map(\.1), ["no-store"])
        let obj = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(r.text.utf8)) as? [String: Any])
        XCTAssertEqual(obj["requestId"] as? String, id)
        XCTAssertEqual(obj["text"] as? String, referenceText(maxTokens: 40))
        XCTAssertEqual(obj["final_seq"] as? Int, 41)
        let done = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(all.last!.data.utf8)) as? [String: Any])
        XCTAssertEqual(obj["finish_reason"] as? String, done["finish_reason"] as? String)
        XCTAssertEqual(obj["usage"] as? [String: Int], done["usage"] as? [String: Int])
        let created = try XCTUnwrap(obj["created_ms"] as? Int), finished = try XCTUnwrap(obj["finished_ms"] as? Int)
        let now = Int(Date().timeIntervalSince1970 * 1000)
        XCTAssertTrue(created <= finished && finished <= now && now - created < 120_000, "times \(created) \(finished) \(now)")
        // Another user naming the same id: 404 on both routes, never 403.
        let bob = RelayProcess.token(sub: "bob")
        XCTAssertEqual(try get(relay, "/api/chat/answers/\(id)", token: bob).status, 404)
        XCTAssertEqual(try Chat.resume(port: relay.port, token: bob, requestID: id, lastEventID: "3").status, 404)
        XCTAssertEqual(try get(relay, "/api/chat/answers/\(Chat.newID())", token: token).status, 404)
        XCTAssertEqual(try get(relay, "/api/chat/answers/short", token: token).status, 400)
        XCTAssertEqual(try get(relay, "/api/chat/answers/\(id)", token: "not-a-token").status, 401)
        // HEAD gets GET's status and headers without a body, and is not counted.
        let head = try HTTPClient.request(port: relay.port, method: "HEAD", path: "/api/chat/answers/\(id)",
                                          headers: [("Authorization", "Bearer \(token)")])
        XCTAssertEqual(head.status, 200)
        XCTAssertEqual(head.text, "")
        let headResume = try HTTPClient.request(port: relay.port, method: "HEAD", path: "/api/chat/stream/\(id)",
                                                headers: [("Authorization", "Bearer \(token)"), ("Last-Event-ID", "4")])
        XCTAssertEqual(headResume.status, 200)
        XCTAssertEqual(headResume.header("Content-Type")?.hasPrefix("text/event-stream"), true)
        XCTAssertEqual(headResume.text, "")
        XCTAssertEqual(try HTTPClient.request(port: relay.port, method: "DELETE", path: "/api/chat/answers/\(id)",
                                              headers: [("Authorization", "Bearer \(token)")]).status, 405)
        XCTAssertEqual(try metric(relay, "relay_answer_reads_total"), 1)
    }

    func testARevokedSessionGets401FromTheRecord() throws {
        let relay = try startRetainingRelay()
        let sid = "s-retained-" + UUID().uuidString
        let token = RelayProcess.token(sid: sid)
        let (id, _) = try finishedAndExpired(relay, token: token, maxTokens: 10)
        XCTAssertEqual(try get(relay, "/api/chat/answers/\(id)", token: token).status, 200)
        XCTAssertEqual(try HTTPClient.request(port: relay.port, method: "POST", path: "/admin/sessions/\(sid)/revoke",
                                              headers: [("Authorization", "Bearer \(Self.adminKey)")]).status, 202)
        XCTAssertEqual(try get(relay, "/api/chat/answers/\(id)", token: token).status, 401)
        XCTAssertEqual(try Chat.resume(port: relay.port, token: token, requestID: id, lastEventID: "2").status, 401)
        // The same user's other sessions still read it.
        XCTAssertEqual(try get(relay, "/api/chat/answers/\(id)", token: RelayProcess.token()).status, 200)
    }

    func testRetentionZeroKeepsNothingAndAResumeIs404() throws {
        let relay = try startRetainingRelay(["RELAY_ANSWER_RETENTION": "0"])
        let token = RelayProcess.token()
        let (id, _) = try finishedAndExpired(relay, token: token, maxTokens: 10)
        XCTAssertEqual(try redis.cli("EXISTS", streamKey(id, "answer")), "0")
        let r = try Chat.resume(port: relay.port, token: token, requestID: id, lastEventID: "3")
        XCTAssertEqual(r.status, 404)
        XCTAssertEqual(try get(relay, "/api/chat/answers/\(id)", token: token).status, 404)
        XCTAssertEqual(try metric(relay, "relay_answers_retained_total"), 0)
    }

    func testTheRecordLivesForTheRetentionAndIsIndexedForItsOwner() throws {
        let relay = try startRetainingRelay(["RELAY_ANSWER_RETENTION": "2h"])
        let token = RelayProcess.token()
        let (id, _) = try finishedAndExpired(relay, token: token, maxTokens: 10)
        let ttl = try XCTUnwrap(Int(try redis.cli("PTTL", streamKey(id, "answer"))))
        XCTAssertTrue(ttl > 7_000_000 && ttl <= 7_200_000, "PTTL \(ttl) ms of a 2 h retention")
        let index = "relay:answers:{\(OwnerHash.of("alice"))}"
        XCTAssertEqual(try redis.cli("ZRANGE", index, "0", "-1"), id)
        let indexTTL = try XCTUnwrap(Int(try redis.cli("PTTL", index)))
        XCTAssertTrue(indexTTL > 7_000_000 && indexTTL <= 7_200_000, "index PTTL \(indexTTL)")
    }

    func testAdminEraseBySubDeletesThatUsersRetainedAnswersOnly() throws {
        let relay = try startRetainingRelay()
        let alice = RelayProcess.token()
        let bobToken = RelayProcess.token(sub: "bob")
        let a1 = try finishedAndExpired(relay, token: alice, maxTokens: 10).id
        let a2 = try finishedAndExpired(relay, token: alice, maxTokens: 12).id
        let b1 = try finishedAndExpired(relay, token: bobToken, sub: "bob", maxTokens: 10).id
        let path = "/admin/users/alice/answers/erase"
        XCTAssertEqual(try HTTPClient.request(port: relay.port, method: "POST", path: path).status, 401, "admin key required")
        XCTAssertEqual(try HTTPClient.request(port: relay.port, method: "GET", path: path,
                                              headers: [("Authorization", "Bearer \(Self.adminKey)")]).status, 405)
        let erase = try HTTPClient.request(port: relay.port, method: "POST", path: path,
                                           headers: [("Authorization", "Bearer \(Self.adminKey)")])
        XCTAssertEqual(erase.status, 200)
        XCTAssertEqual(erase.text, "{\"erased\":2}")
        for id in [a1, a2] {
            XCTAssertEqual(try get(relay, "/api/chat/answers/\(id)", token: alice).status, 404)
            XCTAssertEqual(try Chat.resume(port: relay.port, token: alice, requestID: id, lastEventID: "1").status, 404)
        }
        XCTAssertEqual(try redis.cli("EXISTS", "relay:answers:{\(OwnerHash.of("alice"))}"), "0", "the index is emptied")
        XCTAssertEqual(try get(relay, "/api/chat/answers/\(b1)", token: bobToken).status, 200, "another user's answer stays")
        let again = try HTTPClient.request(port: relay.port, method: "POST", path: path,
                                           headers: [("Authorization", "Bearer \(Self.adminKey)")])
        XCTAssertEqual(again.text, "{\"erased\":0}")
        XCTAssertEqual(try metric(relay, "relay_answers_erased_total"), 2)
    }

    /// An erase within `RELAY_BUFFER_TTL` of the answer's end also deletes the stream's
    /// stored request (the user's messages, kept for a takeover: docs/DATA_MODEL.md §6.1)
    /// and every other key of the stream, not only the record.
    func testAdminEraseRightAfterTheAnswerDeletesItsStoredRequestToo() throws {
        let relay = try startRelay(["RELAY_BUFFER_TTL": "300s", "RELAY_ADMIN_KEY": Self.adminKey])
        let alice = RelayProcess.token()
        let id = Chat.newID()
        assertSequence(try Chat.start(port: relay.port, token: alice, requestID: id, maxTokens: 10).readAll())
        XCTAssertEqual(try redis.cli("EXISTS", streamKey(id, "request")), "1", "a takeover's stored request is kept after the end")
        let erase = try HTTPClient.request(port: relay.port, method: "POST", path: "/admin/users/alice/answers/erase",
                                           headers: [("Authorization", "Bearer \(Self.adminKey)")])
        XCTAssertEqual(erase.text, "{\"erased\":1}")
        try eventually(5, "every key of the erased answer's stream to be deleted") {
            let keys = ["answer", "events", "meta", "text", "offsets", "request", "delivered"].map { streamKey(id, $0) }
            return (try? redis.cli(["EXISTS"] + keys)) == "0"
        }
    }

    func testAnAnswerOverTheCapIsNotRetained() throws {
        // The cap sits between a 5-token and a 60-token answer's record body (text plus
        // about 4/3 of a byte per delta).
        let small = referenceText(maxTokens: 5).utf8.count + 8
        let large = referenceText(maxTokens: 60).utf8.count
        let cap = small + 16
        XCTAssertLessThan(cap, large)
        let relay = try startRetainingRelay(["RELAY_ANSWER_RETENTION_MAX_BYTES": String(cap)])
        let token = RelayProcess.token()
        let (big, _) = try finishedAndExpired(relay, token: token, maxTokens: 60)
        let (little, _) = try finishedAndExpired(relay, token: token, maxTokens: 5)
        XCTAssertEqual(try redis.cli("EXISTS", streamKey(big, "answer")), "0", "over the cap: not retained")
        XCTAssertEqual(try Chat.resume(port: relay.port, token: token, requestID: big, lastEventID: "3").status, 404)
        XCTAssertEqual(try get(relay, "/api/chat/answers/\(little)", token: token).status, 200)
        XCTAssertEqual(try metric(relay, "relay_answers_not_retained_total{reason=\"oversize\"}"), 1)
        XCTAssertEqual(try metric(relay, "relay_answers_retained_total"), 1)
    }

    func testACancelledAnswerIsRetainedWithItsCancelledDone() throws {
        let relay = try startRetainingRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "50"])
        let token = RelayProcess.token()
        let id = Chat.newID()
        let c = try Chat.start(port: relay.port, token: token, requestID: id, maxTokens: 2000)
        var events: [SSEMessage] = []
        for _ in 0..<5 { events.append(try XCTUnwrap(try c.nextEvent())) }
        XCTAssertEqual(try HTTPClient.request(port: relay.port, method: "DELETE", path: "/api/chat/stream/\(id)",
                                              headers: [("Authorization", "Bearer \(token)")]).status, 202)
        events += try c.readAll()
        assertSequence(events)
        XCTAssertTrue(events.last!.data.contains("\"cancelled\""))
        try eventually(10, "the stream's keys to expire") { (try? redis.cli("EXISTS", streamKey(id, "meta"))) == "0" }
        let r = try get(relay, "/api/chat/answers/\(id)", token: token)
        XCTAssertEqual(r.status, 200)
        XCTAssertTrue(r.text.contains("\"finish_reason\":\"cancelled\""), r.text)
        let rest = try Chat.resume(port: relay.port, token: token, requestID: id, lastEventID: "0").readAll()
        XCTAssertEqual(Chat.text(rest), Chat.text(events))
        XCTAssertEqual(rest.last?.data, events.last?.data)
    }

    /// Redis memory of one retained record of the built-in 3,000-token draft, for
    /// docs/DATA_MODEL.md §14 (`MEMORY USAGE … SAMPLES 0`): bounded by the text, the
    /// lengths' base64 and a small fixed overhead.
    func testRedisMemoryOfTheRetainedThreeThousandTokenDraft() throws {
        let relay = try startRetainingRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "20000", "RELAY_BUFFER_TTL": "300s"])
        let token = RelayProcess.token()
        let id = Chat.newID()
        let events = try Chat.start(port: relay.port, token: token, requestID: id, maxTokens: 3000).readAll()
        let textBytes = Chat.text(events).utf8.count
        let record = try XCTUnwrap(Int(try redis.cli("STRLEN", streamKey(id, "answer"))))
        let memory = try XCTUnwrap(Int(try redis.cli("MEMORY", "USAGE", streamKey(id, "answer"), "SAMPLES", "0")))
        var stream = 0
        for part in ["events", "meta", "text", "offsets"] {
            stream += Int(try redis.cli("MEMORY", "USAGE", streamKey(id, part), "SAMPLES", "0")) ?? 0
        }
        print("retained answer: \(events.count) events, \(textBytes) text bytes, record \(record) bytes, MEMORY USAGE \(memory) bytes; the stream's own keys \(stream) bytes")
        let deltas = events.count - 1
        XCTAssertGreaterThanOrEqual(record, textBytes + deltas)
        XCTAssertLessThanOrEqual(record, textBytes + (deltas * 2 + 2) / 3 * 4 + 512)
        // jemalloc size classes round a large allocation up by at most a quarter.
        XCTAssertLessThan(memory, record + record / 4 + 256)
    }
}
