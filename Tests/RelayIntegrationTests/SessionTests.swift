import Foundation
import RelayCore
import RelayTestSupport
import XCTest

/// Sessions (docs/TOKENS.md, docs/PROTOCOL.md "Budgets, sessions and models"): JWT on
/// every connect, revocation across instances, expiry, budgets.
final class SessionTests: RelayTestCase {
    static let adminKey = "admin-key-for-tests-0123456789"

    func adminRelay(_ env: [String: String] = [:]) throws -> RelayProcess {
        var e = ["RELAY_ADMIN_KEY": SessionTests.adminKey]
        for (k, v) in env { e[k] = v }
        return try startRelay(e)
    }

    func revoke(_ relay: RelayProcess, sid: String, key: String = SessionTests.adminKey) throws -> HTTPResponse {
        try HTTPClient.request(port: relay.port, method: "POST", path: "/admin/sessions/\(sid)/revoke",
                               headers: [("Authorization", "Bearer \(key)")])
    }

    func testOtherUsersIdsAreTheirOwnStreams() throws {
        let relay = try startRelay()
        let id = Chat.newID()
        let alice = try Chat.start(port: relay.port, token: RelayProcess.token(sub: "alice"), requestID: id, maxTokens: 5).readAll()
        let bob = ("Authorization", "Bearer \(RelayProcess.token(sub: "bob"))")
        XCTAssertEqual(try HTTPClient.request(port: relay.port, method: "GET", path: "/api/chat/stream/\(id)", headers: [bob]).status, 404)
        // Another user's DELETE of alice's id answers as for an id it never used (a cancel marker
        // of its own, docs/PROTOCOL.md §7) and stops nothing of alice's.
        let carol = ("Authorization", "Bearer \(RelayProcess.token(sub: "carol"))")
        let carols = try HTTPClient.request(port: relay.port, method: "DELETE", path: "/api/chat/stream/\(id)", headers: [carol])
        let unused = try HTTPClient.request(port: relay.port, method: "DELETE", path: "/api/chat/stream/\(Chat.newID())", headers: [carol])
        XCTAssertEqual(carols.status, 202)
        XCTAssertEqual(unused.status, 202)
        XCTAssertTrue(carols.text.contains("\"state\":\"pending\"") && unused.text.contains("\"state\":\"pending\""), carols.text)
        // Request ids are scoped to their user: bob's POST with alice's id is a fresh stream of bob's (no existence
        // oracle: the same answer as for an unused id), and alice's stream is untouched.
        let bobs = try Chat.start(port: relay.port, token: RelayProcess.token(sub: "bob"), requestID: id, maxTokens: 7)
        XCTAssertEqual(bobs.status, 200)
        XCTAssertEqual(bobs.header("X-Request-Id"), id)
        let bobEvents = try bobs.readAll()
        assertSequence(bobEvents)
        XCTAssertEqual(bobEvents.count, 8, "bob's own 7 deltas and done, not alice's 5")
        XCTAssertEqual(try redis.cli("HGET", streamKey(id, "meta", sub: "bob"), "owner"), "bob")
        XCTAssertEqual(try redis.cli("HGET", streamKey(id, "meta", sub: "alice"), "last_seq"), "\(alice.count)")
        let again = try Chat.resume(port: relay.port, token: RelayProcess.token(sub: "alice"), requestID: id, lastEventID: "0").readAll()
        XCTAssertEqual(again.map(\.data), alice.map(\.data), "alice's stream is untouched")
    }

