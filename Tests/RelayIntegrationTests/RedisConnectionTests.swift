import Foundation
import RelayConfiguration
import RelayCore
import RelayLoop
import RelayRedis
import RelayTestKit
import RelayTestSupport
import XCTest

/// `RedisConnection`'s reply path against a real `redis-server`: handlers in a FIFO
/// instead of a box per command must still get exactly their own reply, in send order,
/// with commands sent without a handler in between; every handler still waiting when the
/// connection drops, is closed, or is closed from inside another handler gets
/// `DISCONNECTED …` exactly once; `send(_:view:)` reads errors and nulls in place; the
/// connection's reused `RESPCommand` buffer stays sound across sends from inside reply
/// and failure handlers.
final class RedisConnectionTests: RelayTestCase {
    /// hiredis writes with write(2): a peer that is gone raises SIGPIPE (the relay
    /// ignores it in `serve`; the test process must too).
    override class func setUp() {
        super.setUp()
        signal(SIGPIPE, SIG_IGN)
    }

    /// A `RedisConnection` on its own loop thread; everything runs on the loop.
    final class Harness: @unchecked Sendable {
        let loop: EventLoop
        let connection: RedisConnection
        let connects = LockedBox(0)
        let disconnects = LockedBox(0)
        private let thread: Thread

        /// `whileConnecting`: runs on the loop right after `connect()`, in the same turn
        /// (the connection is not up yet).
        init(url: String, connectTimeoutMs: UInt64? = nil, whileConnecting: (@Sendable (RedisConnection) -> Void)? = nil) throws {
            loop = try EventLoop()
            connection = RedisConnection(loop: loop, endpoint: try RedisEndpoint.parse(url), role: .commands)
            if let t = connectTimeoutMs { connection.connectTimeoutMs = t }
            let n = connects, d = disconnects
            connection.onConnect = { n.mutate { $0 += 1 } }
            connection.onDisconnect = { _ in d.mutate { $0 += 1 } }
            nonisolated(unsafe) let c = connection
            let lp = loop
            loop.post {
                c.connect()
                whileConnecting?(c)
            }
            thread = Thread { lp.run() }
            thread.start()
        }

        func run(_ body: @escaping @Sendable (RedisConnection) -> Void) {
            nonisolated(unsafe) let c = connection
            loop.post { body(c) }
        }

        func stop() {
            nonisolated(unsafe) let c = connection
            let lp = loop
            loop.post { c.close(); lp.stop() }
            let t = thread
            pollUntil(timeout: 5) { t.isFinished }
        }
    }

    /// Replies received per handler index (a handler called twice shows up twice).
    final class Replies: @unchecked Sendable {
        let got = LockedBox<[Int: [String]]>([:])
        func record(_ i: Int, _ text: String) { got.mutate { $0[i, default: []].append(text) } }
        var count: Int { got.value.values.reduce(0) { $0 + $1.count } }
    }

    private func harness() throws -> Harness {
        let h = try Harness(url: redis.url)
        addTeardownBlock { h.stop() }
        try eventually(10, "the connection to come up") { h.connects.value > 0 }
        return h
    }

    private static func text(_ r: RedisReply) -> String {
        if let e = r.errorMessage { return "error:" + e }
        if case .null = r { return "null" }
        if case .integer(let i) = r { return "int:\(i)" }
        return r.string ?? "array:\(r.array?.count ?? -1)"
    }

