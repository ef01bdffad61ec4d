import Foundation
import RelayAuth
import RelayCore
import RelayTestKit
import RelayTestSupport
import XCTest
import RelayRedis
import RelayCluster

/// The relay on a real Redis Cluster (docs/REDIS.md "Redis Cluster") (3 primaries + 3 replicas on loopback,
/// `REDIS_URL=redis+cluster://…`): streams on every primary resumed across relays,
/// revocation and Stop across relays, a slot migrated mid-stream, a primary killed
/// mid-stream.
final class ClusterTests: RedisClusterTestCase {
    private var relays: [RelayProcess] = []

    override func tearDown() {
        for r in relays { r.kill9() }
        relays.removeAll()
        super.tearDown()
    }

    private static let adminKey = "admin-key-for-tests-0123456789"

    private func startRelay(_ env: [String: String] = [:]) throws -> RelayProcess {
        var e = ["RELAY_SIMULATED_TOKENS_PER_SECOND": "2000", "RELAY_ADMIN_KEY": ClusterTests.adminKey]
        for (k, v) in env { e[k] = v }
        let r = try RelayProcess(redisURL: cluster.url, env: e)
        relays.append(r)
        return r
    }

    /// The hash slot of a stream of user `sub` (keys `relay:{<ownerHash>:<id>}:…`).
    private func slot(_ id: String, sub: String) -> Int { HashSlot.of("relay:{\(OwnerHash.of(sub)):\(id)}:meta") }

    /// `perPrimary` request ids for user `sub` whose keys land on each primary.
    private func idsOnEveryPrimary(sub: String, perPrimary: Int) throws -> [(id: String, port: Int)] {
        let primaries = try cluster.primaries(askingPort: cluster.nodes[0].port)
        XCTAssertEqual(primaries.count, 3)
        var out: [(String, Int)] = []
        var count: [Int: Int] = [:]
        while out.count < perPrimary * primaries.count {
            let id = Chat.newID()
            let s = slot(id, sub: sub)
            guard let port = primaries.first(where: { $0.value.contains { $0.contains(s) } })?.key,
                  count[port, default: 0] < perPrimary else { continue }
            count[port, default: 0] += 1
            out.append((id, port))
        }
        return out
    }

    private func reference(_ relay: RelayProcess, maxTokens: Int) throws -> String {
        Chat.text(try Chat.start(port: relay.port, token: RelayProcess.token(sub: "reference"), maxTokens: maxTokens).readAll())
    }

    /// The `/metrics` series whose name (with labels) starts with `prefix`.
    private func series(_ relay: RelayProcess, _ prefix: String) throws -> [String: Double] {
        var out: [String: Double] = [:]
        for line in try HTTPClient.request(port: relay.port, method: "GET", path: "/metrics").text.split(separator: "\n")
        where line.hasPrefix(prefix) {
            let parts = line.split(separator: " ")
            if parts.count == 2 { out[String(parts[0])] = Double(parts[1]) }
        }
        return out
    }

    /// `PUBSUB SHARDNUMSUB channel` on the node at `port`.
    private func shardSubscribers(_ channel: String, port: Int) throws -> Int {
        Int(try cluster.cli(port, ["PUBSUB", "SHARDNUMSUB", channel]).split(separator: "\n").last ?? "") ?? 0
    }

    /// The events stored in Redis: without a final cut (`redis_unavailable`, sent by the
    /// relay, not stored) that repeats the last id so a resume continues after it.
    private func stored(_ events: [SSEMessage]) -> [SSEMessage] {
        guard events.count >= 2, let last = events.last, last.lastEventId == events[events.count - 2].lastEventId,
              case .error? = try? StreamEvent(json: last.data) else { return events }
        return Array(events.dropLast())
    }

    /// Ids 1, 2, 3 … without gap or repeat.
    private func assertGapless(_ events: [SSEMessage], _ what: String, file: StaticString = #filePath, line: UInt = #line) {
        for (i, e) in events.enumerated() where e.lastEventId != String(i + 1) {
            return XCTFail("\(what): event \(i) has id \(e.lastEventId)", file: file, line: line)
        }
    }

