import Foundation
import RelayConfiguration
import RelayCore
import RelayLoop
import RelayRedis
import RelayTestKit
import RelayTestSupport
import XCTest
import RelayCluster

/// `ClusterClient`'s FIFO retry queue (repeated `MOVED`/`ASK`, with backoff within the
/// outage grace) against a real Redis Cluster whose nodes are made to disagree: each
/// command is answered once, within the grace, in the order sent; a close answers the
/// queued commands once and sends nothing afterwards.
final class ClusterRetryQueueTests: RedisClusterTestCase {
    /// Hands `key`'s slot over on its old owner only: the two nodes redirect to each
    /// other (`MOVED` ping-pong) until `settle` tells the new owner. Returns (old, new
    /// port, settle).
    private func pingPong(_ key: String) throws -> (from: Int, to: Int, settle: () throws -> Void) {
        let slot = HashSlot.of(key)
        let from = try cluster.primaryPort(forSlot: slot)
        let to = try XCTUnwrap(try cluster.primaries(askingPort: from).keys.sorted().first { $0 != from })
        let toID = try cluster.nodeID(port: to)
        try cluster.cli(from, ["CLUSTER", "SETSLOT", String(slot), "NODE", toID])
        XCTAssertTrue(try cluster.cli(to, ["GET", key]).hasPrefix("MOVED"))
        XCTAssertTrue(try cluster.cli(from, ["GET", key]).hasPrefix("MOVED"))
        return (from, to, { try self.cluster.cli(to, ["CLUSTER", "SETSLOT", String(slot), "NODE", toID]) })
    }

    private static func text(_ r: RedisReply) -> String {
        if let e = r.errorMessage { return "error:" + e }
        if case .null = r { return "null" }
        return r.string ?? "?"
    }

    /// A redirect ping-pong that never ends: each command is answered once, with an
    /// error, within the outage grace plus one backoff step (`maxMs`, 500 ms), not
    /// held indefinitely nor answered twice; nothing is written.
    func testANeverEndingPingPongIsAnsweredOnceWithinTheGrace() throws {
        let c = try ClusterHarness(url: cluster.url, graceMs: 1_000, loadScripts: false)
        addTeardownBlock { c.stop() }
        try eventually(10, "the cluster client to connect") { c.connections.value > 0 }
        let key = "relay:test:{forever}:k"
        _ = try pingPong(key)
        let got = LockedBox<[Int: [String]]>([:])
        let answeredAt = LockedBox<[Date]>([])
        let start = Date()
        c.withClient { client in
            for i in 0..<8 {
                client.send(["SET", key, "v\(i)"]) { r in
                    got.mutate { $0[i, default: []].append(Self.text(r)) }
                    answeredAt.mutate { $0.append(Date()) }
                }
            }
        }
        try eventually(6, "every command answered") { got.value.count == 8 }
        try consistently(for: 0.7, "each command answered once (\(got.value))") {
            got.value.count == 8 && got.value.values.allSatisfy { $0.count == 1 }
        }
        let last = try XCTUnwrap(answeredAt.value.max()).timeIntervalSince(start)
        XCTAssertEqual(got.value.values.map(\.count), Array(repeating: 1, count: 8), "each once: \(got.value)")
        XCTAssertTrue(got.value.values.allSatisfy { $0[0].hasPrefix("error:") }, "\(got.value)")
        XCTAssertGreaterThanOrEqual(last, 0.5, "waited (backoff) rather than failing after a few immediate hops")
        XCTAssertLessThan(last, 1.0 + 0.5 + 0.7, "bounded by the grace (1 s) plus one backoff step (and slack)")
    }

    /// Commands waiting in the retry queue (a ping-pong) when a reply handler of another
    /// command closes the client: each is answered once, `DISCONNECTED`, none is sent
    /// after the close (the slot settles right after: a resend would write).
    func testClosingFromAReplyHandlerAnswersEveryQueuedCommandOnce() throws {
        let c = try ClusterHarness(url: cluster.url, graceMs: 10_000, loadScripts: false)
        addTeardownBlock { c.stop() }
        try eventually(10, "the cluster client to connect") { c.connections.value > 0 }
        let key = "relay:test:{close}:k"
        let other = "relay:test:{other}:k"
        let (_, to, settle) = try pingPong(key)
        let got = LockedBox<[Int: [String]]>([:])
        c.withClient { client in
            for i in 0..<10 {
                client.send(["SET", key, "v\(i)"]) { r in got.mutate { $0[i, default: []].append(Self.text(r)) } }
            }
        }
        // From the second redirect on, the commands wait in the retry queue.
        try eventually(5, "commands waiting for a retry") { try c.counters().retried > 0 }
        XCTAssertEqual(got.value.count, 0)
        let closed = LockedBox(0)
        c.withClient { client in
            client.send(["GET", other]) { _ in
                closed.mutate { $0 += 1 }
                client.close()
            }
        }
        try eventually(5, "the queued commands' answers") { got.value.count == 10 }
        try settle()
        // The slot is settled: a command resent after the close would now be written.
        try consistently(for: 0.8, "nothing answered twice or written after the close (\(got.value))", every: 0.1) {
            try closed.value == 1 && got.value.values.allSatisfy { $0.count == 1 } && cluster.cli(to, ["GET", key]) == ""
        }
        XCTAssertEqual(closed.value, 1)
        XCTAssertEqual(got.value.values.map(\.count), Array(repeating: 1, count: 10), "each once: \(got.value)")
        XCTAssertTrue(got.value.values.allSatisfy { $0[0].hasPrefix("error:DISCONNECTED") }, "\(got.value)")
        XCTAssertEqual(try cluster.cli(to, ["GET", key]), "", "nothing sent after the close")
    }

