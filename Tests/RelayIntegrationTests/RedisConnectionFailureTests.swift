import Foundation
import RelayConfiguration
import RelayCore
import RelayLoop
import RelayRedis
import RelayTestKit
import XCTest
import RelayCluster

/// `RedisConnection` on hiredis' non-blocking context when things go wrong: fake
/// servers that misbehave (`fake_redis.py`), callbacks that close or send at awkward
/// moments, Redis paused or killed with commands in flight. Every handler is called
/// exactly once.
final class RedisConnectionFailureTests: RelayTestCase {
    /// hiredis 0.14 writes with write(2): a peer that is gone raises SIGPIPE (the relay
    /// ignores it in `serve`; the test process must too).
    override class func setUp() {
        super.setUp()
        signal(SIGPIPE, SIG_IGN)
    }

    /// A fake Redis (fake_redis.py next to this file) in `mode`; its TCP port.
    final class FakeRedis {
        let process = Process()
        let port: Int
        init(_ mode: String) throws {
            let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("fake_redis.py").path
            process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
            process.arguments = ["-u", script, mode]
            let out = Pipe()
            process.standardOutput = out
            try process.run()
            var line = Data()
            while !line.contains(10) { let d = out.fileHandleForReading.availableData; if d.isEmpty { break }; line.append(d) }
            port = Int(String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
        }
        func stop() { if process.isRunning { process.terminate(); process.waitUntilExit() } }
    }

    final class Calls: @unchecked Sendable {
        let got = LockedBox<[Int: [String]]>([:])
        func record(_ i: Int, _ text: String) { got.mutate { $0[i, default: []].append(text) } }
        var count: Int { got.value.values.reduce(0) { $0 + $1.count } }
        func handler(_ i: Int) -> (RedisReply) -> Void { { r in self.record(i, Self.text(r)) } }
        static func text(_ r: RedisReply) -> String {
            if let e = r.errorMessage { return "error:" + e }
            if case .null = r { return "null" }
            if case .integer(let i) = r { return "int:\(i)" }
            return r.string ?? "array:\(r.array?.count ?? -1)"
        }
    }

    private func fake(_ mode: String) throws -> FakeRedis {
        let f = try FakeRedis(mode)
        addTeardownBlock { f.stop() }
        XCTAssertGreaterThan(f.port, 0)
        return f
    }

    private func assertEachOnce(_ calls: Calls, _ range: Range<Int>, prefix: String, file: StaticString = #filePath, line: UInt = #line) {
        let got = calls.got.value
        for i in range {
            XCTAssertEqual(got[i]?.count, 1, "handler \(i) called once: \(got[i] ?? [])", file: file, line: line)
            XCTAssertTrue(got[i]?.first?.hasPrefix(prefix) == true, "handler \(i): \(got[i] ?? [])", file: file, line: line)
        }
    }

    /// The server accepts and closes at once; commands queued while connecting fail once.
    func testServerClosingRightAfterAcceptFailsEachEarlyCommandOnce() throws {
        let f = try fake("close")
        let calls = Calls()
        let h = try RedisConnectionTests.Harness(url: "redis://127.0.0.1:\(f.port)") { c in
            for i in 0..<20 { c.send(["ECHO", "e\(i)"], calls.handler(i)) }
        }
        addTeardownBlock { h.stop() }
        try eventually(10, "every early handler") { calls.count >= 20 }
        // Several reconnects meanwhile: nothing is called again.
        try consistently(for: 1.5, "each early handler called once (\(calls.count) calls)") { calls.count == 20 }
        XCTAssertEqual(calls.count, 20)
        assertEachOnce(calls, 0..<20, prefix: "error:DISCONNECTED")
    }

    /// Replies, then a protocol error in the middle of a read: the replies before it
    /// reach their handlers, every later handler fails once, the connection comes back.
    func testProtocolErrorMidReadFailsTheRestOnce() throws {
        for mode in ["garbage", "half", "rst"] {
            let f = try fake(mode)
            let calls = Calls()
            let h = try RedisConnectionTests.Harness(url: "redis://127.0.0.1:\(f.port)")
            try eventually(10, "connected (\(mode))") { h.connects.value > 0 }
            h.run { c in for i in 0..<30 { c.send(["ECHO", "e\(i)"], calls.handler(i)) } }
            try eventually(10, "every handler (\(mode))") { calls.count >= 30 }
            try eventually(10, "reconnected (\(mode))") { h.connects.value >= 2 }
            try consistently(for: 0.3, "\(mode): each handler called once (\(calls.count) calls)") { calls.count == 30 }
            XCTAssertEqual(calls.count, 30, mode)
            let got = calls.got.value
            let ok = (0..<30).filter { got[$0] == ["OK"] }.count
            XCTAssertEqual(ok, mode == "garbage" ? 3 : 2, "\(mode): \(got)")
            assertEachOnce(calls, ok..<30, prefix: "error:DISCONNECTED")
            XCTAssertEqual(h.disconnects.value, 1, mode)
            h.stop()
        }
    }