    /// 600 commands: echoes with handlers (copied and in-place), echoes and `SET`s
    /// without one, errors and nulls in between. Every handler gets its own reply once.
    func testEachHandlerGetsItsOwnReplyInSendOrder() throws {
        let h = try harness()
        let replies = Replies()
        let order = LockedBox<[Int]>([])
        h.run { c in
            for i in 0..<600 {
                switch i % 6 {
                case 0:
                    c.send(["ECHO", "r\(i)"]) { r in replies.record(i, Self.text(r)); order.mutate { $0.append(i) } }
                case 1:
                    c.send(["ECHO", "unheard\(i)"], nil)
                case 2:
                    c.send(["LPUSH", "relay:test:list", "x"], nil)
                    c.send(["INCR", "relay:test:list"], view: { v in   // WRONGTYPE: an error reply
                        replies.record(i, v.isError ? "error:" + (v.errorMessage ?? "?") : "no error")
                        order.mutate { $0.append(i) }
                    })
                case 3:
                    c.send(["GET", "relay:test:missing\(i)"], view: { v in
                        replies.record(i, v.isNull && !v.isError ? "null" : "not null")
                        order.mutate { $0.append(i) }
                    })
                case 4:
                    c.send(["SET", "relay:test:k\(i)", "\(i)"], nil)
                    c.send(["GET", "relay:test:k\(i)"], view: { v in
                        replies.record(i, Self.text(v.reply))
                        order.mutate { $0.append(i) }
                    })
                default:
                    c.send(["INCRBY", "relay:test:n", "1"]) { r in replies.record(i, Self.text(r)); order.mutate { $0.append(i) } }
                }
            }
        }
        try eventually(10, "every handled reply") { replies.count == 500 }
        let got = replies.got.value
        var increments = 0
        for i in 0..<600 where i % 6 != 1 {
            let expected: String
            switch i % 6 {
            case 0: expected = "r\(i)"
            case 2: expected = "error:WRONGTYPE Operation against a key holding the wrong kind of value"
            case 3: expected = "null"
            case 4: expected = "\(i)"
            default:
                increments += 1
                expected = "int:\(increments)"
            }
            XCTAssertEqual(got[i], [expected], "handler \(i)")
        }
        XCTAssertEqual(order.value, order.value.sorted(), "handlers run in send order")
        XCTAssertNil(got[1], "a command sent without a handler calls none")
        let pending = LockedBox(-1)
        h.run { c in pending.value = c.pendingReplies }
        try eventually(5, "the pending count") { pending.value >= 0 }
        XCTAssertEqual(pending.value, 0)
    }

    /// A command written in RESP (`RESPCommand`, the append path's commands) reaches Redis
    /// as its arguments: a binary value with CR LF and a NUL is stored byte for byte, and
    /// the buffer reused for the next command does not disturb the one already sent.
    func testRESPCommandsAreSentAsTheirArguments() throws {
        let h = try harness()
        let got = LockedBox<[String]>([])
        h.run { c in
            let cmd = RESPCommand(capacity: 64)
            cmd.start(argumentCount: 3)
            cmd.add(constant: "SET")
            cmd.add("relay:test:resp")
            cmd.add("a\r\n\u{0}b " + String(repeating: "é", count: 100))
            c.send(cmd, view: { v in got.mutate { $0.append(v.isError ? "error" : "set") } })
            cmd.start(argumentCount: 3)
            cmd.add(constant: "XADD")
            cmd.add("relay:test:resp-stream")
            cmd.add(entryID: 7)
            c.send(cmd, view: { v in got.mutate { $0.append(v.isError ? "error:" + (v.errorMessage ?? "") : "?") } })
            c.send(["GET", "relay:test:resp"]) { r in got.mutate { $0.append(r.string ?? "nil") } }
        }
        try eventually(10, "three replies") { got.value.count == 3 }
        XCTAssertEqual(got.value[0], "set")
        XCTAssertTrue(got.value[1].hasPrefix("error:ERR wrong number of arguments"), got.value[1])
        XCTAssertEqual(got.value[2], "a\r\n\u{0}b " + String(repeating: "é", count: 100))
    }