    func testRevocationOnOneRelayCutsLiveStreamsOnAnother() throws {
        let a = try adminRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "20"])
        let b = try adminRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "20"])
        var latencies: [Double] = []
        for i in 0..<50 {
            let sid = "revoke-\(i)-\(UUID().uuidString.prefix(6))"
            let token = RelayProcess.token(sid: sid)
            let c = try Chat.start(port: b.port, token: token, maxTokens: 500)
            _ = try XCTUnwrap(try c.nextEvent())
            let t0 = Date()
            XCTAssertEqual(try revoke(a, sid: sid).status, 202)
            var cut: SSEMessage?
            while let e = try c.nextEvent(timeout: 5) {
                if case .error(let status, let code, _)? = try? StreamEvent(json: e.data) {
                    XCTAssertEqual(status, 401)
                    XCTAssertEqual(code, "session_revoked")
                    cut = e
                    break
                }
            }
            latencies.append(Date().timeIntervalSince(t0) * 1000)
            XCTAssertNotNil(cut, "try \(i): stream cut with session_revoked")
            XCTAssertNil(try c.nextEvent(timeout: 5), "the response ends after the error")
            // Reconnecting with the revoked session's token is refused.
            let again = try HTTPClient.request(port: a.port, method: "GET", path: "/api/chat/stream/\(c.header("X-Request-Id")!)",
                                               headers: [("Authorization", "Bearer \(token)"), ("Last-Event-ID", "1")])
            XCTAssertEqual(again.status, 401)
            if i == 0 {
                let post = try HTTPClient.request(port: b.port, method: "POST", path: "/api/chat/stream",
                                                  headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")], body: Chat.body())
                XCTAssertEqual(post.status, 401, "a revoked session cannot start streams")
            }
        }
        latencies.sort()
        let p50 = latencies[latencies.count / 2]
        let p99 = latencies[min(latencies.count - 1, Int(Double(latencies.count) * 0.99))]
        print(String(format: "revocation publish → client 401 over %d tries: p50 %.1f ms, p99 %.1f ms, max %.1f ms",
                     latencies.count, p50, p99, latencies.last!))
    }

    func testRevokeCommandTalksToRedisDirectly() throws {
        let relay = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "20"])
        let sid = "cli-\(UUID().uuidString.prefix(8))"
        let c = try Chat.start(port: relay.port, token: RelayProcess.token(sid: sid), maxTokens: 200)
        _ = try XCTUnwrap(try c.nextEvent())
        let p = Process()
        p.executableURL = URL(fileURLWithPath: TestPaths.relayBinary)
        p.arguments = ["revoke", sid]
        p.environment = ChildEnvironment.minimal(["REDIS_URL": redis.url])
        p.standardOutput = FileHandle.nullDevice
        try p.run()
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 0)
        let rest = try c.readAll(timeout: 5)
        XCTAssertTrue(rest.last?.data.contains("session_revoked") == true)
        XCTAssertEqual(try redis.cli("EXISTS", "relay:revoked:{\(sid)}"), "1")
    }

    func testAdminRouteErrors() throws {
        let relay = try adminRelay()
        XCTAssertEqual(try revoke(relay, sid: "never-seen").status, 202, "unknown sid: 202, idempotent")
        XCTAssertEqual(try revoke(relay, sid: "never-seen").status, 202)
        let wrong = try revoke(relay, sid: "x", key: "wrong-key-wrong-key-wrong")
        XCTAssertEqual(wrong.status, 401)
        let none = try HTTPClient.request(port: relay.port, method: "POST", path: "/admin/sessions/x/revoke")
        XCTAssertEqual(none.status, 401)
        let off = try startRelay()
        let offResponse = try revoke(off, sid: "x")
        XCTAssertEqual(offResponse.status, 401, "admin routes off: same 401, no hint")
        XCTAssertEqual(offResponse.text, wrong.text)
    }

    func testAuthorizationHeaderShapes() throws {
        let relay = try startRelay()
        let token = RelayProcess.token()
        func status(_ headers: [(String, String)]) throws -> Int {
            try HTTPClient.request(port: relay.port, method: "POST", path: "/api/chat/stream",
                                   headers: headers + [("Content-Type", "application/json")], body: Chat.body(maxTokens: 1)).status
        }
        XCTAssertEqual(try status([("Authorization", "Basic YWxpY2U6c2VjcmV0")]), 401)
        XCTAssertEqual(try status([("Authorization", "Bearer \(token)"), ("Authorization", "Bearer \(token)")]), 401, "duplicate headers")
        XCTAssertEqual(try status([("Authorization", "Bearer x")]), 401, "1-byte token")
        XCTAssertEqual(try status([("Authorization", "Bearer " + String(repeating: "a", count: 100_000))]), 401, "100 KB token")
        XCTAssertEqual(try status([("Authorization", "Bearer !!!.@@@.###")]), 401, "invalid base64url")
        XCTAssertEqual(try status([("Authorization", "bearer \(token)")]), 200, "scheme is case-insensitive")
    }

    func testTokenExpiryMidStreamThenFreshTokenResumes() throws {
        let relay = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "100", "RELAY_JWT_LEEWAY": "0"])
        let reference = referenceText(maxTokens: 300)
        let sid = "exp-\(UUID().uuidString.prefix(8))"
        let short = RelayProcess.token(sid: sid, ttl: 1)
        let c = try Chat.start(port: relay.port, token: short, maxTokens: 300)
        let id = try XCTUnwrap(c.header("X-Request-Id"))
        var events = try c.readAll(timeout: 10)
        let last = try XCTUnwrap(events.popLast())
        guard case .error(401, "token_expired", _)? = try? StreamEvent(json: last.data) else {
            return XCTFail("stream ends with token_expired, got \(last.data)")
        }
        XCTAssertLessThan(events.count, 300, "cut before the end")
        XCTAssertEqual(last.lastEventId, events.last?.lastEventId, "the error repeats the last seq, so nothing is skipped")
        let fresh = RelayProcess.token(sid: sid)
        events += try Chat.resume(port: relay.port, token: fresh, requestID: id, lastEventID: last.lastEventId).readAll()
        assertSequence(events)
        XCTAssertEqual(Chat.text(events), reference)
    }

    func testBudgetExhaustedIs429BeforeAnyByteAndUsageCountsOnce() throws {
        let relay = try startRelay(["RELAY_BUDGETS": "free=100,pro=100000", "RELAY_SIMULATED_TOKENS_PER_SECOND": "300"])
        let user = "budget-\(UUID().uuidString.prefix(8))"
        let token = RelayProcess.token(sub: user)
        let c = try Chat.start(port: relay.port, token: token, maxTokens: 120)
        let id = try XCTUnwrap(c.header("X-Request-Id"))
        var events: [SSEMessage] = []
        for _ in 0..<10 { events.append(try XCTUnwrap(try c.nextEvent())) }
        c.close()
        for _ in 0..<3 {  // three reconnects, each cut again
            let r = try Chat.resume(port: relay.port, token: token, requestID: id, lastEventID: events.last!.lastEventId)
            for _ in 0..<10 { events.append(try XCTUnwrap(try r.nextEvent())) }
            r.close()
        }
        events += try Chat.resume(port: relay.port, token: token, requestID: id, lastEventID: events.last!.lastEventId).readAll()
        assertSequence(events)
        guard case .done(_, let usage, _)? = try? StreamEvent(json: events.last!.data) else { return XCTFail("done") }
        let budget = try HTTPClient.request(port: relay.port, method: "GET", path: "/api/budget",
                                            headers: [("Authorization", "Bearer \(token)")])
        XCTAssertEqual(budget.status, 200)
        let obj = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(budget.body)) as? [String: Any])
        XCTAssertEqual(obj["used"] as? Int, usage.totalTokens, "usage accounted exactly once")
        XCTAssertEqual(obj["reserved"] as? Int, 0, "the reservation was settled")
        XCTAssertEqual(obj["limit"] as? Int, 100)
        XCTAssertEqual(obj["tier"] as? String, "free")
        XCTAssertEqual(obj["remaining"] as? Int, max(0, 100 - usage.totalTokens))
        XCTAssertNotNil(obj["period"] as? String)
        // max_tokens 120 was clamped to what the budget of 100 left.
        XCTAssertTrue(events.last!.data.contains("\"finish_reason\":\"length\"") && events.last!.data.contains("\"budget_limited\":true"),
                      events.last!.data)
        XCTAssertLessThanOrEqual(usage.totalTokens, 105, "at most the estimation error (5 %) over the limit")
        let refused = try HTTPClient.request(port: relay.port, method: "POST", path: "/api/chat/stream",
                                             headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")],
                                             body: Chat.body(maxTokens: 5))
        XCTAssertEqual(refused.status, 429)
        XCTAssertEqual(refused.errorCode, "token_budget_exhausted")
        XCTAssertEqual(refused.header("Content-Type"), "application/json", "plain HTTP, no stream begun")
        let pro = RelayProcess.token(sub: user, tier: "pro")
        XCTAssertEqual(try Chat.start(port: relay.port, token: pro, maxTokens: 2).status, 200, "the pro tier still has room")
    }

    func testTooManyStreamsPerSession() throws {
        let relay = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "20", "RELAY_MAX_STREAMS_PER_SESSION": "3"])
        let sid = "busy-\(UUID().uuidString.prefix(8))"
        let token = RelayProcess.token(sid: sid)
        let open = try (0..<3).map { _ in try Chat.start(port: relay.port, token: token, maxTokens: 200) }
        XCTAssertTrue(open.allSatisfy { $0.status == 200 })
        let fourth = try HTTPClient.request(port: relay.port, method: "POST", path: "/api/chat/stream",
                                            headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")], body: Chat.body())
        XCTAssertEqual(fourth.status, 429)
        XCTAssertEqual(fourth.errorCode, "too_many_streams")
        XCTAssertEqual(try Chat.start(port: relay.port, token: RelayProcess.token(), maxTokens: 1).status, 200, "another session is unaffected")
    }
}
