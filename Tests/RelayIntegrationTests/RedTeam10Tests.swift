import Foundation
import Glibc
import RelayConfiguration
import RelayCore
import RelayLoop
import RelayRedis
import RelayStreamLogic
import RelayTestSupport
import XCTest

/// Red team 10: the three changes after 103274e — `RedisConnection`'s connect timeout,
/// `ClusterClient`'s FIFO retry queue for repeated redirects, and the bench's
/// `slow-link` scenario — against real `redis-server` processes (and a real relay and
/// bench for the last).
final class RedTeam10Tests: RelayTestCase {
    typealias Harness = RedisConnectionTests.Harness

    private static func text(_ r: RedisReply) -> String {
        if let e = r.errorMessage { return "error:" + e }
        if case .null = r { return "null" }
        if case .integer(let i) = r { return "int:\(i)" }
        return r.string ?? "array:\(r.array?.count ?? -1)"
    }

    // MARK: 1. connect timeout

    /// The connect completes at once (a local Redis) but the loop turn that started it
    /// runs longer than the connect timeout (a long turn, a descheduled thread). On the
    /// next turn the socket is writable *and* the deadline has passed; libevent then
    /// reports the write event as `EV_TIMEOUT` only (`timeout_process` runs after the
    /// poll, deletes the event and re-activates it with `EV_TIMEOUT`). The connection must
    /// still come up and answer the command queued while connecting: a connect that
    /// completed did not time out.
    func testAConnectThatCompletedWhileTheLoopWasBusyIsNotCountedAsTimedOut() throws {
        let got = LockedBox<[String]>([])
        let h = try Harness(url: redis.url, connectTimeoutMs: 100) { c in
            c.send(["ECHO", "queued"]) { r in got.mutate { $0.append(Self.text(r)) } }
            usleep(300_000)   // the busy loop turn, 3 × the connect timeout
        }
        addTeardownBlock { h.stop() }
        try eventually(10, "the queued command's reply") { got.value.count == 1 }
        XCTAssertEqual(got.value, ["queued"], "the command sent while connecting is answered, not failed")
        try eventually(5, "the connection up") { h.connects.value == 1 }
        XCTAssertEqual(h.disconnects.value, 0)
    }

    /// Once the connection is up its connect deadline no longer applies: commands that
    /// take longer than the connect timeout to answer, and a write larger than the socket
    /// buffers (the write event re-armed after a partial write), are answered, and the
    /// connection is not dropped.
    func testTheConnectDeadlineDoesNotOutliveTheConnect() throws {
        let h = try Harness(url: redis.url, connectTimeoutMs: 150)
        addTeardownBlock { h.stop() }
        try eventually(10, "the connection up") { h.connects.value == 1 }
        usleep(300_000)   // past the (old) deadline, idle
        let got = LockedBox<[String]>([])
        let big = String(repeating: "x", count: 8 << 20)
        h.run { c in
            c.send(["BLPOP", "relay:test:never", "0.4"]) { r in got.mutate { $0.append(Self.text(r)) } }
            c.send(["SET", "relay:test:big", big]) { r in got.mutate { $0.append(Self.text(r)) } }
            c.send(["STRLEN", "relay:test:big"]) { r in got.mutate { $0.append(Self.text(r)) } }
        }
        try eventually(10, "the replies") { got.value.count == 3 }
        XCTAssertEqual(got.value, ["null", "OK", "int:\(8 << 20)"])
        XCTAssertEqual(h.disconnects.value, 0, "not dropped by a stale connect deadline")
        XCTAssertEqual(h.connects.value, 1)
    }

