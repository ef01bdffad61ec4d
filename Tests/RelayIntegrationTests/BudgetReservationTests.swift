import Foundation
import RelayAuth
import RelayCore
import RelayTestKit
import RelayTestSupport
import XCTest
import RelayRedis
import RelayBudgets

/// Budgets reserved at admission, clamped, and settled on every ending (docs/PROTOCOL.md
/// "Reservation and settlement", docs/DATA_MODEL.md "Budgets").
final class BudgetReservationTests: RelayTestCase {
    static let adminKey = "admin-key-for-tests-0123456789"

    func testBudgetHoldsAgainstOneLargeAndNineConcurrentRequests() throws {
        let env = ["RELAY_BUDGETS": "free=500,pro=100000", "RELAY_MAX_STREAMS_PER_SESSION": "3"]
        let a = try startRelay(env), b = try startRelay(env)
        // One request asking for 3,000 tokens: clamped to the 500 of the budget.
        let user = "big-\(UUID().uuidString.prefix(8))"
        let big = try Chat.start(port: a.port, token: RelayProcess.token(sub: user), maxTokens: 3000).readAll()
        let last = try XCTUnwrap(big.last?.data)
        XCTAssertTrue(last.contains("\"finish_reason\":\"length\"") && last.contains("\"budget_limited\":true"), last)
        guard case .done(_, let usage, _)? = try? StreamEvent(json: last) else { return XCTFail("done: \(last)") }
        var l = try ledger(user)
        XCTAssertEqual(l.used, usage.totalTokens)
        XCTAssertEqual(l.reserved, 0)
        let overspendBig = Double(l.used - 500) / 500 * 100
        XCTAssertLessThanOrEqual(l.used, 525, "≤ 5 % over the limit")

        // Nine concurrent requests over three sessions (on two relays): nothing is left.
        func nine(_ sub: String, maxTokens: Int) -> [(status: Int, events: [SSEMessage])] {
            let sids = (0..<3).map { "s\($0)-\(UUID().uuidString.prefix(6))" }
            let out = LockedBox([(Int, [SSEMessage])](repeating: (0, []), count: 9))
            DispatchQueue.concurrentPerform(iterations: 9) { i in
                let port = i % 2 == 0 ? a.port : b.port
                let token = RelayProcess.token(sub: sub, sid: sids[i % 3])
                let c = try? Chat.start(port: port, token: token, maxTokens: maxTokens)
                let events = (c?.status == 200 ? try? c?.readAll() : nil) ?? []
                out.mutate { $0[i] = (c?.status ?? -1, events) }
            }
            return out.value.map { (status: $0.0, events: $0.1) }
        }
        let after = nine(user, maxTokens: 200)
        XCTAssertEqual(after.map(\.status), [Int](repeating: 429, count: 9), "the budget is spent: 429 before any stream")
        l = try ledger(user)
        XCTAssertLessThanOrEqual(l.used, 525)

        // A fresh user: nine concurrent requests of 200 each share the 500.
        let fresh = "nine-\(UUID().uuidString.prefix(8))"
        let results = nine(fresh, maxTokens: 200)
        let admitted = results.filter { $0.status == 200 }
        XCTAssertTrue(results.allSatisfy { $0.status == 200 || $0.status == 429 }, "\(results.map(\.status))")
        XCTAssertGreaterThanOrEqual(admitted.count, 2, "some fit")
        var charged = 0
        for r in admitted {
            guard case .done(_, let u, _)? = try? StreamEvent(json: r.events.last?.data ?? "") else { return XCTFail("each admitted answer reaches done") }
            charged += u.totalTokens
        }
        l = try ledger(fresh)
        XCTAssertEqual(l.used, charged, "each answer charged once, as its usage says")
        XCTAssertEqual(l.reserved, 0)
        XCTAssertLessThanOrEqual(l.used, 525, "≤ 5 % over the limit")
        print(String(format: "budget 500: 1×max_tokens 3000 used %d (%+.1f %%); 9 concurrent after it: %d×429; 9 concurrent (fresh user): %d admitted, used %d (%+.1f %%)",
                     usage.totalTokens, overspendBig, after.count, admitted.count, l.used, Double(l.used - 500) / 5))
        let metrics = try HTTPClient.request(port: a.port, method: "GET", path: "/metrics").text
        for name in ["relay_budget_reservations_total", "relay_budget_settlements_total", "relay_budget_refusals_total"] {
            XCTAssertTrue(metrics.contains("# HELP \(name) "), name)
            let line = metrics.split(separator: "\n").first { $0.hasPrefix(name + " ") }
            XCTAssertGreaterThan(line.flatMap { Int($0.split(separator: " ")[1]) } ?? 0, 0, "\(name) counted")
        }
        // `/api/budget` shows `reserved` next to `used`.
        let body = try HTTPClient.request(port: b.port, method: "GET", path: "/api/budget",
                                          headers: [("Authorization", "Bearer \(RelayProcess.token(sub: fresh))")])
        let obj = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(body.body)) as? [String: Any])
        XCTAssertEqual(obj["used"] as? Int, l.used)
        XCTAssertEqual(obj["reserved"] as? Int, 0)
    }

    func testAReservationIsShownWhileTheAnswerRunsAndReleasedAfter() throws {
        let relay = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "40"])
        let user = "running-\(UUID().uuidString.prefix(8))"
        let token = RelayProcess.token(sub: user)
        let c = try Chat.start(port: relay.port, token: token, maxTokens: 300)
        _ = try XCTUnwrap(try c.nextEvent())
        let auth = [("Authorization", "Bearer \(token)")]
        let during = try JSONSerialization.jsonObject(with: Data(try HTTPClient.request(port: relay.port, method: "GET", path: "/api/budget", headers: auth).body)) as? [String: Any]
        XCTAssertEqual(during?["reserved"] as? Int, promptEstimate + 300)
        XCTAssertEqual(during?["remaining"] as? Int, 20000 - promptEstimate - 300)
        XCTAssertEqual(try HTTPClient.request(port: relay.port, method: "DELETE", path: "/api/chat/stream/\(c.header("X-Request-Id")!)", headers: auth).status, 202)
        let rest = try c.readAll()
        guard case .done("cancelled", let u, _)? = try? StreamEvent(json: rest.last?.data ?? "") else { return XCTFail("cancelled") }
        try eventually(5, "the cancel settled") { try ledger(user).reserved == 0 }
        XCTAssertEqual(try ledger(user).used, u.totalTokens, "a cancelled answer is charged what it generated")
    }

    func testUpstreamErrorAfterSixtyDeltasIsChargedWhatItGenerated() throws {
        var steps: [FakeUpstreamServer.Step] = [.head(status: 200, contentType: "text/event-stream")]
        for i in 0..<60 { steps.append(.send(UpstreamRelayTests.openAIChunk("w\(i) "))) }
        steps.append(.hangUp)
        let fake = try FakeUpstreamServer(routes: ["/v1/chat/completions": .init(steps)])
        defer { fake.stop() }
        let relay = try startRelay(["RELAY_UPSTREAM": "openai", "UPSTREAM_URL": fake.baseURL, "UPSTREAM_MODEL": "gpt-test"])
        let user = "uerr-\(UUID().uuidString.prefix(8))"
        let events = try Chat.start(port: relay.port, token: RelayProcess.token(sub: user), model: "gpt-test", maxTokens: 500).readAll()
        XCTAssertEqual(events.count, 61)
        guard case .error(502, "upstream_error", _)? = try? StreamEvent(json: events.last?.data ?? "") else {
            return XCTFail("ends with upstream_error, got \(events.last?.data ?? "nothing")")
        }
        try eventually(5, "settled") { try ledger(user).reserved == 0 && ledger(user).used > 0 }
        XCTAssertEqual(try ledger(user).used, promptEstimate + 60, "prompt estimate + 60 deltas")
        XCTAssertEqual(fake.requests.first?.json["max_tokens"] as? Int, 500)
    }

    /// An OpenAI-compatible upstream that ignores `max_tokens`: it streams three times the
    /// `max_tokens` it receives (one token per chunk), then reports that usage.
    static func ignoringMaxTokens(_ req: FakeUpstreamServer.Request) -> FakeUpstreamServer.Script {
        let n = 3 * ((req.json["max_tokens"] as? Int) ?? 100)
        var steps: [FakeUpstreamServer.Step] = [.head(status: 200, contentType: "text/event-stream")]
        var piece: [UInt8] = []
        for i in 0..<n {
            piece += UpstreamRelayTests.openAIChunk("t\(i) ")
            if i % 200 == 199 { steps.append(.send(piece)); piece = [] }
        }
        piece += Array("data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n".utf8)
        piece += Array("data: {\"id\":\"c1\",\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":\(n),\"total_tokens\":\(n + 9)}}\n\ndata: [DONE]\n\n".utf8)
        steps.append(.send(piece))
        return .init(steps)
    }

    func testTheRelayEndsAnAnswerAtTheGrantWhenTheUpstreamIgnoresMaxTokens() throws {
        let fake = try FakeUpstreamServer(routes: [:])
        fake.setResponder("/v1/chat/completions", Self.ignoringMaxTokens)
        defer { fake.stop() }
        let relay = try startRelay(["RELAY_UPSTREAM": "openai", "UPSTREAM_URL": fake.baseURL, "UPSTREAM_MODEL": "gpt-test",
                                    "RELAY_BUDGETS": "free=2000,pro=100000"])
        func deltas(_ events: [SSEMessage]) -> Int { events.filter { $0.data.hasPrefix("{\"type\":\"delta\"") }.count }

        // The budget sets the cap: 2000 − prompt estimate completion tokens, `budget_limited`.
        let user = "ignore-\(UUID().uuidString.prefix(8))"
        let events = try Chat.start(port: relay.port, token: RelayProcess.token(sub: user), model: "gpt-test", maxTokens: 3000).readAll()
        let granted = 2000 - promptEstimate
        XCTAssertEqual(fake.requests.first?.json["max_tokens"] as? Int, granted)
        XCTAssertNil(fake.requests.first?.json["max_completion_tokens"], "not sent (see OpenAIDialect.body)")
        let last = try XCTUnwrap(events.last?.data)
        XCTAssertEqual(deltas(events), granted, "streamed up to the grant, not the upstream's \(3 * granted)")
        XCTAssertTrue(last.contains("\"finish_reason\":\"length\"") && last.contains("\"budget_limited\":true"), last)
        guard case .done(_, let usage, _)? = try? StreamEvent(json: last) else { return XCTFail("done: \(last)") }
        XCTAssertEqual(usage.completionTokens, granted)
        assertSequence(events)
        try eventually(5, "settled") { try ledger(user).reserved == 0 && ledger(user).used > 0 }
        let l = try ledger(user)
        XCTAssertEqual(l.used, usage.totalTokens, "charged what was streamed")
        XCTAssertLessThanOrEqual(l.used, 2000, "used stays within the limit")
        print("upstream ignoring max_tokens (budget 2000): \(deltas(events)) deltas streamed of \(3 * granted), used \(l.used), reserved \(l.reserved)")

        // The request's own max_tokens sets the cap: plain `length`.
        let small = "small-\(UUID().uuidString.prefix(8))"
        let e2 = try Chat.start(port: relay.port, token: RelayProcess.token(sub: small), model: "gpt-test", maxTokens: 50).readAll()
        let last2 = try XCTUnwrap(e2.last?.data)
        XCTAssertEqual(deltas(e2), 50)
        XCTAssertTrue(last2.contains("\"finish_reason\":\"length\"") && !last2.contains("budget_limited"), last2)
        try eventually(5, "settled") { try ledger(small).reserved == 0 && ledger(small).used > 0 }
        XCTAssertEqual(try ledger(small).used, promptEstimate + 50)
    }

    func testRevocationAfterTenDeltasIsChargedWhatItGenerated() throws {
        let relay = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "30", "RELAY_ADMIN_KEY": Self.adminKey])
        // The simulated upstream's own prompt count, from a finished answer.
        let ref = try Chat.start(port: relay.port, token: RelayProcess.token(sub: "reference"), maxTokens: 1).readAll()
        guard case .done(_, let refUsage, _)? = try? StreamEvent(json: ref.last?.data ?? "") else { return XCTFail("done") }
        let user = "rev-\(UUID().uuidString.prefix(8))", sid = "rev-\(UUID().uuidString.prefix(8))"
        let c = try Chat.start(port: relay.port, token: RelayProcess.token(sub: user, sid: sid), maxTokens: 500)
        let id = try XCTUnwrap(c.header("X-Request-Id"))
        for _ in 0..<10 { _ = try XCTUnwrap(try c.nextEvent()) }
        XCTAssertEqual(try HTTPClient.request(port: relay.port, method: "POST", path: "/admin/sessions/\(sid)/revoke",
                                              headers: [("Authorization", "Bearer \(Self.adminKey)")]).status, 202)
        let rest = try c.readAll(timeout: 5)
        XCTAssertTrue(rest.last?.data.contains("session_revoked") == true)
        try eventually(5, "settled") { try ledger(user).reserved == 0 && ledger(user).used > 0 }
        let deltas = (Int(try redis.cli("HGET", streamKey(id, "meta", sub: user), "last_seq")) ?? 0) - 1
        XCTAssertGreaterThanOrEqual(deltas, 10)
        XCTAssertEqual(try ledger(user).used, refUsage.promptTokens + deltas, "prompt + the deltas generated before the cut")
    }

    /// Takeovers off (`RELAY_MAX_CONTINUATIONS=0`; with them on: `TakeoverTests`).
    func testOwnerKilledStreamIsSettledByTheInstanceThatWritesUpstreamLost() throws {
        let a = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "30", "RELAY_MAX_CONTINUATIONS": "0"])
        let b = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "30", "RELAY_MAX_CONTINUATIONS": "0"])
        let user = "lost-\(UUID().uuidString.prefix(8))"
        let token = RelayProcess.token(sub: user)
        let id = Chat.newID()
        let c = try Chat.start(port: a.port, token: token, requestID: id, maxTokens: 500)
        var events: [SSEMessage] = []
        for _ in 0..<5 { events.append(try XCTUnwrap(try c.nextEvent())) }
        XCTAssertEqual(try ledger(user).reserved, promptEstimate + 500)
        a.kill9()
        let rest = try Chat.resume(port: b.port, token: token, requestID: id, lastEventID: events.last!.lastEventId).readAll(timeout: 10)
        guard case .error(503, "upstream_lost", _)? = try? StreamEvent(json: rest.last?.data ?? "") else {
            return XCTFail("ends with upstream_lost, got \(rest.suffix(2).map(\.data))")
        }
        let lostSeq = Int(rest.last!.lastEventId) ?? 0
        try eventually(5, "settled by b") { try ledger(user).reserved == 0 }
        XCTAssertEqual(try ledger(user).used, promptEstimate + lostSeq - 1, "prompt estimate + one token per delta stored")
    }

    func testSummaryModeKeepsItsCapAndAnUncutAnswerIsNotBudgetLimited() throws {
        let relay = try startRelay(["RELAY_SUMMARY_MAX_TOKENS": "40"])
        let user = "summary-\(UUID().uuidString.prefix(8))"
        let c = try SSEConnection(port: relay.port, method: "POST", path: "/api/chat/stream",
                                  headers: [("Authorization", "Bearer \(RelayProcess.token(sub: user))"), ("Content-Type", "application/json")],
                                  body: Chat.body(maxTokens: 3000, mode: "summary"))
        let events = try c.readAll()
        XCTAssertEqual(events.count, 41, "40 deltas (the summary cap), then done")
        let last = try XCTUnwrap(events.last?.data)
        XCTAssertTrue(last.contains("\"finish_reason\":\"length\""), last)
        XCTAssertFalse(last.contains("budget_limited"), "the cap, not the budget, stopped it: \(last)")
        try eventually(5, "settled") { try ledger(user).reserved == 0 }
        XCTAssertEqual(try ledger(user).used, promptEstimate + 40)
    }
}