    /// One `RESPCommand` reused from inside reply handlers. Each
    /// `SET`'s handler (run from hiredis' read callback while later commands written from
    /// the same buffer are still queued) writes and sends a follow-up `APPEND` through
    /// that buffer; after `close()`, handlers failed synchronously inside `send` do the
    /// same and grow the buffer there. Every value reaches Redis byte for byte and every
    /// handler runs exactly once.
    func testOneRESPCommandReusedFromInsideReplyHandlers() throws {
        let h = try harness()
        let odd = "a\r\n\u{0}$3\r\n*2\r\n 👩‍👩‍👧‍👦 مَرْحَبًا \u{2028}"
        let value: @Sendable (Int) -> String = { i in "\(i):" + odd + String(repeating: "é", count: i) }
        let appended = Replies()
        h.run { c in
            let cmd = RESPCommand(capacity: 64)
            for i in 0..<200 {
                cmd.start(argumentCount: 3)
                cmd.add(constant: "SET")
                cmd.add("relay:test:reuse:\(i)")
                cmd.add(value(i))
                c.send(cmd, view: { v in
                    let ok = !v.isError
                    cmd.start(argumentCount: 3)
                    cmd.add(constant: "APPEND")
                    cmd.add("relay:test:reuse:\(i)")
                    cmd.add(ok ? "|" + odd : "|SET failed")
                    c.send(cmd, view: { v in appended.record(i, v.isError ? "error:" + (v.errorMessage ?? "") : "ok") })
                })
            }
        }
        try eventually(10, "every follow-up") { appended.count == 200 }
        let values = LockedBox<[Int: String]>([:])
        h.run { c in
            for i in 0..<200 { c.send(["GET", "relay:test:reuse:\(i)"]) { r in values.mutate { $0[i] = r.string ?? "nil" } } }
        }
        try eventually(10, "every value read") { values.value.count == 200 }
        for i in 0..<200 {
            XCTAssertEqual(appended.got.value[i], ["ok"], "follow-up \(i)")
            XCTAssertEqual(values.value[i], value(i) + "|" + odd, "value \(i)")
        }

        let failed = Replies()
        h.run { c in
            c.close()
            let cmd = RESPCommand(capacity: 64)
            for i in 0..<10 {
                cmd.start(argumentCount: 2)
                cmd.add(constant: "GET")
                cmd.add("relay:test:reuse:\(i)")
                c.send(cmd, view: { v in
                    failed.record(i, v.errorMessage ?? "no error")
                    cmd.start(argumentCount: 2)
                    cmd.add(constant: "GET")
                    cmd.add(String(repeating: "z", count: 5000 * (i + 1)))
                    c.send(cmd, view: { v in failed.record(100 + i, v.errorMessage ?? "no error") })
                })
            }
        }
        try eventually(5, "every handler after the close") { failed.count == 20 }
        for i in 0..<10 {
            for k in [i, 100 + i] {
                XCTAssertEqual(failed.got.value[k]?.count, 1, "handler \(k) once")
                XCTAssertTrue(failed.got.value[k]?.first?.hasPrefix("DISCONNECTED") == true, "handler \(k): \(failed.got.value[k] ?? [])")
            }
        }
    }

    /// Commands queued behind a blocking one when Redis drops the connection: each
    /// handler gets `DISCONNECTED` once, before `onDisconnect`, and the connection comes
    /// back by itself and answers again.
    func testPendingHandlersFailOnceWhenTheConnectionDrops() throws {
        let h = try harness()
        let replies = Replies()
        let disconnectsSeenByHandlers = LockedBox<Set<Int>>([])
        let d = h.disconnects
        h.run { c in
            c.send(["BLPOP", "relay:test:never", "30"]) { r in replies.record(-1, Self.text(r)) }
            for i in 0..<50 {
                let record: (String) -> Void = { t in
                    replies.record(i, t)
                    disconnectsSeenByHandlers.mutate { $0.insert(d.value) }
                }
                if i % 2 == 0 {
                    c.send(["ECHO", "e\(i)"]) { r in record(Self.text(r)) }
                } else {
                    c.send(["ECHO", "e\(i)"], view: { v in record(v.isError ? "error:" + (v.errorMessage ?? "") : "ok") })
                }
            }
        }
        try eventually(5, "the commands to be in flight") { (try? self.redis.cli("CLIENT", "LIST"))?.contains("cmd=blpop") == true }
        _ = try redis.cli("CLIENT", "KILL", "TYPE", "normal")
        try eventually(10, "every pending handler to fail") { replies.count == 51 }
        try eventually(10, "the reconnection") { h.connects.value >= 2 }
        let got = replies.got.value
        for i in -1..<50 {
            XCTAssertEqual(got[i]?.count, 1, "handler \(i) called once")
            XCTAssertTrue(got[i]?.first?.hasPrefix("error:DISCONNECTED") == true, "handler \(i): \(got[i] ?? [])")
        }
        XCTAssertEqual(disconnectsSeenByHandlers.value, [0], "handlers fail before onDisconnect")
        XCTAssertEqual(h.disconnects.value, 1)
        let after = LockedBox<String?>(nil)
        h.run { c in c.send(["ECHO", "back"]) { r in after.value = Self.text(r) } }
        try eventually(10, "a reply after the reconnection") { after.value != nil }
        XCTAssertEqual(after.value, "back")
        try consistently(for: 0.2, "no handler called twice (\(replies.count) replies, 51 handlers)") { replies.count == 51 }
    }