    /// A server that never completes the connect, a 50 ms connect timeout: the attempts
    /// follow the backoff (100 ms doubling), not a busy loop of timeouts. A command sent
    /// every 5 ms is failed either at once (between attempts: `not connected`) or at an
    /// attempt's deadline (`lost`); the runs of `lost` count the attempts.
    func testTimedOutConnectsFollowTheBackoffNotAStorm() throws {
        let hole = try BlackHoleListener()
        defer { withExtendedLifetime(hole) {} }   // full until the end of the test
        let replies = LockedBox<[String]>([])
        let loop = try EventLoop()
        let c = RedisConnection(loop: loop, endpoint: .tcp(host: "127.0.0.1", port: hole.port, db: 0), role: .commands)
        c.connectTimeoutMs = 50
        nonisolated(unsafe) let conn = c
        final class TimerBox: @unchecked Sendable { var timer: LoopTimer? }
        let box = TimerBox()
        loop.post {
            conn.connect()
            let t = LoopTimer(loop: loop, repeating: true) {
                conn.send(["PING"]) { r in replies.mutate { $0.append(r.errorMessage ?? "reply") } }
            }
            t.schedule(afterMs: 5)
            box.timer = t
        }
        let thread = Thread { loop.run() }
        thread.start()
        usleep(1_600_000)
        loop.post { box.timer?.cancel(); box.timer = nil; conn.close(); loop.stop() }
        let until = Date().addingTimeInterval(5)
        while !thread.isFinished && Date() < until { usleep(10_000) }
        let r = replies.value
        XCTAssertFalse(r.contains("reply"), "nothing can answer")
        // Attempts: runs of `lost` (one per timed-out attempt).
        var runs = 0
        var previous = ""
        for m in r {
            let lost = m.contains("lost")
            if lost && !previous.contains("lost") { runs += 1 }
            previous = m
        }
        // 0: connect, timeout at 50; retries after 100, 200, 400, 800 ms of backoff:
        // timeouts at about 50, 200, 450, 900, 1750 ms. Within 1.6 s: 4 (± one for timing).
        XCTAssertGreaterThanOrEqual(runs, 3, "the attempts time out: \(r.count) replies")
        XCTAssertLessThanOrEqual(runs, 5, "the attempts follow the backoff, not a storm")
    }

    /// The first command queued on a connect that times out closes the connection from
    /// its failure handler: the other queued command is failed once, nothing is answered
    /// twice, and the closed connection does not try again (the server becomes reachable
    /// right after: a new attempt would connect).
    func testClosingFromTheFailureOfATimedOutConnectStopsTheReconnects() throws {
        let hole = try BlackHoleListener()
        defer { withExtendedLifetime(hole) {} }   // full until the end of the test
        let got = LockedBox<[String]>([])
        let h = try Harness(url: "redis://127.0.0.1:\(hole.port)", connectTimeoutMs: 150) { c in
            c.send(["ECHO", "a"]) { r in
                got.mutate { $0.append("a:" + Self.text(r)) }
                c.close()
            }
            c.send(["ECHO", "b"]) { r in got.mutate { $0.append("b:" + Self.text(r)) } }
        }
        addTeardownBlock { h.stop() }
        try eventually(10, "the queued commands to fail") { got.value.count == 2 }
        hole.open()
        usleep(800_000)   // several backoff periods
        XCTAssertEqual(got.value.count, 2, "each answered once: \(got.value)")
        XCTAssertTrue(got.value.allSatisfy { $0.contains("error:DISCONNECTED") }, "\(got.value)")
        XCTAssertEqual(h.connects.value, 0, "a closed connection does not reconnect")
    }
}

// MARK: 2. ClusterClient's retry queue