    /// Clients connected to the node on `port` (not its replica, not the `redis-cli` asking).
    private func clients(_ port: Int) throws -> Int {
        // Not the replica's replication link (`flags=S`), not the asking `redis-cli`.
        try cluster.cli(port, ["CLIENT", "LIST"]).split(separator: "\n")
            .filter { !$0.contains("flags=S") && !$0.contains("cmd=client|list") }.count
    }

    /// A command sent on a closed client (here from the handler of a queued command that
    /// `close()` answers, as an owner resending on `DISCONNECTED` would) is answered
    /// `DISCONNECTED` once and opens no connection: the closed client holds none to any
    /// node afterwards.
    func testACommandSentOnAClosedClientOpensNoConnection() throws {
        let c = try ClusterHarness(url: cluster.url, graceMs: 10_000, loadScripts: false)
        addTeardownBlock { c.stop() }
        try eventually(10, "the cluster client to connect") { c.connections.value > 0 }
        let key = "relay:test:{after-close}:k"
        let (from, to, _) = try pingPong(key)
        let got = LockedBox<[String]>([])
        c.withClient { client in
            client.send(["SET", key, "queued"]) { r in
                got.mutate { $0.append("queued:" + Self.text(r)) }
                client.send(["GET", key]) { r in got.mutate { $0.append("after:" + Self.text(r)) } }
            }
        }
        try eventually(5, "the command waiting for a retry") { try c.counters().retried > 0 }
        c.withClient { $0.close() }
        try eventually(5, "both answered") { got.value.count == 2 }
        XCTAssertTrue(got.value.allSatisfy { $0.contains("error:DISCONNECTED") }, "\(got.value)")
        let ports = try cluster.primaries(askingPort: from).keys.sorted()
        XCTAssertTrue(ports.contains(to))
        let open = { try ports.map { p in "\(p): \(try self.clients(p))" } }
        try eventually(5, "no connection left after close (\((try? open()) ?? []))", every: 0.1) {
            try ports.allSatisfy { try self.clients($0) == 0 }
        }
        // A connection opened after the close would be up within this window.
        try consistently(for: 0.5, "no connection opened after close (\((try? open()) ?? []))", every: 0.1) {
            try got.value.count == 2 && ports.allSatisfy { try self.clients($0) == 0 }
        }
    }

    /// Pipelined `XADD`s with explicit ids through an `ASK`/`MOVED` ping-pong: the old
    /// owner is migrating and the key has moved (`ASK` to the new owner), the new owner
    /// no longer imports (`MOVED` back, even after `ASKING`). The commands wait in the
    /// queue with their `ASK` target (`askTo`); once the new owner imports again they are
    /// stored, every one, in the order sent (Redis refuses an id at or below the top).
    func testPipelinedXAddsThroughAnAskMovedPingPongStayInOrder() throws {
        let c = try ClusterHarness(url: cluster.url, graceMs: 10_000, loadScripts: false)
        addTeardownBlock { c.stop() }
        try eventually(10, "the cluster client to connect") { c.connections.value > 0 }
        let key = "relay:test:{ask}:events"
        let slot = HashSlot.of(key)
        let from = try cluster.primaryPort(forSlot: slot)
        let to = try XCTUnwrap(try cluster.primaries(askingPort: from).keys.sorted().first { $0 != from })
        let fromID = try cluster.nodeID(port: from), toID = try cluster.nodeID(port: to)
        XCTAssertEqual(try cluster.cli(from, ["XADD", key, "1-0", "e", "1"]), "1-0")
        try cluster.cli(to, ["CLUSTER", "SETSLOT", String(slot), "IMPORTING", fromID])
        try cluster.cli(from, ["CLUSTER", "SETSLOT", String(slot), "MIGRATING", toID])
        XCTAssertEqual(try cluster.cli(from, ["MIGRATE", "127.0.0.1", String(to), "", "0", "5000", "KEYS", key]), "OK")
        try cluster.cli(to, ["CLUSTER", "SETSLOT", String(slot), "STABLE"])
        XCTAssertTrue(try cluster.cli(from, ["XADD", key, "9-0", "e", "x"]).hasPrefix("ASK"))

        let n = 30
        let got = LockedBox<[String]>([])
        c.withClient { client in
            for s in 2...(n + 1) {
                client.send(["XADD", key, "\(s)-0", "e", String(s)]) { r in got.mutate { $0.append(Self.text(r)) } }
            }
        }
        try consistently(for: 0.4, "nothing answered while the nodes disagree (\(got.value.count) answered)") { got.value.isEmpty }
        let mid = try c.counters()
        XCTAssertGreaterThan(mid.ask, n, "ASK followed: \(mid)")
        XCTAssertGreaterThan(mid.moved, n, "MOVED followed: \(mid)")
        try cluster.cli(to, ["CLUSTER", "SETSLOT", String(slot), "IMPORTING", fromID])
        try eventually(10, "the replies") { got.value.count == n }
        XCTAssertEqual(got.value, (2...(n + 1)).map { "\($0)-0" }, "stored, in order")
        for p in [from, to] { try cluster.cli(p, ["CLUSTER", "SETSLOT", String(slot), "NODE", toID]) }
        let ids = try cluster.cli(to, ["XRANGE", key, "-", "+"]).split(separator: "\n").filter { $0.hasSuffix("-0") }
        XCTAssertEqual(ids.map(String.init), (1...(n + 1)).map { "\($0)-0" })
    }
}