    func testStreamsOnEveryPrimaryResumeAcrossRelaysByteIdentical() throws {
        let a = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "300"])
        let b = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "300"])
        let ref = try reference(a, maxTokens: 60)
        XCTAssertGreaterThan(ref.utf8.count, 100)
        let sub = "cluster-user"
        let token = RelayProcess.token(sub: sub)
        let ids = try idsOnEveryPrimary(sub: sub, perPrimary: 2)
        for (id, port) in ids {
            let first = try Chat.start(port: a.port, token: token, requestID: id, maxTokens: 60)
            var head: [SSEMessage] = []
            while head.count < 5, let e = try first.nextEvent() { head.append(e) }
            first.close()
            // The stream's keys live on the primary its slot says, nowhere else.
            XCTAssertEqual(try cluster.cli(port, ["EXISTS", "relay:{\(OwnerHash.of(sub)):\(id)}:meta"]), "1", "meta on its primary :\(port)")
            let rest = try Chat.resume(port: b.port, token: token, requestID: id, lastEventID: head.last?.lastEventId).readAll()
            // Its live channel is a sharded channel (`SSUBSCRIBE`) on that primary, read by
            // the other relay (still subscribed: idle channels are dropped after 30 s); the
            // generating worker delivers to its own client without it (`LiveSource`).
            XCTAssertGreaterThanOrEqual(try shardSubscribers("relay:{\(OwnerHash.of(sub)):\(id)}:live", port: port), 1)
            let all = head + rest
            assertGapless(all, id)
            XCTAssertEqual(Chat.text(all), ref, "stream \(id) on :\(port) resumed on the other relay is byte-identical")
            guard case .done? = try? StreamEvent(json: all.last?.data ?? "") else { return XCTFail("\(id) ends with done") }
        }
        // Per-node health: each of the 3 primaries, connected from both workers.
        let nodes = try series(a, "relay_redis_cluster_node_connected{")
        XCTAssertEqual(nodes.count, 3, "\(nodes)")
        XCTAssertTrue(nodes.values.allSatisfy { $0 == 2 }, "\(nodes)")
    }

    /// A relay SIGKILLed while generating unread answers on every primary: another relay's
    /// orphan sweep (`relay:instances`, `relay:owned:{…}`, each its own slot; docs/DATA_MODEL.md
    /// §6.2) takes each over on its stream's slot and continues it to `done` with no reader,
    /// byte-identical.
    func testUnreadStreamsOnEveryPrimaryOfAKilledRelayAreContinuedWithoutAReader() throws {
        let env = ["RELAY_SIMULATED_TOKENS_PER_SECOND": "60"]
        let a = try startRelay(env.merging(["RELAY_WORKERS": "1"]) { $1 })
        let b = try startRelay(env)
        let maxTokens = 150
        let sub = "cluster-orphans"
        let token = RelayProcess.token(sub: sub)
        let ids = try idsOnEveryPrimary(sub: sub, perPrimary: 1)
        for (id, _) in ids {
            let c = try Chat.start(port: a.port, token: token, requestID: id, maxTokens: maxTokens)
            _ = try XCTUnwrap(try c.nextEvent())
            c.close()
        }
        a.kill9()
        try eventually(40, "every unread stream continued to its end") {
            try ids.allSatisfy { try self.cluster.cli($0.port, ["HGET", "relay:{\(OwnerHash.of(sub)):\($0.id)}:meta", "state"]) == "done" }
        }
        XCTAssertEqual(try series(b, "relay_takeovers_total").values.reduce(0, +), Double(ids.count), "one takeover per stream")
        let ref = try reference(b, maxTokens: maxTokens)
        for (id, port) in ids {
            let all = try Chat.resume(port: b.port, token: token, requestID: id, lastEventID: "0").readAll(timeout: 10)
            guard case .done? = try? StreamEvent(json: all.last?.data ?? "") else { return XCTFail("\(id) ends with done") }
            XCTAssertEqual(Chat.text(all), ref, "stream \(id) on :\(port) continued byte-identical")
        }
    }

    func testRevocationAndStopAcrossRelays() throws {
        let a = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "20"])
        let b = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "20"])
        // Revocation published through one node reaches the relay subscribed on another.
        for i in 0..<3 {
            let sid = "cluster-revoke-\(i)-\(UUID().uuidString.prefix(6))"
            let token = RelayProcess.token(sub: "rev-\(i)", sid: sid)
            let c = try Chat.start(port: b.port, token: token, maxTokens: 500)
            _ = try XCTUnwrap(try c.nextEvent())
            let r = try HTTPClient.request(port: a.port, method: "POST", path: "/admin/sessions/\(sid)/revoke",
                                           headers: [("Authorization", "Bearer \(ClusterTests.adminKey)")])
            XCTAssertEqual(r.status, 202)
            var code: String?
            while let e = try c.nextEvent(timeout: 5) {
                if case .error(_, let c, _)? = try? StreamEvent(json: e.data) { code = c.rawValue; break }
            }
            XCTAssertEqual(code, "session_revoked", "try \(i): the stream on the other relay is cut")
        }
        // `stream-relay revoke` against the cluster: the marker lands on its slot's primary.
        let sid = "cluster-cli-\(UUID().uuidString.prefix(8))"
        let c = try Chat.start(port: b.port, token: RelayProcess.token(sub: "cli", sid: sid), maxTokens: 500)
        _ = try XCTUnwrap(try c.nextEvent())
        let r = try ToolProcess.run(TestPaths.relayBinary, ["revoke", sid], environment: ["REDIS_URL": cluster.url], timeout: 15)
        XCTAssertEqual(r.status, 0, r.output)
        XCTAssertTrue(try c.readAll(timeout: 5).last?.data.contains("session_revoked") == true)
        let marker = "relay:revoked:{\(sid)}"
        XCTAssertEqual(try cluster.cli(try cluster.primaryPort(forSlot: HashSlot.of(marker)), ["EXISTS", marker]), "1")

        // Stop (DELETE) on relay a of a generation owned by relay b.
        for i in 0..<3 {
            let token = RelayProcess.token(sub: "stop-\(i)")
            let c = try Chat.start(port: b.port, token: token, maxTokens: 500)
            _ = try XCTUnwrap(try c.nextEvent())
            let id = try XCTUnwrap(c.header("X-Request-Id"))
            XCTAssertEqual(try HTTPClient.request(port: a.port, method: "DELETE", path: "/api/chat/stream/\(id)",
                                                  headers: [("Authorization", "Bearer \(token)")]).status, 202)
            let rest = try c.readAll(timeout: 10)
            guard case .done("cancelled", _, _)? = try? StreamEvent(json: rest.last?.data ?? "") else {
                return XCTFail("try \(i): stopped on the other relay ends with done(cancelled), got \(rest.last?.data ?? "nothing")")
            }
        }
    }

    /// The slot of a running stream moves to another primary key by key (`ASK` /
    /// `TRYAGAIN` while it moves, `MOVED` after): nothing lost, nothing duplicated.
    func testSlotMigratedMidStreamLosesAndDuplicatesNothing() throws {
        let a = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "100"])
        let b = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "100"])
        let ref = try reference(a, maxTokens: 250)
        let sub = "migrating-user"
        let token = RelayProcess.token(sub: sub)
        let id = Chat.newID()
        let s = slot(id, sub: sub)
        let from = try cluster.primaryPort(forSlot: s)
        let to = try XCTUnwrap(try cluster.primaries(askingPort: from).keys.first { $0 != from })
        let c = try Chat.start(port: a.port, token: token, requestID: id, maxTokens: 250)
        var events: [SSEMessage] = []
        while events.count < 20, let e = try c.nextEvent() { events.append(e) }
        // A reader on the other relay takes the live channel (the generating worker
        // delivers to its own client without it).
        let reader = try Chat.resume(port: b.port, token: token, requestID: id, lastEventID: "0")
        var read: [SSEMessage] = []
        while read.count < 20, let e = try reader.nextEvent() { read.append(e) }
        let live = "relay:{\(OwnerHash.of(sub)):\(id)}:live"
        try eventually(3, "SSUBSCRIBE of the live channel on the old primary") {
            try shardSubscribers(live, port: from) >= 1
        }
        let moved = try cluster.migrate(slot: s, to: to, pauseMs: 250)
        XCTAssertGreaterThanOrEqual(moved, 3, "the stream's keys were migrated one by one")
        XCTAssertEqual(try cluster.primaryPort(forSlot: s), to)
        // The live channel is a sharded channel: re-subscribed on the slot's new primary.
        try eventually(3, "SSUBSCRIBE of the live channel on the new primary") {
            try shardSubscribers(live, port: to) >= 1
        }
        let midway = events.count
        events += try c.readAll(timeout: 20)
        read += try reader.readAll(timeout: 20)
        XCTAssertLessThan(midway, events.count - 1, "the stream was still running when the migration ended")
        assertGapless(events, "live stream across the migration")
        XCTAssertEqual(Chat.text(events), ref, "byte-identical across the migration")
        assertGapless(read, "the other relay's reader across the migration")
        XCTAssertEqual(Chat.text(read), ref, "the other relay's reader: byte-identical across the migration")
        guard case .done? = try? StreamEvent(json: events.last?.data ?? "") else { return XCTFail("ends with done") }
        // Resumed on the other relay after the move (from a seq still retained under
        // `MAXLEN`): read from the new primary.
        let k = events.count - 40
        let rest = try Chat.resume(port: b.port, token: token, requestID: id, lastEventID: String(k)).readAll()
        assertGapless(Array(events.prefix(k)) + rest, "resume after the migration")
        XCTAssertEqual(Chat.text(Array(events.prefix(k)) + rest), ref)
        XCTAssertEqual(try cluster.cli(to, ["EXISTS", "relay:{\(OwnerHash.of(sub)):\(id)}:events"]), "1")
        // The relays did follow redirects (not a stale map that happened to work).
        try eventually(3, "redirect counters reported") {
            let r = try series(a, "relay_redis_cluster_redirects_total{")
            // ASK / TRYAGAIN while the keys move (a MOVED may not be needed: the
            // pub/sub's own MOVED can update the slot map first).
            return (r["relay_redis_cluster_redirects_total{kind=\"ask\"}"] ?? 0) + (r["relay_redis_cluster_redirects_total{kind=\"retry\"}"] ?? 0) > 0
        }
        print("cluster migration: \(moved) keys moved; relay a: \(try series(a, "relay_redis_cluster_redirects_total{"))")
    }

    /// A primary is SIGKILLed mid-stream: its replica is promoted; streams on the other
    /// shards finish byte-identical; the stream on the failed shard finishes gapless or
    /// ends with `redis_unavailable` / `stream_lost` within the grace; none hangs.
    func testPrimaryKilledMidStream() throws {
        let grace = 5.0
        let a = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "50", "RELAY_REDIS_OUTAGE_GRACE": "5s"])
        let ref = try Chat.text(Chat.start(port: a.port, token: RelayProcess.token(sub: "reference"), maxTokens: 300).readAll(timeout: 20))
        let sub = "failover-user"
        let token = RelayProcess.token(sub: sub)
        let ids = try idsOnEveryPrimary(sub: sub, perPrimary: 1)
        let victim = ids[0].port
        final class Outcome: @unchecked Sendable {
            var events: [SSEMessage] = []
            var times: [Date] = []
            var endedAt: Date?
            var failure: String?
        }
        let outcomes = ids.map { _ in Outcome() }
        let group = DispatchGroup()
        let port = a.port
        for (i, s) in ids.enumerated() {
            let id = s.id
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                do {
                    let c = try Chat.start(port: port, token: token, requestID: id, maxTokens: 300)
                    while let e = try c.nextEvent(timeout: 15) {
                        outcomes[i].events.append(e)
                        outcomes[i].times.append(Date())
                    }
                } catch { outcomes[i].failure = "\(error)" }
                outcomes[i].endedAt = Date()
            }
        }
        // Well under way (50 tokens/s) when the primary dies.
        try eventually(10, "every stream 20 events in") { outcomes.allSatisfy { $0.events.count >= 20 } }
        let killedAt = Date()
        cluster.kill(port: victim)
        // `/readyz` names the unreachable primary until its replica is promoted.
        try eventually(3, "/readyz 503 naming the killed primary") {
            let r = try HTTPClient.request(port: a.port, method: "GET", path: "/readyz")
            return r.status == 503 && r.text.contains("127.0.0.1:\(victim)")
        }
        XCTAssertEqual(group.wait(timeout: .now() + 30), .success, "a stream hangs")
        try cluster.waitHealthy(timeout: 15)
        try eventually(5, "/readyz 200 after the promotion") {
            try HTTPClient.request(port: a.port, method: "GET", path: "/readyz").status == 200
        }
        XCTAssertFalse(try cluster.primaries(askingPort: ids[1].port).keys.contains(victim), "a replica took over the killed primary's slots")
        for (i, s) in ids.enumerated() {
            let o = outcomes[i]
            XCTAssertNil(o.failure, "\(s.id): \(o.failure ?? "")")
            assertGapless(stored(o.events), "stream on :\(s.port)")
            let last = try? StreamEvent(json: o.events.last?.data ?? "")
            if s.port != victim {
                XCTAssertEqual(Chat.text(o.events), ref, "a stream on a healthy shard is untouched")
                guard case .done? = last else { XCTFail("healthy shard: done, got \(o.events.last?.data ?? "nothing")"); continue }
            } else {
                let ended = o.endedAt!.timeIntervalSince(killedAt)
                switch last {
                case .done?:
                    XCTAssertEqual(Chat.text(o.events), ref, "the failed shard's stream continued after the promotion")
                case .error(_, let code, _)? where code == "redis_unavailable" || code == "stream_lost":
                    XCTAssertLessThanOrEqual(ended, grace + 3, "ended within the grace")
                    XCTAssertTrue(ref.hasPrefix(Chat.text(o.events)), "what was sent is a prefix of the answer")
                default:
                    XCTFail("failed shard: done or redis_unavailable/stream_lost, got \(o.events.last?.data ?? "nothing")")
                }
                let gap = zip(o.times, o.times.dropFirst()).map { $1.timeIntervalSince($0) }.max() ?? 0
                print(String(format: "cluster failover: stream on the killed primary: longest pause between events %.2f s; ended %.2f s after the kill with %@",
                             gap, ended, o.events.last?.data ?? "nothing"))
            }
        }
    }

    /// A shard lost for good (primary and replica killed): its stream ends with
    /// `redis_unavailable` within the grace instead of hanging.
    func testShardLostForGoodEndsItsStreamWithinTheGrace() throws {
        let a = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "50", "RELAY_REDIS_OUTAGE_GRACE": "2s"])
        let sub = "lost-shard-user"
        let (id, victim) = try idsOnEveryPrimary(sub: sub, perPrimary: 1)[0]
        let replicas = try cluster.replicaPorts(of: victim)
        XCTAssertEqual(replicas.count, 1)
        let c = try Chat.start(port: a.port, token: RelayProcess.token(sub: sub), requestID: id, maxTokens: 1000)
        var events: [SSEMessage] = []
        while events.count < 5, let e = try c.nextEvent() { events.append(e) }
        for p in replicas { cluster.kill(port: p) }
        let killedAt = Date()
        cluster.kill(port: victim)
        events += try c.readAll(timeout: 10)
        let took = Date().timeIntervalSince(killedAt)
        assertGapless(stored(events), "stream on the lost shard")
        XCTAssertEqual(stored(events).count, events.count - 1, "the cut is not a stored event: it repeats the last id")
        guard case .error(503, "redis_unavailable", _)? = try? StreamEvent(json: events.last?.data ?? "") else {
            return XCTFail("ends with redis_unavailable, got \(events.last?.data ?? "nothing")")
        }
        XCTAssertLessThan(took, 2 + 2.5, "within the 2 s grace (plus one outage check)")
        print(String(format: "cluster shard lost: stream ended with redis_unavailable %.2f s after the kill", took))
    }
}