    /// `close()` with commands in flight, and `close()` called from inside a handler
    /// while later commands still wait: every other handler gets `DISCONNECTED` exactly
    /// once (hiredis' own NULL callbacks after the free must not call them again), and
    /// a send after closing fails at once.
    func testCloseFailsEveryPendingHandlerOnceEvenFromInsideAHandler() throws {
        for closeInside in [false, true] {
            let h = try harness()
            let replies = Replies()
            let sentAfter = LockedBox<String?>(nil)
            // Sent in the same loop turn as the close: a loop left with no event to
            // watch stops running posted work.
            let sendLate: @Sendable (RedisConnection) -> Void = { c in
                c.send(["ECHO", "late"]) { r in sentAfter.value = Self.text(r) }
            }
            h.run { c in
                if closeInside {
                    c.send(["ECHO", "first"]) { r in
                        replies.record(-1, Self.text(r))
                        c.close()
                        sendLate(c)
                    }
                } else {
                    c.send(["BLPOP", "relay:test:never", "30"]) { r in replies.record(-1, Self.text(r)) }
                }
                for i in 0..<40 {
                    if i % 2 == 0 {
                        c.send(["ECHO", "e\(i)"]) { r in replies.record(i, Self.text(r)) }
                    } else {
                        c.send(["ECHO", "e\(i)"], view: { v in replies.record(i, v.isError ? "error:" + (v.errorMessage ?? "") : "ok") })
                    }
                }
                if !closeInside {
                    c.close()
                    sendLate(c)
                }
            }
            try eventually(10, "every handler (close inside: \(closeInside))") { replies.count == 41 }
            try eventually(5, "the send after close to fail") { sentAfter.value != nil }
            try consistently(for: 0.2, "no handler called twice (\(replies.count) replies, 41 handlers)") { replies.count == 41 }
            let got = replies.got.value
            XCTAssertEqual(got[-1], [closeInside ? "first" : "error:DISCONNECTED connection to Redis closed"])
            for i in 0..<40 {
                XCTAssertEqual(got[i]?.count, 1, "handler \(i) called once (close inside: \(closeInside))")
                XCTAssertTrue(got[i]?.first?.hasPrefix("error:DISCONNECTED") == true, "handler \(i): \(got[i] ?? [])")
            }
            XCTAssertTrue(sentAfter.value?.hasPrefix("error:DISCONNECTED") == true)
            XCTAssertEqual(h.disconnects.value, 0, "a close is not a lost connection")
        }
    }

    /// A command far larger than the socket buffer (8 MiB over the test's Unix socket) is
    /// written in parts as the socket drains, and the commands queued behind it, in the
    /// same turn and from inside its reply handler, come after it whole and in order.
    func testCommandsLargerThanTheSocketBufferAreWrittenWholeAndInOrder() throws {
        let h = try harness()
        let big = String(repeating: "0123456789abcdef", count: 1 << 19)   // 8 MiB
        let order = LockedBox<[String]>([])
        h.run { c in
            c.send(["SET", "relay:test:big", big]) { r in order.mutate { $0.append("set:" + Self.text(r)) } }
            c.send(["ECHO", "after-set"]) { r in order.mutate { $0.append(Self.text(r)) } }
            c.send(["STRLEN", "relay:test:big"]) { r in
                order.mutate { $0.append(Self.text(r)) }
                c.send(["GET", "relay:test:big"], view: { v in
                    order.mutate { $0.append(v.reply.string == big ? "get:same" : "get:different") }
                })
                c.send(["ECHO", "from-handler"]) { r in order.mutate { $0.append(Self.text(r)) } }
            }
        }
        try eventually(20, "every reply") { order.value.count == 5 }
        XCTAssertEqual(order.value, ["set:OK", "after-set", "int:\(big.utf8.count)", "get:same", "from-handler"])
        XCTAssertEqual(h.disconnects.value, 0)
    }

