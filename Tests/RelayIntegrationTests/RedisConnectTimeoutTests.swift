import Foundation
import RelayConfiguration
import RelayCore
import RelayLoop
import RelayRedis
import RelayTestKit
import RelayTestSupport
import XCTest

/// `RedisConnection`'s connect timeout against real `redis-server` processes and a
/// listener that never completes a connect (`BlackHoleListener`): a connect that
/// completed is not timed out, the deadline ends with the connect, timed-out attempts
/// follow the reconnect backoff, a connection closed from a failure handler stays
/// closed, and a Redis Cluster seed that never answers is left after the timeout.
final class RedisConnectTimeoutTests: RelayTestCase {
    private static func text(_ r: RedisReply) -> String {
        if let e = r.errorMessage { return "error:" + e }
        if case .null = r { return "null" }
        if case .integer(let i) = r { return "int:\(i)" }
        return r.string ?? "array:\(r.array?.count ?? -1)"
    }

    /// The connect completes at once (a local Redis) but the loop turn that started it
    /// runs longer than the connect timeout (a long turn, a descheduled thread). On the
    /// next turn the socket is writable *and* the deadline has passed; libevent then
    /// reports the write event as `EV_TIMEOUT` only (`timeout_process` runs after the
    /// poll, deletes the event and re-activates it with `EV_TIMEOUT`). The connection must
    /// still come up and answer the command queued while connecting: a connect that
    /// completed did not time out.
    func testAConnectThatCompletedWhileTheLoopWasBusyIsNotCountedAsTimedOut() throws {
        let got = LockedBox<[String]>([])
        let h = try RedisConnectionTests.Harness(url: redis.url, connectTimeoutMs: 100) { c in
            c.send(["ECHO", "queued"]) { r in got.mutate { $0.append(Self.text(r)) } }
            usleep(300_000)   // on purpose, not a wait: this loop turn runs 3 × the connect timeout
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
        let h = try RedisConnectionTests.Harness(url: redis.url, connectTimeoutMs: 150)
        addTeardownBlock { h.stop() }
        try eventually(10, "the connection up") { h.connects.value == 1 }
        try consistently(for: 0.3, "the connection kept while idle past its connect deadline") { h.disconnects.value == 0 }
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
        // The attempts are counted over a 1.6 s window, in which nothing can answer.
        try consistently(for: 1.6, "no reply from a server that never accepts") { !replies.value.contains("reply") }
        loop.post { box.timer?.cancel(); box.timer = nil; conn.close(); loop.stop() }
        try eventually(5, "the loop thread to stop") { thread.isFinished }
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
        let h = try RedisConnectionTests.Harness(url: "redis://127.0.0.1:\(hole.port)", connectTimeoutMs: 150) { c in
            c.send(["ECHO", "a"]) { r in
                got.mutate { $0.append("a:" + Self.text(r)) }
                c.close()
            }
            c.send(["ECHO", "b"]) { r in got.mutate { $0.append("b:" + Self.text(r)) } }
        }
        addTeardownBlock { h.stop() }
        try eventually(10, "the queued commands to fail") { got.value.count == 2 }
        hole.open()
        // Several backoff periods with the server reachable: a closed connection stays closed.
        try consistently(for: 0.8, "each command answered once, no reconnect (\(got.value), \(h.connects.value) connects)") {
            got.value.count == 2 && h.connects.value == 0
        }
        XCTAssertEqual(got.value.count, 2, "each answered once: \(got.value)")
        XCTAssertTrue(got.value.allSatisfy { $0.contains("error:DISCONNECTED") }, "\(got.value)")
        XCTAssertEqual(h.connects.value, 0, "a closed connection does not reconnect")
    }

    /// The first seed of a cluster URL never completes a connect (its accept queue is
    /// full): the bootstrap connection gives up on it after the connect timeout (5 s)
    /// and moves on to the next seed, instead of waiting out the kernel's SYN retries
    /// (about two minutes); the client connects and serves commands.
    func testABlackHoledFirstSeedIsLeftAfterTheConnectTimeout() throws {
        let cluster = try RedisCluster(primaries: 3)
        defer { cluster.stop() }
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
        c.withClient { $0.send(["SET", "relay:test:{seed}:k", "v"]) { r in got.value = Self.text(r) } }
        try eventually(5, "the reply") { got.value != nil }
        XCTAssertEqual(got.value, "OK")
    }
}
