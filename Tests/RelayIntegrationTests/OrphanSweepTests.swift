import Foundation
import RelayAuth
import RelayBudgets
import RelayCore
import RelayEventStore
import RelayTestKit
import RelayTestSupport
import XCTest

/// A stream whose owner died is taken over even when nobody reads it (docs/PROTOCOL.md
/// §4.5, docs/DATA_MODEL.md §6.2): every relay's orphan sweep finds the lapsed heartbeat
/// of the dead worker in `relay:instances`, walks its owned set and takes each stream over
/// (`Scripts.takeover`, once across racing instances), or ends it with `upstream_lost`
/// when it cannot be continued; the answer ends, is settled and its completion webhook
/// goes out, all with no client connected.
final class OrphanSweepTests: RelayTestCase {
    private var receivers: [CompletionWebhookTests.Receiver] = []

    override func tearDown() {
        for r in receivers { r.stop() }
        receivers.removeAll()
        super.tearDown()
    }

    /// An owner that died between its final append and its settlement (one round trip
    /// apart) left a finished answer whose reservation would lapse uncharged: the sweep
    /// finds the stream in the dead worker's owned set, ended, and settles it to the usage
    /// its `done` reports — once, whoever else settles it.
    func testAnAnswerWhoseOwnerDiedBeforeSettlingIsSettledByTheSweep() throws {
        let relay = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "5000"])
        let user = "unsettled-\(UUID().uuidString.prefix(8))"
        let token = RelayProcess.token(sub: user)
        let id = Chat.newID()
        let all = try Chat.start(port: relay.port, token: token, requestID: id, maxTokens: 30).readAll()
        guard case .done(_, let usage, _)? = try? StreamEvent(json: all.last?.data ?? "") else { return XCTFail("done") }
        try eventually(5, "settled") { try self.ledger(user).reserved == 0 && self.ledger(user).used == usage.totalTokens }
        // Undo the settlement as if it was never sent, with the reservation still held, and
        // name a dead worker (heartbeat lapsed) as the stream's owner.
        let scoped = "\(OwnerHash.of(user)):\(id)"
        let key = budgetKey(user)
        _ = try redis.cli("HDEL", key, "s:\(scoped)")
        _ = try redis.cli("HINCRBY", key, "used", String(-usage.totalTokens))
        _ = try redis.cli("HSET", key, "r:\(scoped)", "500")
        _ = try redis.cli("HINCRBY", key, "reserved", "500")
        let lapseMs = Int64(Date().timeIntervalSince1970 * 1000) + 60_000
        _ = try redis.cli("ZADD", BudgetLedger.expiriesKey(key), String(lapseMs), scoped)
        XCTAssertEqual(try ledger(user).used, 0)
        let dead = "dead-relay#0@1-abc"
        _ = try redis.cli("SADD", InstanceRegistry.ownedKey(dead), scoped)
        _ = try redis.cli("ZADD", InstanceRegistry.instancesKey, "1", dead)
        try eventually(15, "the sweep settles the finished answer") {
            try self.ledger(user).used == usage.totalTokens && self.ledger(user).reserved == 0
        }
        try eventually(10, "the dead worker's set is walked and removed") {
            try self.redis.cli("EXISTS", InstanceRegistry.ownedKey(dead)) == "0"
        }
        XCTAssertEqual(try ledger(user).used, usage.totalTokens, "charged once")
    }

    /// Starts an answer on `relay` and leaves after `events` events (the app was
    /// backgrounded): nobody reads it from then on.
    private func startUnread(_ relay: RelayProcess, sub: String, maxTokens: Int, events: Int = 5) throws -> String {
        let id = Chat.newID()
        let c = try Chat.start(port: relay.port, token: RelayProcess.token(sub: sub), requestID: id, maxTokens: maxTokens)
        for _ in 0..<events { _ = try XCTUnwrap(try c.nextEvent()) }
        c.close()
        return id
    }

    /// The heartbeat name of `relay`'s one worker in `relay:instances` (`<instance>#0@<startMs>`).
    private func heartbeatName(of relay: RelayProcess) throws -> String {
        let mark = "-\(relay.process.processIdentifier)#0@"
        var name = ""
        try eventually(10, "the worker's heartbeat in relay:instances") {
            name = try self.redis.cli("ZRANGE", InstanceRegistry.instancesKey, "0", "-1").split(separator: "\n")
                .first { $0.contains(mark) }.map(String.init) ?? ""
            return !name.isEmpty
        }
        return name
    }

    private func state(_ id: String, sub: String) throws -> String {
        try redis.cli("HGET", streamKey(id, "meta", sub: sub), "state")
    }

    /// The owner is SIGKILLed after its only client left: another relay, with no reader of
    /// the stream, continues the answer to `done`; a later resume from 0 gets the whole
    /// answer byte-identical; the ledger is settled once to prompt + re-sent prompt +
    /// every token; the completion webhook is delivered exactly once.
    func testAnUnreadAnswerOfAKilledOwnerIsContinuedWithoutAReaderAndItsWebhookSentOnce() throws {
        let receiver = try CompletionWebhookTests.Receiver()
        receivers.append(receiver)
        try receiver.start()
        let env = ["RELAY_SIMULATED_TOKENS_PER_SECOND": "60", "RELAY_COMPLETION_WEBHOOK_URL": receiver.url,
                   "RELAY_COMPLETION_WEBHOOK_SECRET": CompletionWebhookTests.secret, "RELAY_COMPLETION_WEBHOOK_TIMEOUT": "1s",
                   "RELAY_COMPLETION_WEBHOOK_RETRY_BASE": "300ms", "RELAY_COMPLETION_WEBHOOK_GRACE": "500ms"]
        let a = try startRelay(env.merging(["RELAY_WORKERS": "1"]) { $1 })
        let b = try startRelay(env)
        let user = "orphan-\(UUID().uuidString.prefix(8))"
        let maxTokens = 300
        let id = try startUnread(a, sub: user, maxTokens: maxTokens)
        let deadName = try heartbeatName(of: a)
        XCTAssertEqual(try redis.cli("SISMEMBER", InstanceRegistry.ownedKey(deadName), "\(OwnerHash.of(user)):\(id)"), "1",
                       "the running generation is in its worker's owned set")
        a.kill9()
        try eventually(40, "the unread stream continued to its end by b") { try self.state(id, sub: user) == "done" }
        XCTAssertEqual(try metricSum(b, "relay_takeovers_total"), 1, "b took the stream over")
        XCTAssertGreaterThanOrEqual(try metricSum(b, "relay_orphans_swept_total"), 1, "found by b's sweep")
        try eventually(20, "one completion webhook delivered") { receiver.deliveriesByID.values.reduce(0, +) == 1 }
        let all = try Chat.resume(port: b.port, token: RelayProcess.token(sub: user), requestID: id, lastEventID: "0").readAll(timeout: 10)
        assertWhole(all, maxTokens: maxTokens, "a resume from 0 after the end", reader: .late)
        XCTAssertEqual(try redis.cli("HMGET", streamKey(id, "meta", sub: user), "state", "epoch", "continuations"), "done\n1\n1")
        guard case .done(_, let usage, _)? = try? StreamEvent(json: all.last!.data) else { return XCTFail("done") }
        XCTAssertGreaterThan(usage.promptTokens, promptEstimate, "the continuation's re-sent prompt is charged")
        try eventually(5, "settled") { try self.ledger(user).reserved == 0 }
        XCTAssertEqual(try ledger(user).used, usage.totalTokens, "settled once, to prompt + re-sent prompt + every token")
        let deliveries = receiver.requests.filter(\.delivered)
        XCTAssertEqual(deliveries.count, 1, "exactly one webhook delivery: \(deliveries.map(\.body))")
        XCTAssertTrue(deliveries.first?.signatureOK ?? false, "signed")
        try eventually(10, "the dead worker's heartbeat removed once its streams were handled") {
            try self.redis.cli("ZSCORE", InstanceRegistry.instancesKey, deadName).isEmpty
        }
        XCTAssertEqual(try redis.cli("EXISTS", InstanceRegistry.ownedKey(deadName)), "0", "its owned set is empty (gone)")
    }

    /// 20 unread answers on a SIGKILLed relay, two surviving relays sweeping at once: each
    /// stream is taken over exactly once (`relay_takeovers_total` summed is 20) and all 20
    /// end `done`, whole and byte-identical, settled.
    func testTwoSurvivingRelaysRacingTakeEachUnreadStreamOverExactlyOnce() throws {
        let env = ["RELAY_SIMULATED_TOKENS_PER_SECOND": "40"]
        let a = try startRelay(env.merging(["RELAY_WORKERS": "1"]) { $1 })
        let b = try startRelay(env), c = try startRelay(env)
        let maxTokens = 120
        var streams: [(id: String, user: String)] = []
        for i in 0..<20 {
            let user = "race-\(i)-\(UUID().uuidString.prefix(6))"
            streams.append((try startUnread(a, sub: user, maxTokens: maxTokens, events: 1), user))
        }
        a.kill9()
        try eventually(60, "all 20 unread streams ended") {
            try streams.allSatisfy { try self.state($0.id, sub: $0.user) == "done" }
        }
        XCTAssertEqual(total([b, c], "relay_takeovers_total"), 20, "one takeover per stream across both survivors")
        for s in streams {
            let all = try Chat.resume(port: c.port, token: RelayProcess.token(sub: s.user), requestID: s.id, lastEventID: "0")
                .readAll(timeout: 10)
            assertWhole(all, maxTokens: maxTokens, "stream \(s.id)", reader: .late)
            XCTAssertEqual(try redis.cli("HMGET", streamKey(s.id, "meta", sub: s.user), "epoch", "continuations"), "1\n1")
            guard case .done(_, let usage, _)? = try? StreamEvent(json: all.last?.data ?? "") else { return XCTFail("done") }
            try eventually(5, "settled") { try self.ledger(s.user).reserved == 0 }
            XCTAssertEqual(try ledger(s.user).used, usage.totalTokens)
        }
    }

    /// SIGTERM with `RELAY_DRAIN_TIMEOUT=1s` while an unread answer needs ~10 s more: the
    /// drain hands it over (its lease and heartbeat end at once) and another relay's sweep
    /// continues it to `done` with no reader; the drained worker's heartbeat is removed.
    func testADrainTimeoutHandsAnUnreadAnswerOverToAnotherRelay() throws {
        let env = ["RELAY_SIMULATED_TOKENS_PER_SECOND": "50", "RELAY_DRAIN_TIMEOUT": "1s"]
        let a = try startRelay(env.merging(["RELAY_WORKERS": "1"]) { $1 })
        let b = try startRelay(env)
        let user = "drain-\(UUID().uuidString.prefix(8))"
        let maxTokens = 500
        let id = try startUnread(a, sub: user, maxTokens: maxTokens)
        let drainedName = try heartbeatName(of: a)
        kill(a.process.processIdentifier, SIGTERM)
        XCTAssertEqual(a.terminate(timeout: 30), 0, "exit 0 after the drain timeout")
        try eventually(40, "the unread stream continued to its end by b") { try self.state(id, sub: user) == "done" }
        XCTAssertEqual(try metricSum(b, "relay_takeovers_total"), 1)
        let all = try Chat.resume(port: b.port, token: RelayProcess.token(sub: user), requestID: id, lastEventID: "0").readAll(timeout: 10)
        assertWhole(all, maxTokens: maxTokens, "a resume from 0 after the end", reader: .late)
        guard case .done(_, let usage, _)? = try? StreamEvent(json: all.last?.data ?? "") else { return XCTFail("done") }
        try eventually(5, "settled") { try self.ledger(user).reserved == 0 }
        XCTAssertEqual(try ledger(user).used, usage.totalTokens)
        try eventually(10, "the drained worker's heartbeat removed") {
            try self.redis.cli("ZSCORE", InstanceRegistry.instancesKey, drainedName).isEmpty
        }
    }

    /// A drain that finishes every generation before its timeout leaves nothing behind:
    /// the worker's heartbeat and owned set are removed as it stops.
    func testAFinishedDrainRemovesTheWorkersHeartbeat() throws {
        let a = try startRelay(["RELAY_WORKERS": "1"])
        let name = try heartbeatName(of: a)
        kill(a.process.processIdentifier, SIGTERM)
        XCTAssertEqual(a.terminate(timeout: 30), 0)
        XCTAssertEqual(try redis.cli("ZSCORE", InstanceRegistry.instancesKey, name), "", "no heartbeat left behind")
    }

    /// Takeovers off (`RELAY_MAX_CONTINUATIONS=0`): the unread stream of a SIGKILLed owner
    /// is ended by another relay's sweep with `upstream_lost` (stored), and its reservation
    /// settled to what was generated.
    func testAnUnreadStreamThatCannotBeContinuedEndsWithUpstreamLostAndIsSettled() throws {
        let env = ["RELAY_SIMULATED_TOKENS_PER_SECOND": "60", "RELAY_MAX_CONTINUATIONS": "0"]
        let a = try startRelay(env.merging(["RELAY_WORKERS": "1"]) { $1 })
        let b = try startRelay(env)
        let user = "lost-\(UUID().uuidString.prefix(8))"
        let id = try startUnread(a, sub: user, maxTokens: 400)
        a.kill9()
        try eventually(30, "the unread stream ended") { try self.state(id, sub: user) == "failed" }
        let all = try Chat.resume(port: b.port, token: RelayProcess.token(sub: user), requestID: id, lastEventID: "0").readAll(timeout: 10)
        guard case .error(503, "upstream_lost", _)? = try? StreamEvent(json: all.last?.data ?? "") else {
            return XCTFail("ends with upstream_lost, got \(all.suffix(1).map(\.data))")
        }
        XCTAssertEqual(try metricSum(b, "relay_takeovers_total"), 0)
        XCTAssertGreaterThanOrEqual(try metricSum(b, "relay_orphans_swept_total"), 1)
        let generated = Int(all.last.flatMap { UInt64($0.lastEventId) } ?? 1) - 1
        try eventually(5, "settled") { try self.ledger(user).reserved == 0 }
        XCTAssertEqual(try ledger(user).used, promptEstimate + generated, "charged the prompt and what was generated")
    }
}