    /// Nothing listens on the port: the commands queued while connecting fail once each.
    func testNothingListeningFailsEarlyCommandsOnce() throws {
        let s = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var a = sockaddr_in(); a.sin_family = sa_family_t(AF_INET); a.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(s, $0, len) } }
        _ = withUnsafeMutablePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(s, $0, &len) } }
        let port = Int(UInt16(bigEndian: a.sin_port))
        Glibc.close(s)
        let calls = Calls()
        let h = try RedisConnectionTests.Harness(url: "redis://127.0.0.1:\(port)") { c in
            for i in 0..<10 { c.send(["ECHO", "e\(i)"], calls.handler(i)) }
        }
        addTeardownBlock { h.stop() }
        try eventually(10, "every early handler") { calls.count >= 10 }
        // Reconnect attempts meanwhile: nothing is called again.
        try consistently(for: 1, "each early handler called once (\(calls.count) calls)") { calls.count == 10 }
        XCTAssertEqual(calls.count, 10)
        assertEachOnce(calls, 0..<10, prefix: "error:DISCONNECTED")
        XCTAssertEqual(h.disconnects.value, 0)
    }

    /// `close()` from inside `onConnect` with commands queued while connecting.
    func testCloseInsideOnConnectFailsQueuedCommandsOnce() throws {
        let calls = Calls()
        let connected = LockedBox(0)
        let h = try RedisConnectionTests.Harness(url: redis.url) { c in
            for i in 0..<10 { c.send(["ECHO", "e\(i)"], calls.handler(i)) }
            c.onConnect = { connected.mutate { $0 += 1 }; c.close(); c.send(["ECHO", "late"], calls.handler(99)) }
        }
        addTeardownBlock { h.stop() }
        try eventually(10, "every handler") { calls.count >= 11 }
        try consistently(for: 0.3, "each handler called once (\(calls.count) calls)") { calls.count == 11 }
        XCTAssertEqual(calls.count, 11)
        assertEachOnce(calls, 0..<10, prefix: "error:DISCONNECTED")
        assertEachOnce(calls, 99..<100, prefix: "error:DISCONNECTED")
        XCTAssertEqual(connected.value, 1)
    }

    /// `close()` and `send()` from inside `onDisconnect`, and from inside a failing handler.
    func testCloseAndSendInsideOnDisconnect() throws {
        let calls = Calls()
        let h = try RedisConnectionTests.Harness(url: redis.url)
        try eventually(10, "connected") { h.connects.value > 0 }
        let discs = LockedBox(0)
        h.run { c in
            c.onDisconnect = { _ in
                discs.mutate { $0 += 1 }
                c.send(["ECHO", "in-disconnect"], calls.handler(100))
                c.close()
                c.send(["ECHO", "after-close"], calls.handler(101))
            }
            c.send(["BLPOP", "relay:never", "30"]) { r in
                calls.record(0, Calls.text(r))
                c.send(["ECHO", "from-failing-handler"], calls.handler(1))
            }
            for i in 2..<20 { c.send(["ECHO", "e\(i)"], calls.handler(i)) }
        }
        try eventually(5, "in flight") { (try? self.redis.cli("CLIENT", "LIST"))?.contains("cmd=blpop") == true }
        _ = try redis.cli("CLIENT", "KILL", "TYPE", "normal")
        try eventually(10, "every handler") { calls.count >= 22 }
        try consistently(for: 2.5, "no reconnect after the close, nothing twice (\(calls.count) calls, \(h.connects.value) connects)") {
            calls.count == 22 && h.connects.value == 1
        }
        XCTAssertEqual(calls.count, 22)
        assertEachOnce(calls, 0..<20, prefix: "error:DISCONNECTED")
        assertEachOnce(calls, 100..<102, prefix: "error:DISCONNECTED")
        XCTAssertEqual(discs.value, 1)
        XCTAssertEqual(h.connects.value, 1, "closed in onDisconnect: no reconnection")
    }

    /// A connection freed (deinit) with commands in flight fails them once each.
    func testDeinitWithCommandsInFlightFailsEachOnce() throws {
        let h = try RedisConnectionTests.Harness(url: redis.url)
        try eventually(10, "connected") { h.connects.value > 0 }
        let calls = Calls()
        nonisolated(unsafe) var other: RedisConnection?
        let lp = h.loop
        let endpoint = try RedisEndpoint.parse(redis.url)
        let up = LockedBox(false)
        h.run { _ in
            other = RedisConnection(loop: lp, endpoint: endpoint, role: .commands)
            other?.onConnect = { up.value = true }
            other?.connect()
        }
        try eventually(10, "the second connection") { up.value }
        h.run { _ in
            other?.send(["BLPOP", "relay:never", "30"], calls.handler(0))
            for i in 1..<30 { other?.send(["ECHO", "e\(i)"], calls.handler(i)) }
        }
        try eventually(5, "in flight") { (try? self.redis.cli("CLIENT", "LIST"))?.contains("cmd=blpop") == true }
        h.run { _ in other = nil }
        try eventually(10, "every handler") { calls.count >= 30 }
        try consistently(for: 0.3, "each handler called once (\(calls.count) calls)") { calls.count == 30 }
        XCTAssertEqual(calls.count, 30)
        assertEachOnce(calls, 0..<30, prefix: "error:DISCONNECTED")
        h.stop()
    }

    /// `REDIS_URL` with a db: commands queued while connecting must run in that db
    /// (`SELECT` first), like the ones sent afterwards.
    func testCommandsQueuedWhileConnectingRunInTheConfiguredDB() throws {
        let calls = Calls()
        let h = try RedisConnectionTests.Harness(url: redis.url + "?db=3") { c in
            c.send(["SET", "relay:test:early", "1"], calls.handler(0))
        }
        addTeardownBlock { h.stop() }
        try eventually(10, "connected") { h.connects.value > 0 }
        h.run { c in c.send(["SET", "relay:test:late", "1"], calls.handler(1)) }
        try eventually(10, "both") { calls.count >= 2 }
        XCTAssertEqual(try redis.cli("-n", "3", "EXISTS", "relay:test:late"), "1")
        XCTAssertEqual(try redis.cli("-n", "3", "EXISTS", "relay:test:early"), "1", "the early SET ran in db 3")
        XCTAssertEqual(try redis.cli("-n", "0", "EXISTS", "relay:test:early"), "0", "the early SET ran in db 0 (before SELECT)")
    }

    /// Redis paused (SIGSTOP) with thousands of commands in flight and more sent while
    /// paused (the socket buffer fills), then resumed: every handler gets its own reply.
    func testPausedRedisAnswersEveryCommandOnceAfterResume() throws {
        let h = try RedisConnectionTests.Harness(url: redis.url)
        addTeardownBlock { h.stop() }
        try eventually(10, "connected") { h.connects.value > 0 }
        let pid = try redisPID()
        XCTAssertGreaterThan(pid, 0)
        let calls = Calls()
        let payload = String(repeating: "x", count: 2000)
        h.run { c in for i in 0..<2000 { c.send(["ECHO", "\(i)"], calls.handler(i)) } }
        kill(pid, SIGSTOP)
        defer { kill(pid, SIGCONT) }
        h.run { c in for i in 2000..<6000 { c.send(["ECHO", "\(i)" + payload], calls.handler(i)) } }
        // Paused for half a second while those are written (the socket buffer fills):
        // nothing sent after the pause began can be answered meanwhile.
        try consistently(for: 0.5, "no reply to a command sent while Redis is paused") {
            !calls.got.value.keys.contains { $0 >= 2000 }
        }
        kill(pid, SIGCONT)
        try eventually(30, "every handler") { calls.count >= 6000 }
        try consistently(for: 0.3, "each handler called once (\(calls.count) calls)") { calls.count == 6000 }
        XCTAssertEqual(calls.count, 6000)
        let got = calls.got.value
        for i in 0..<6000 where got[i] != [i < 2000 ? "\(i)" : "\(i)" + payload] {
            XCTFail("handler \(i): \(String(describing: got[i]).prefix(80))"); break
        }
    }

    /// Redis killed (SIGKILL) with thousands of large commands in flight, then restarted:
    /// each handler fails or is answered exactly once, and the connection answers again.
    func testKilledRedisFailsEveryCommandOnceAndReconnects() throws {
        let h = try RedisConnectionTests.Harness(url: redis.url)
        addTeardownBlock { h.stop() }
        try eventually(10, "connected") { h.connects.value > 0 }
        let pid = try redisPID()
        let calls = Calls()
        let payload = String(repeating: "y", count: 5000)
        h.run { c in for i in 0..<4000 { c.send(["SET", "k\(i % 50)", payload], calls.handler(i)) } }
        kill(pid, SIGKILL)
        try eventually(10, "every handler") { calls.count >= 4000 }
        try consistently(for: 0.2, "each handler called once (\(calls.count) calls)") { calls.count == 4000 }
        XCTAssertEqual(calls.count, 4000)
        let got = calls.got.value
        for i in 0..<4000 where got[i]?.count != 1 || !(got[i]![0] == "OK" || got[i]![0].hasPrefix("error:DISCONNECTED")) {
            XCTFail("handler \(i): \(got[i] ?? [])"); break
        }
        try eventually(10, "the connection to report Redis gone") { h.disconnects.value >= 1 }
        try redis.start()
        try eventually(15, "reconnected") { h.connects.value >= 2 }
        let after = LockedBox<String?>(nil)
        h.run { c in c.send(["ECHO", "back"]) { r in after.value = Calls.text(r) } }
        try eventually(10, "a reply") { after.value != nil }
        XCTAssertEqual(after.value, "back")
    }
}