    /// Commands sent before the connection is up (a command connection accepts them
    /// while connecting) wait for it, then are written in order.
    func testCommandsSentWhileConnectingAreWrittenOnceConnected() throws {
        let got = LockedBox<[String]>([])
        let h = try Harness(url: redis.url) { c in
            for i in 0..<3 { c.send(["ECHO", "early\(i)"]) { r in got.mutate { $0.append(Self.text(r)) } } }
        }
        addTeardownBlock { h.stop() }
        try eventually(10, "the early commands' replies") { got.value.count == 3 }
        XCTAssertEqual(got.value, ["early0", "early1", "early2"])
    }
    /// A connect that never completes (the server's address drops the SYN: here a
    /// listener whose accept queue is full) fails after `connectTimeoutMs`, not after the
    /// kernel's SYN retries (about two minutes): the commands queued meanwhile get
    /// `DISCONNECTED` once each, no earlier than the deadline, and the connection never
    /// reported itself up.
    func testAConnectThatNeverCompletesFailsTheQueuedCommandsAtItsDeadline() throws {
        let hole = try BlackHoleListener()
        defer { withExtendedLifetime(hole) {} }   // the listener stays full until the end
        let port = hole.port
        let got = LockedBox<[String]>([])
        let failedAt = LockedBox<Date?>(nil)
        let started = Date()
        let h = try Harness(url: "redis://127.0.0.1:\(port)", connectTimeoutMs: 300) { c in
            for i in 0..<2 {
                c.send(["ECHO", "queued\(i)"]) { r in
                    got.mutate { $0.append(Self.text(r)) }
                    failedAt.mutate { $0 = $0 ?? Date() }
                }
            }
        }
        addTeardownBlock { h.stop() }
        try eventually(20, "the queued commands to fail (got \(got.value))") { got.value.count == 2 }
        XCTAssertTrue(got.value.allSatisfy { $0.hasPrefix("error:DISCONNECTED") }, "\(got.value)")
        let waited = try XCTUnwrap(failedAt.value).timeIntervalSince(started)
        XCTAssertGreaterThanOrEqual(waited, 0.3, "not before the connect's deadline")
        XCTAssertEqual(h.connects.value, 0, "never connected")
        XCTAssertEqual(h.disconnects.value, 0, "a connection that never came up is not reported lost")
    }

    /// The URL's database is selected before anything else, also before the commands
    /// sent while connecting: they write to it, not to database 0.
    func testTheDatabaseIsSelectedBeforeCommandsSentWhileConnecting() throws {
        let got = LockedBox<[String]>([])
        let h = try Harness(url: redis.url + "?db=3") { c in
            c.send(["SET", "relay:test:early-db", "in-3"]) { r in got.mutate { $0.append(Self.text(r)) } }
        }
        addTeardownBlock { h.stop() }
        try eventually(10, "the early command's reply") { got.value.count == 1 }
        h.run { c in
            c.send(["GET", "relay:test:early-db"]) { r in got.mutate { $0.append("db3:" + Self.text(r)) } }
            c.send(["SELECT", "0"], nil)
            c.send(["GET", "relay:test:early-db"]) { r in got.mutate { $0.append("db0:" + Self.text(r)) } }
            c.send(["SELECT", "3"], nil)
        }
        try eventually(10, "both reads") { got.value.count == 3 }
        XCTAssertEqual(got.value, ["OK", "db3:in-3", "db0:null"])
    }