/// `ClusterClient`'s FIFO retry queue (repeated `MOVED`/`ASK`, with backoff within the
/// outage grace) against a real Redis Cluster whose nodes are made to disagree.
final class RedTeam10ClusterTests: RedisClusterTestCase {
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
        let key = "relay:test:{rt10-forever}:k"
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
        usleep(700_000)   // anything answered twice would show by now
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
        let key = "relay:test:{rt10-close}:k"
        let other = "relay:test:{rt10-other}:k"
        let (_, to, settle) = try pingPong(key)
        let got = LockedBox<[Int: [String]]>([:])
        c.withClient { client in
            for i in 0..<10 {
                client.send(["SET", key, "v\(i)"]) { r in got.mutate { $0[i, default: []].append(Self.text(r)) } }
            }
        }
        usleep(300_000)   // in the queue by now (the second redirect and later wait)
        XCTAssertEqual(got.value.count, 0)
        XCTAssertGreaterThan(try c.counters().retried, 0, "commands are waiting for a retry")
        let closed = LockedBox(0)
        c.withClient { client in
            client.send(["GET", other]) { _ in
                closed.mutate { $0 += 1 }
                client.close()
            }
        }
        try eventually(5, "the queued commands' answers") { got.value.count == 10 }
        try settle()
        usleep(800_000)
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
        let key = "relay:test:{rt10-after-close}:k"
        let (from, to, _) = try pingPong(key)
        let got = LockedBox<[String]>([])
        c.withClient { client in
            client.send(["SET", key, "queued"]) { r in
                got.mutate { $0.append("queued:" + Self.text(r)) }
                client.send(["GET", key]) { r in got.mutate { $0.append("after:" + Self.text(r)) } }
            }
        }
        usleep(200_000)
        c.withClient { $0.close() }
        try eventually(5, "both answered") { got.value.count == 2 }
        XCTAssertTrue(got.value.allSatisfy { $0.contains("error:DISCONNECTED") }, "\(got.value)")
        usleep(500_000)   // a connection opened after the close would be up by now
        XCTAssertEqual(got.value.count, 2)
        let ports = try cluster.primaries(askingPort: from).keys.sorted()
        XCTAssertTrue(ports.contains(to))
        for p in ports { XCTAssertEqual(try clients(p), 0, "no connection left to :\(p) after close") }
    }

    /// The first seed of a cluster URL never completes a connect (its accept queue is
    /// full): the bootstrap connection gives up on it after the connect timeout (5 s)
    /// and moves on to the next seed, instead of waiting out the kernel's SYN retries
    /// (about two minutes); the client connects and serves commands.
    func testABlackHoledFirstSeedIsLeftAfterTheConnectTimeout() throws {
        let hole = try BlackHoleListener()
        defer { withExtendedLifetime(hole) {} }   // full until the end of the test
        let url = "redis+cluster://127.0.0.1:\(hole.port)," + cluster.nodes.map { "127.0.0.1:\($0.port)" }.joined(separator: ",")
        let start = Date()
        let c = try ClusterHarness(url: url, graceMs: 10_000, loadScripts: false)
        addTeardownBlock { c.stop() }
        try eventually(15, "the cluster client to connect") { c.connections.value > 0 }
        let took = Date().timeIntervalSince(start)
        XCTAssertGreaterThanOrEqual(took, Double(RedisConnection.defaultConnectTimeoutMs) / 1000 - 0.5, "the first seed was tried")
        XCTAssertLessThan(took, Double(RedisConnection.defaultConnectTimeoutMs) / 1000 + 3, "left after the connect timeout")
        let got = LockedBox<String?>(nil)
        c.withClient { $0.send(["SET", "relay:test:{rt10-seed}:k", "v"]) { r in got.value = Self.text(r) } }
        try eventually(5, "the reply") { got.value != nil }
        XCTAssertEqual(got.value, "OK")
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
        let key = "relay:test:{rt10-ask}:events"
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
        usleep(400_000)
        XCTAssertEqual(got.value, [], "nothing answered while the nodes disagree")
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

// MARK: 3. the bench's slow-link scenario

/// A TCP proxy on 127.0.0.1 in front of `target`: counts the bytes it forwards from the
/// server to each client connection (in accept order), independently of the client.
final class CountingProxy: @unchecked Sendable {
    let port: Int
    private let listener: Int32
    /// Server → client bytes written to each accepted connection, in accept order.
    let downstream = LockedBox<[Int]>([])
    private let stopped = LockedBox(false)

    init(target: Int) throws {
        (listener, port) = try LoopbackSocket.listen(backlog: 16)
        let fd = listener, down = downstream, stop = stopped
        Thread {
            while !stop.value {
                let client = accept(fd, nil, nil)
                guard client >= 0 else { return }
                guard let server = try? LoopbackSocket.connect(port: target) else { Glibc.close(client); continue }
                var index = 0
                down.mutate { index = $0.count; $0.append(0) }
                let i = index
                CountingProxy.pump(from: client, to: server) { _ in }
                CountingProxy.pump(from: server, to: client) { n in down.mutate { $0[i] += n } }
            }
        }.start()
    }

    /// Copies `from` → `to` on its own thread until EOF or an error, reporting each write.
    private static func pump(from: Int32, to: Int32, wrote: @escaping @Sendable (Int) -> Void) {
        Thread {
            var buf = [UInt8](repeating: 0, count: 16_384)
            while true {
                let n = buf.withUnsafeMutableBytes { read(from, $0.baseAddress, $0.count) }
                if n <= 0 { break }
                var off = 0
                while off < n {
                    let w = buf.withUnsafeBytes { write(to, $0.baseAddress! + off, n - off) }
                    if w <= 0 { break }
                    wrote(w)
                    off += w
                }
                if off < n { break }
            }
            shutdown(to, Int32(SHUT_WR))
            shutdown(from, Int32(SHUT_RD))
        }.start()
    }

    func stop() {
        stopped.value = true
        shutdown(listener, Int32(SHUT_RDWR))
        Glibc.close(listener)
    }
}

extension RedTeam10Tests {
    /// `slow-link --quick` against a relay that does not coalesce (`RELAY_COALESCE_BACKLOG=0`),
    /// through a proxy that counts the bytes sent to each connection: the slow link shows
    /// one event per token (151 with the done), the bench's `wire_bytes` is what the proxy
    /// delivered to the slow connection (less at most the bytes still unread when the bench
    /// closed it), and the reader was held to the token bucket's 4 KB/s: no more bytes than
    /// its burst plus one tick's worth per 20 ms of the run.
    func testSlowLinkWithoutCoalescingReportsOneEventPerTokenAndTheExactWireBytes() throws {
        let relay = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "150", "RELAY_COALESCE_BACKLOG": "0",
                                    "RELAY_MAX_STREAMS_PER_SESSION": "1000000", "RELAY_BUDGETS": "free=20000,pro=1000000000000"])
        let proxy = try CountingProxy(target: relay.port)
        defer { proxy.stop() }
        let r = try BenchRun.run(["slow-link", "--quick", "--port", String(proxy.port)]).result("slow-link")
        XCTAssertEqual(r["exact"] as? Bool, true, "\(r)")
        XCTAssertEqual(r["fast_events"] as? Int, 151, "\(r)")
        XCTAssertEqual(r["slow_events"] as? Int, 151, "no coalescing: one event per token on the slow link too: \(r)")
        let wire = try XCTUnwrap(r["wire_bytes"] as? Int)
        let fastWire = try XCTUnwrap(r["fast_wire_bytes"] as? Int)
        let counted = proxy.downstream.value
        print("slow-link without coalescing: bench \(wire) / \(fastWire) bytes, proxy \(counted), wall \(r["wall_s"] ?? "?") s")
        let slowSent = try XCTUnwrap(counted.first)
        XCTAssertLessThanOrEqual(wire, slowSent, "the bench cannot have read more than was sent")
        XCTAssertLessThanOrEqual(slowSent - wire, 16, "at most the chunked terminator unread at close: bench \(wire), proxy \(slowSent)")
        // The fast reader's (last, successful) connection.
        XCTAssertTrue(counted.dropFirst().contains { $0 >= fastWire && $0 - fastWire <= 16 }, "fast: bench \(fastWire), proxy \(counted)")
        // Token bucket: 81 bytes per 20 ms tick, burst 405.
        let wall = try XCTUnwrap(r["wall_s"] as? Double)
        XCTAssertLessThanOrEqual(Double(wire), 405 + 81 * (wall / 0.02 + 2), "read no faster than 4 KB/s: \(wire) bytes in \(wall) s")
        XCTAssertGreaterThan(Double(wire) / wall, 2_000, "and not far slower either: \(wire) bytes in \(wall) s")
    }
}
