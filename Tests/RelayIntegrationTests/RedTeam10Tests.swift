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

    /// A TCP listener on 127.0.0.1 whose accept queue is full (backlog 0, one completed
    /// connection never accepted): further SYNs are dropped, so a connect to it never
    /// completes (Linux `tcp_conn_request`). `accept()` frees the queue again.
    final class BlackHole {
        let listener: Int32
        let port: Int
        private var fillers: [Int32] = []

        init() throws {
            listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard listener >= 0 else { throw TestFailure("socket") }
            var addr = sockaddr_in()
            addr.sin_family = sa_family_t(AF_INET)
            addr.sin_addr.s_addr = inet_addr("127.0.0.1")
            var len = socklen_t(MemoryLayout<sockaddr_in>.size)
            let fd = listener
            let bound = withUnsafeMutablePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { p -> Bool in
                    bind(fd, p, len) == 0 && listen(fd, 0) == 0 && getsockname(fd, p, &len) == 0
                }
            }
            guard bound else { throw TestFailure("bind/listen") }
            port = Int(UInt16(bigEndian: addr.sin_port))
            for _ in 0..<3 {
                let f = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
                fillers.append(f)
                _ = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(f, $0, len) } }
            }
            usleep(50_000)   // the fillers' handshakes (loopback: well under a millisecond)
        }

        /// Accepts (and closes) whatever waits: the next SYN completes again.
        func open() {
            let flags = fcntl(listener, F_GETFL)
            _ = fcntl(listener, F_SETFL, flags | O_NONBLOCK)
            while true {
                let a = accept(listener, nil, nil)
                if a < 0 { break }
                Glibc.close(a)
            }
        }

        deinit {
            for f in fillers { Glibc.close(f) }
            Glibc.close(listener)
        }
    }

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
        let hole = try BlackHole()
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
        let hole = try BlackHole()
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