    /// Commands sent from inside reply handlers (nested sends), each of a size
    /// on the other side of the retain limit, and each handler checking the previous
    /// value with a `GET` sent from inside it: every value stored and read back exact.
    func testNestedSendsFromReplyHandlersAcrossTheRetainLimitStoreEachValueExact() throws {
        let h = try harness()
        let prefix = "relay:test:nested:" + UUID().uuidString + ":"
        let sizes = sizesAcrossTheRetainLimit
        let mismatches = LockedBox<[String]>([])
        let finished = LockedBox(false)
        h.run { c in
            nonisolated(unsafe) let c = c
            func step(_ i: Int) {
                guard i < sizes.count else { return finished.value = true }
                let v = binaryValue(i, sizes[i])
                c.send(["SET", prefix + "\(i)", v]) { r in
                    if r.errorMessage != nil { mismatches.mutate { $0.append("SET \(i): \(r)") } }
                    // From inside this handler: read it back, and start the next (bigger or smaller) one.
                    c.send(["GET", prefix + "\(i)"]) { g in
                        if case .bulk(let b) = g, b == Array(v.utf8) {} else {
                            mismatches.mutate { $0.append("GET \(i): \(String(describing: g).prefix(80))") }
                        }
                    }
                    step(i + 1)
                }
            }
            step(0)
        }
        try eventually(30, "the nested chain") { finished.value }
        // Every value once more, pipelined after the chain.
        let got = LockedBox<[Int: [UInt8]]>([:])
        h.run { c in
            for i in 0..<sizes.count {
                c.send(["GET", prefix + "\(i)"]) { r in
                    if case .bulk(let b) = r { got.mutate { $0[i] = b } } else { got.mutate { $0[i] = [] } }
                }
            }
        }
        try eventually(30, "the read-back") { got.value.count == sizes.count }
        XCTAssertEqual(mismatches.value, [])
        for i in 0..<sizes.count {
            XCTAssertTrue(got.value[i] == Array(binaryValue(i, sizes[i]).utf8), "value \(i) (\(sizes[i]) bytes)")
        }
    }

    /// Failure handlers that send again while the connection is being lost
    /// (`CLIENT KILL` with commands in flight): each gets `DISCONNECTED` once, the
    /// nested sends fail at once (no context) or go out after the reconnect, and the
    /// buffer is sound afterwards (a large then a small value round-trip exact).
    func testSendsFromFailureHandlersWhileTheConnectionIsLostLeaveTheBufferSound() throws {
        let h = try harness()
        let calls = RedisConnectionFailureTests.Calls()
        let nested = LockedBox(0)
        h.run { c in
            nonisolated(unsafe) let c = c
            c.send(["BLPOP", "relay:test:never", "30"], calls.handler(0))
            for i in 1..<20 {
                let v = binaryValue(i, sizesAcrossTheRetainLimit[i % sizesAcrossTheRetainLimit.count])
                c.send(["ECHO", v]) { r in
                    calls.record(i, r.errorMessage.map { "error:" + $0 } ?? "ok")
                    // Send again from inside the failure, big and small.
                    c.send(["SET", "relay:test:fail:\(i)", binaryValue(i + 100, 200_000)]) { _ in nested.mutate { $0 += 1 } }
                    c.send(["ECHO", "x"]) { _ in nested.mutate { $0 += 1 } }
                }
            }
        }
        try eventually(5, "in flight") { (try? self.redis.cli("CLIENT", "LIST"))?.contains("cmd=blpop") == true }
        _ = try redis.cli("CLIENT", "KILL", "TYPE", "normal")
        try eventually(10, "every handler") { calls.count >= 20 }
        try eventually(10, "every nested handler") { nested.value >= 38 }
        XCTAssertEqual(calls.count, 20)
        for i in 0..<20 {
            XCTAssertEqual(calls.got.value[i]?.count, 1, "handler \(i) once")
            XCTAssertTrue(calls.got.value[i]?.first?.hasPrefix("error:DISCONNECTED") == true, "handler \(i): \(calls.got.value[i] ?? [])")
        }
        try eventually(10, "reconnected") { h.connects.value >= 2 }
        let big = binaryValue(7, 1_500_000), small = binaryValue(8, 9)
        let got = LockedBox<[[UInt8]]>([])
        h.run { c in
            c.send(["SET", "relay:test:after:big", big], nil)
            c.send(["SET", "relay:test:after:small", small], nil)
            c.send(["GET", "relay:test:after:big"]) { r in if case .bulk(let b) = r { got.mutate { $0.append(b) } } else { got.mutate { $0.append([]) } } }
            c.send(["GET", "relay:test:after:small"]) { r in if case .bulk(let b) = r { got.mutate { $0.append(b) } } else { got.mutate { $0.append([]) } } }
        }
        try eventually(10, "the read-back") { got.value.count == 2 }
        XCTAssertTrue(got.value[0] == Array(big.utf8), "the large value after the loss")
        XCTAssertTrue(got.value[1] == Array(small.utf8), "the small value after the loss")
    }
}
