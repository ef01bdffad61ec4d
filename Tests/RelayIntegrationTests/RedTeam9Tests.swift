import Foundation
import RelayAuth
import RelayConfiguration
import RelayCore
import RelayLoop
import RelayRedis
import RelayStreamLogic
import RelayTestKit
import RelayTestSupport
import XCTest

/// Red team, session 9 (1fa7ddc, a6fd7a3, b5a8a56): the lossless-resume offsets as binary
/// `SETRANGE` runs (`OffsetRuns`), `ClusterClient` keeping a command's RESP bytes for its
/// resends, `RedisConnection.send([String])` through one reused `RESPCommand`, and the
/// `relay_catch_up_merged_total` counter.
///
/// Attacks: offsets whose bytes are CR, LF, NUL, RESP markers and bytes that are not
/// UTF-8, on every channel (`RedisConnection`, `LossyChannel`, `ClusterClient` while the
/// slot migrates); writes whose seqs are not consecutive, descend or repeat; text writes
/// refused (only the offsets' `SETRANGE`) or with lost replies, then resent by the
/// appender; sends from reply and failure handlers across the reused buffer's retain
/// limit; the catch-up counter against a finished stream resumed from many positions.
final class RedTeam9Tests: RelayTestCase {
    typealias ConnHarness = RedisConnectionTests.Harness

    override class func setUp() {
        super.setUp()
        signal(SIGPIPE, SIG_IGN)
    }

    /// 32-bit values whose big-endian bytes break text handling: CR LF, NUL, RESP
    /// markers (`*3\r\n`, `$3\r\n`), bytes 0x80-0xFF, overlong / surrogate / U+FFFD UTF-8.
    static let hostile: [UInt32] = [0x0D0A_0D0A, 0x0A0D_0A0D, 0, 0x000D_0A00, 0x2A33_0D0A, 0x2433_0D0A, 0xFFFF_FFFF,
                                    0x8080_8080, 0xC0AF_C0AF, 0xEDA0_80ED, 0xEFBF_BD00, 0x0000_000D, 0x0A00_0000,
                                    0x7FFF_FFFF, 0x8000_0000, 0xFEFF_000D, 0x0D00_0A00, 0x3A31_0D0A, 0x2D45_5252]

    private func newKeys(_ tag: String = "rt9") -> StreamKeys {
        StreamKeys(try! RequestID(validating: tag + UUID().uuidString.replacingOccurrences(of: "-", with: "")))
    }

    private func connHarness() throws -> ConnHarness {
        let h = try ConnHarness(url: redis.url)
        addTeardownBlock { h.stop() }
        try eventually(10, "the connection") { h.connects.value > 0 }
        return h
    }

    /// `GET key`'s raw bytes, read in process (redis-cli would decode them as text).
    private func rawGet(_ h: ConnHarness, _ key: String) throws -> [UInt8]? {
        let got = LockedBox<RedisReply?>(nil)
        h.run { c in c.send(["GET", key]) { r in got.value = r } }
        try eventually(10, "GET \(key)") { got.value != nil }
        switch got.value! {
        case .bulk(let b): return b
        case .null: return nil
        case let other: XCTFail("GET \(key): \(other)"); return nil
        }
    }

    /// The same offsets as one `BITFIELD key SET u32 #seq <end> …` per write (the old
    /// path and the Lua final-event path), in order.
    private func referenceWrite(_ key: String, _ writes: [TextCheckpoint.Write]) throws {
        for w in writes where !w.offsets.isEmpty {
            var args = ["BITFIELD", key]
            for o in w.offsets { args += ["SET", "u32", "#\(o.seq)", String(o.end)] }
            _ = try redis.cli(args)
        }
    }

    /// Offset writes of every shape: a consecutive run of hostile values, gaps of one,
    /// descending and repeated seqs (the later value wins, as in one `BITFIELD`), seq 0,
    /// values past 32 bits (wrapped), and a long run of 3,000 seqs.
    static func hostileWrites() -> [TextCheckpoint.Write] {
        func w(_ pairs: [(UInt64, Int)]) -> TextCheckpoint.Write {
            TextCheckpoint.Write(start: 0, text: "", offsets: pairs.map { .init(seq: $0.0, end: $0.1) })
        }
        var out: [TextCheckpoint.Write] = []
        out.append(w((1...UInt64(hostile.count)).map { ($0, Int(hostile[Int($0) - 1])) }))
        out.append(w([(40, 0x0D0A_0D0A), (42, 0x0A0D_0A0D), (43, 0xFFFF_FFFF), (45, 0), (50, 0x2A33_0D0A)]))
        out.append(w([(63, 0x8080_8080), (62, 0x0D0A_0000), (61, 0x0000_0D0A)]))
        out.append(w([(70, 0xC0AF_C0AF), (70, 0x0D0A_0D0A), (71, 0x00FF_00FF), (71, 0xEFBF_BDEF)]))
        out.append(w([(0, 0x0D0A_0D0A)]))
        out.append(w([(80, (1 << 32) | 0x0D0A), (81, (1 << 33) - 1), (82, (1 << 32) + 0x8000_0000)]))
        out.append(w((100..<3100).map { ($0, Int(hostile[Int($0) % hostile.count]) ^ Int($0)) }))
        // Overwrites of earlier seqs with other hostile values.
        out.append(w((5...12).map { ($0, Int(hostile[(Int($0) * 7) % hostile.count])) }))
        return out
    }

    /// Attack 1: the hostile offsets written by `writeText` on the RESP bytes path
    /// (`RedisConnection.send(_: RESPCommand)`) are the bytes of one `BITFIELD SET u32`
    /// per seq, byte for byte.
    func testHostileOffsetsOnTheDirectConnectionAreTheBytesOfBitfieldSetU32() throws {
        let h = try connHarness()
        nonisolated(unsafe) let log = EventLog(connection: h.connection, maxLen: 200, ttlMs: 60_000, lossless: true)
        h.run { _ in log.connected() }
        let k = newKeys(), ref = "rt9ref:" + UUID().uuidString
        let writes = Self.hostileWrites()
        try writeTexts(loop: h.loop, log: log, k, writes, timeout: 20)
        try referenceWrite(ref, writes)
        let got = try rawGet(h, k.offsets), want = try rawGet(h, ref)
        XCTAssertEqual(got?.count, want?.count, "the offsets key's length")
        XCTAssertTrue(got == want, "the offsets key's bytes equal BITFIELD SET u32's")
    }

    /// Attack 1b: the same through `LossyChannel` (`send(encoded:)`, the bytes
    /// `ClusterClient` resends), with the writes resent twice (positional: same bytes).
    func testHostileOffsetsThroughEncodedResendsAreTheBytesOfBitfieldSetU32() throws {
        let h = try appendHarness()
        let reader = try connHarness()
        let k = newKeys(), ref = "rt9ref:" + UUID().uuidString
        let writes = Self.hostileWrites()
        try writeTexts(loop: h.loop, log: h.log, k, writes + writes.reversed() + writes, timeout: 20)
        try referenceWrite(ref, writes + writes.reversed() + writes)
        let got = try rawGet(reader, k.offsets), want = try rawGet(reader, ref)
        XCTAssertEqual(got?.count, want?.count, "the offsets key's length")
        XCTAssertTrue(got == want, "the offsets key's bytes equal BITFIELD SET u32's")
        XCTAssertGreaterThan(Int(try redis.cli("PTTL", k.offsets)) ?? -1, 0, "the offsets key has the TTL")
    }

    /// The pieces of an answer whose cumulative end offsets hit hostile byte patterns:
    /// 13 (CR), 10 (LF) boundaries, 0x80, 0xFF, 0x0D0A, 0x0A0D, 0x0D00, 0x0A0D0A (three
    /// bytes of CR/LF), with multi-byte UTF-8 in between.
    static func hostilePieces() -> [String] {
        let targets = [10, 13, 0x80, 0xFF, 0x100, 0x0A0D, 0x0D00, 0x0D0A, 0x0D0A + 0x80, 0x0A_0D0A, 0x0A_0D0A + 0x0D]
        let odd = ["\r\n", "\u{0}", "é", "👩‍👩‍👧", "مَ", "\u{2028}", "*3\r\n", "$3\r\n"]
        var pieces: [String] = []
        var end = 0
        var i = 0
        for t in targets {
            // A few small odd pieces, then one that ends exactly at the target.
            while end + 20 < t && i % 3 != 2 {
                let p = odd[i % odd.count]
                pieces.append(p)
                end += p.utf8.count
                i += 1
            }
            i += 1
            var need = t - end
            var p = ""
            while need >= 2 && need % 2 == 0 { p += "é"; need -= 2 }
            p += String(repeating: "x", count: need)
            pieces.append(p)
            end = t
        }
        for j in 0..<40 { pieces.append(odd[j % odd.count] + "\(j)") }
        return pieces
    }

    /// Creates a stream and its appender on `loop`, appends `pieces` then `done`, waits
    /// for the drain after the final event.
    private func runAppender(loop: EventLoop, log: EventLog, _ id: RequestID, _ pieces: [String],
                             midway: (() throws -> Void)? = nil) throws {
        let appender = LockedBox<StreamAppender?>(nil)
        let run = try startAppender(loop: loop, log: log, id, appender: appender, createTimeout: 10)
        let half = pieces.count / 2
        let first = Array(pieces.prefix(half)), second = Array(pieces.dropFirst(half))
        loop.post {
            for (i, p) in first.enumerated() { appender.value!.append(seq: UInt64(i + 1), json: StreamEvent.delta(p).json, text: p) }
        }
        try midway?()
        let n = pieces.count
        let doneJSON = StreamEvent.done(finishReason: "stop", usage: Usage(promptTokens: 1, completionTokens: n)).json
        loop.post {
            for (i, p) in second.enumerated() {
                appender.value!.append(seq: UInt64(half + i + 1), json: StreamEvent.delta(p).json, text: p)
            }
            appender.value!.append(seq: UInt64(n + 1), json: doneJSON, text: "", finalState: "done")
        }
        try eventually(30, "the appender to drain after the final event") {
            run.failure.value != nil || (run.drained.value > 0 && appender.value?.ackedSeq == UInt64(n + 1))
        }
        XCTAssertNil(run.failure.value)
    }

    /// Every seq's stored end offset (`BITFIELD GET u32`) and catch-up ranges read in
    /// process (`EventLog.catchUp`), against the pieces.
    private func assertTextAndOffsets(loop: EventLoop, log: EventLog, _ id: RequestID, _ pieces: [String],
                                      file: StaticString = #filePath, line: UInt = #line) throws {
        let k = StreamKeys(id)
        var ends = [0]
        for p in pieces { ends.append(ends.last! + p.utf8.count) }
        let read = try redis.cli(["BITFIELD", k.offsets] + (1...pieces.count).flatMap { ["GET", "u32", "#\($0)"] })
        XCTAssertEqual(read.split(separator: "\n").map { Int($0) ?? -1 }, Array(ends.dropFirst()), "each seq's u32 end offset",
                       file: file, line: line)
        // Ranges: from 0, to the end, and every neighbour pair, plus a stride of others.
        var ranges: [(Int, Int)] = []
        for s in 0...pieces.count { ranges.append((0, s)); ranges.append((s, pieces.count)) }
        for s in 0..<pieces.count { ranges.append((s, s + 1)) }
        for s in stride(from: 0, to: pieces.count, by: 3) { ranges.append((s, min(pieces.count, s + 7))) }
        nonisolated(unsafe) let log = log
        let got = LockedBox<[Int: [UInt8]]>([:])
        let asked = ranges
        loop.post {
            for (i, r) in asked.enumerated() {
                log.catchUp(id, from: UInt64(r.0), to: UInt64(r.1)) { res in
                    let t = (try? res.get()) ?? nil
                    got.mutate { $0[i] = t.map { Array($0.utf8) } ?? [0xFF, 0xFE] }
                }
            }
        }
        try eventually(20, "every catch-up read") { got.value.count == ranges.count }
        var bad = 0
        for (i, r) in ranges.enumerated() {
            let want = Array(pieces[r.0..<r.1].joined().utf8)
            if got.value[i] != want {
                bad += 1
                if bad <= 5 { XCTFail("catch-up \(r.0)…\(r.1): \(got.value[i]?.count ?? -1) bytes, want \(want.count)", file: file, line: line) }
            }
        }
        XCTAssertEqual(bad, 0, "catch-up ranges wrong", file: file, line: line)
    }

    /// Attack 2: only the offsets' `SETRANGE` of text writes is refused (the text of the
    /// same write is stored): the appender resends after its tail verification, and the
    /// stored offsets (hostile bytes) and every catch-up range are exact.
    func testRefusedOffsetWritesAreResentAndTheCatchUpIsByteExact() throws {
        let h = try appendHarness(maxLen: 40)
        let pieces = Self.hostilePieces()
        let id = try RequestID(validating: "rt9refuse" + UUID().uuidString.replacingOccurrences(of: "-", with: ""))
        // The next three `SETRANGE`s of an `offsets` key are refused (error reply, in
        // order); the text `SETRANGE` of the same write goes through.
        let left = LockedBox(3)
        let ch = h.channel
        h.run {
            ch.refusing = { args in
                guard args.count > 1, args[0] == "SETRANGE", args[1].hasSuffix(":offsets"), left.value > 0 else { return false }
                left.mutate { $0 -= 1 }
                return true
            }
        }
        try runAppender(loop: h.loop, log: h.log, id, pieces)
        XCTAssertEqual(ch.refusedCount.value, 3, "three offsets writes refused")
        try assertTextAndOffsets(loop: h.loop, log: h.log, id, pieces)
    }

    /// Attack 3: replies of text writes lost (executed, answered `DISCONNECTED`:
    /// `LossyChannel`), and text writes refused for a while, mid-stream: the resends
    /// store the same bytes; hostile offsets and every catch-up range exact.
    func testLostAndRefusedTextWritesResentKeepHostileOffsetsExact() throws {
        let h = try appendHarness(maxLen: 40)
        let pieces = Self.hostilePieces()
        let id = try RequestID(validating: "rt9lossy" + UUID().uuidString.replacingOccurrences(of: "-", with: ""))
        let ch = h.channel
        h.run {
            ch.loseReplies(afterXADDs: 7)
            ch.refused = ["SETRANGE"]
        }
        try runAppender(loop: h.loop, log: h.log, id, pieces) {
            try self.eventually(10, "replies lost") { ch.lostReplies > 0 }
            try self.eventually(10, "text writes refused") { ch.refusedCount.value >= 4 }
            h.run { ch.refused = [] }
        }
        XCTAssertGreaterThan(ch.refusedCount.value, 0)
        try assertTextAndOffsets(loop: h.loop, log: h.log, id, pieces)
    }

    /// Attack 6: the catch-up counter (`relay_catch_up_merged_total`): a finished stream
    /// resumed from many positions behind the retained window; each catch-up standing
    /// for events k+1 … (first retained − 1) counts (first retained − 1 − k) − 1, a
    /// catch-up of one event counts 0, a resume inside the window counts nothing.
    func testCatchUpCounterIsTheSumOfKMinusOneOverResumes() throws {
        let relay = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "50000", "RELAY_BUFFER_EVENTS": "60",
                                    "RELAY_WORKERS": "2"])
        let token = RelayProcess.token()
        let id = Chat.newID()
        let all = try Chat.start(port: relay.port, token: token, requestID: id, maxTokens: 700).readAll()
        let n = all.count
        XCTAssertEqual(n, 701)
        XCTAssertEqual(try metric(relay, "relay_catch_up_merged_total"), 0, "nothing caught up yet")
        let retained = Int(try redis.cli("XLEN", streamKey(id, "events"))) ?? 0
        XCTAssertGreaterThan(retained, 0)
        let firstRetained = n - retained + 1
        let reference = Chat.text(all)
        var expected = 0
        for k in [0, 1, 2, firstRetained - 3, firstRetained - 2, firstRetained - 1, firstRetained, n - 1, n, 317] {
            let rest = try Chat.resume(port: relay.port, token: token, requestID: id, lastEventID: String(k)).readAll()
            XCTAssertEqual(Chat.text(Array(all.prefix(k))) + Chat.text(rest), reference, "resume from \(k)")
            if k < firstRetained - 1 {
                XCTAssertEqual(rest.first?.lastEventId, String(firstRetained - 1), "resume from \(k): one catch-up delta")
                expected += (firstRetained - 1 - k) - 1
            }
            try eventually(5, "the counter after the resume from \(k)") {
                try metric(relay, "relay_catch_up_merged_total") == Double(expected)
            }
        }
        XCTAssertEqual(try metric(relay, "relay_catch_up_merged_total"), Double(expected))
        XCTAssertEqual(try metric(relay, "relay_deltas_merged_total"), 0, "no slow-link merge counted")
    }
}

/// Attacks 4 and 5: `RedisConnection.send([String])` through the connection's reused
/// `RESPCommand` (`written`), and `RESPCommand`'s retain limit.
extension RedTeam9Tests {
    /// Sizes across the reused buffer's retain limit (64 KiB) and its initial 1 KiB.
    static let sizes = [3, 70_000, 0, 2_000_000, 17, RESPCommand.retainLimit - 40, 1, RESPCommand.retainLimit + 1, 1023, 5]

    /// Value `i` of `size` bytes: binary (CR LF, NUL, 0xFF), distinct per `i`.
    static func value(_ i: Int, _ size: Int) -> String {
        let unit = "\r\n\u{0}é\(i)*$"
        var s = String(repeating: unit, count: size / max(1, unit.utf8.count) + 1)
        while s.utf8.count > size { s.removeLast() }
        while s.utf8.count < size { s += "z" }
        return s
    }

    /// Attack 4: commands sent from inside reply handlers (nested sends), each of a size
    /// on the other side of the retain limit, and each handler checking the previous
    /// value with a `GET` sent from inside it: every value stored and read back exact.
    func testNestedSendsFromReplyHandlersAcrossTheRetainLimitStoreEachValueExact() throws {
        let h = try connHarness()
        let prefix = "rt9nested:" + UUID().uuidString + ":"
        let sizes = Self.sizes
        let mismatches = LockedBox<[String]>([])
        let finished = LockedBox(false)
        h.run { c in
            nonisolated(unsafe) let c = c
            func step(_ i: Int) {
                guard i < sizes.count else { return finished.value = true }
                let v = Self.value(i, sizes[i])
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
            XCTAssertTrue(got.value[i] == Array(Self.value(i, sizes[i]).utf8), "value \(i) (\(sizes[i]) bytes)")
        }
    }

    /// Attack 4b: failure handlers that send again while the connection is being lost
    /// (`CLIENT KILL` with commands in flight): each gets `DISCONNECTED` once, the
    /// nested sends fail at once (no context) or go out after the reconnect, and the
    /// buffer is sound afterwards (a large then a small value round-trip exact).
    func testSendsFromFailureHandlersWhileTheConnectionIsLostLeaveTheBufferSound() throws {
        let h = try connHarness()
        let calls = RedTeamConnectionTests.Calls()
        let nested = LockedBox(0)
        h.run { c in
            nonisolated(unsafe) let c = c
            c.send(["BLPOP", "rt9:never", "30"], calls.handler(0))
            for i in 1..<20 {
                let v = Self.value(i, Self.sizes[i % Self.sizes.count])
                c.send(["ECHO", v]) { r in
                    calls.record(i, r.errorMessage.map { "error:" + $0 } ?? "ok")
                    // Send again from inside the failure, big and small.
                    c.send(["SET", "rt9:fail:\(i)", Self.value(i + 100, 200_000)]) { _ in nested.mutate { $0 += 1 } }
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
        let big = Self.value(7, 1_500_000), small = Self.value(8, 9)
        let got = LockedBox<[[UInt8]]>([])
        h.run { c in
            c.send(["SET", "rt9:after:big", big], nil)
            c.send(["SET", "rt9:after:small", small], nil)
            c.send(["GET", "rt9:after:big"]) { r in if case .bulk(let b) = r { got.mutate { $0.append(b) } } else { got.mutate { $0.append([]) } } }
            c.send(["GET", "rt9:after:small"]) { r in if case .bulk(let b) = r { got.mutate { $0.append(b) } } else { got.mutate { $0.append([]) } } }
        }
        try eventually(10, "the read-back") { got.value.count == 2 }
        XCTAssertTrue(got.value[0] == Array(big.utf8), "the large value after the loss")
        XCTAssertTrue(got.value[1] == Array(small.utf8), "the small value after the loss")
    }

    /// Attack 5: `RESPCommand`'s retain limit: a buffer grown past it goes back to its
    /// initial size at the next `start` (and only then: the huge command's bytes stay
    /// valid until it); one grown to exactly the limit is kept; `encoded` outlives the
    /// shrink; a command larger than the initial capacity given at `init` never shrinks
    /// below it.
    func testTheReusedBufferShrinksBackAfterAHugeCommand() throws {
        let c = RESPCommand()
        let initial = c.capacity
        c.start(argumentCount: 2)
        c.add(constant: "SET")
        let huge = Self.value(1, 3_000_000)
        c.add(huge)
        XCTAssertGreaterThan(c.capacity, RESPCommand.retainLimit)
        let kept = c.encoded
        XCTAssertEqual(c.arguments().last?.utf8.count, 3_000_000, "the huge command is intact until the next start")
        c.start(argumentCount: 1)
        c.add(constant: "PING")
        XCTAssertEqual(c.capacity, initial, "given back at the next start")
        XCTAssertEqual(c.arguments(), ["PING"])
        XCTAssertEqual(kept.count, 4 + 9 + 10 + 3_000_000 + 2, "encoded kept its bytes")
        XCTAssertTrue(kept.suffix(2) == [13, 10])
        // Grown to exactly the limit: kept (not past it).
        c.start(argumentCount: 1)
        c.add(Self.value(2, RESPCommand.retainLimit / 2 + 100))
        XCTAssertEqual(c.capacity, RESPCommand.retainLimit)
        c.start(argumentCount: 1)
        XCTAssertEqual(c.capacity, RESPCommand.retainLimit, "a buffer at the limit is kept")
        // A large initial capacity is the floor.
        let big = RESPCommand(capacity: 200_000)
        big.start(argumentCount: 1)
        big.add(Self.value(3, 1_000_000))
        big.start(argumentCount: 1)
        XCTAssertEqual(big.capacity, 200_000)
    }

    /// Attack 3b (cluster): hostile offsets and binary text written with `writeText`
    /// straight on a `ClusterClient`, pipelined from a feeder while the stream's slot
    /// migrates key by key (ASK / MOVED / TRYAGAIN resends of the kept RESP bytes).
    /// Each seq is written by one write (and some writes resent as they were); the
    /// offsets key's bytes on the new primary are the model's, byte for byte.
    func testHostileOffsetsOnAClusterWhileTheSlotMigratesAreExact() throws {
        let cluster = try RedisCluster(primaries: 3)
        defer { cluster.stop() }
        let h = try ClusterHarness(url: cluster.url)
        defer { h.stop() }
        try eventually(15, "the cluster client to connect") { h.connections.value > 0 }
        let k = newKeys("rt9cluster")
        let slot = HashSlot.of(k.offsets)
        let from = try cluster.primaryPort(forSlot: slot)
        let to = try XCTUnwrap(try cluster.primaries(askingPort: from).keys.first { $0 != from })
        // Writes of 20 seqs each; the text of write w is 20 odd pieces at its offsets.
        let total = 120
        var writes: [TextCheckpoint.Write] = []
        var model = [UInt8](repeating: 0, count: 4 * (20 * total + 1))
        var textModel: [UInt8] = []
        let odd: [[UInt8]] = [[13, 10], [0], Array("é".utf8), [42, 51, 13, 10], [36, 51, 13, 10], Array("👩‍👩‍👧".utf8), [45, 69, 82, 82]]
        for w in 0..<total {
            var offs: [TextCheckpoint.Offset] = []
            let start = textModel.count
            for j in 0..<20 {
                let seq = UInt64(1 + w * 20 + j)
                textModel += odd[(w + j) % odd.count]
                let v = Self.hostile[(w * 20 + j) % Self.hostile.count] ^ UInt32(truncatingIfNeeded: seq << 8)
                offs.append(.init(seq: seq, end: Int(v)))
                let at = 4 * Int(seq)
                model[at] = UInt8(truncatingIfNeeded: v >> 24)
                model[at + 1] = UInt8(truncatingIfNeeded: v >> 16)
                model[at + 2] = UInt8(truncatingIfNeeded: v >> 8)
                model[at + 3] = UInt8(truncatingIfNeeded: v)
            }
            writes.append(TextCheckpoint.Write(start: start, text: Array(textModel[start...]), offsets: offs))
        }
        nonisolated(unsafe) let log = h.log
        let ok = LockedBox(0), bad = LockedBox<[String]>([])
        let failedWrites = LockedBox<[Int]>([])
        let sent = LockedBox(0)
        let batches = writes.enumerated().map { $0 }
        let feeder = Thread {
            var i = 0
            while i < batches.count {
                let batch = Array(batches[i..<min(batches.count, i + 2)])
                h.run {
                    for (n, w) in batch {
                        // Every fifth write is sent twice (a resend: same bytes, same place).
                        for _ in 0..<(n % 5 == 0 ? 2 : 1) {
                            log.writeText(k, w) { r in
                                switch r {
                                case .success: ok.mutate { $0 += 1 }
                                case .failure(let f):
                                    bad.mutate { $0.append(f.message) }
                                    failedWrites.mutate { $0.append(n) }
                                }
                            }
                        }
                    }
                    sent.value = batch.last!.0 + 1
                }
                i += batch.count
                usleep(8_000)
            }
        }
        feeder.start()
        try eventually(10, "writes under way") { sent.value >= 10 }
        let moved = try cluster.migrate(slot: slot, to: to, pauseMs: 120)
        XCTAssertGreaterThanOrEqual(moved, 1)
        let expectedAnswers = (0..<total).reduce(0) { $0 + ($1 % 5 == 0 ? 2 : 1) }
        try eventually(30, "every write answered") { ok.value + bad.value.count == expectedAnswers }
        // While the slot's owner flips between the two nodes (`migrate` sets `SETSLOT
        // NODE` on the nodes in index order: a source told first redirects to a target
        // still importing, which redirects back), the client backs off from the second
        // redirect on (`ClusterRetryPolicy.immediateRedirects`) within the grace, so no
        // write fails. (Before that, a write could fail with `MOVED` after 5 immediate
        // redirects; the appender resends a failed text write, the same bytes,
        // positional, and so does this test should one fail.)
        let firstFailures = bad.value
        XCTAssertEqual(firstFailures, [], "redirects are waited out within the grace")
        let resend = Array(Set(failedWrites.value)).sorted().map { writes[$0] }
        if !resend.isEmpty { try writeTexts(loop: h.loop, log: h.log, k, resend, timeout: 20) }
        // Read back through the cluster client (raw bytes, from the slot's new primary).
        let got = LockedBox<RedisReply?>(nil), gotText = LockedBox<RedisReply?>(nil)
        nonisolated(unsafe) let client = h.client
        h.run {
            client.send(["GET", k.offsets]) { r in got.value = r }
            client.send(["GET", k.text]) { r in gotText.value = r }
        }
        try eventually(10, "the read-back") { got.value != nil && gotText.value != nil }
        XCTAssertEqual(try cluster.primaryPort(forSlot: slot), to)
        guard case .bulk(let bytes)? = got.value, case .bulk(let text)? = gotText.value else {
            return XCTFail("GET: \(String(describing: got.value)) \(String(describing: gotText.value))")
        }
        XCTAssertEqual(bytes.count, model.count, "the offsets key's length")
        if let i = zip(bytes, model).enumerated().first(where: { $0.element.0 != $0.element.1 })?.offset {
            XCTFail("offsets byte \(i) (seq \(i / 4)): \(bytes[i]) instead of \(model[i])")
        }
        XCTAssertTrue(text == textModel, "the text key's bytes (\(text.count) of \(textModel.count))")
        print("rt9 cluster: \(moved) keys moved, \(try h.counters()), first-send failures \(firstFailures)")
    }

    /// Attack 3c (end to end): relays on a Redis Cluster with a 40-event window; the
    /// stream's slot migrates key by key while it is generated (text writes in flight:
    /// ASK / MOVED resends of the binary offsets); then the finished stream is resumed on
    /// the other relay from every position, most of them behind the window (a lossless
    /// catch-up reading the migrated offsets): every resume's text completes the answer
    /// byte for byte, and the catch-up counter is the sum of k - 1 over the catch-ups.
    func testResumesBehindTheWindowAfterASlotMigrationOnAClusterAreExact() throws {
        let cluster = try RedisCluster(primaries: 3)
        defer { cluster.stop() }
        func relay(_ rate: String) throws -> RelayProcess {
            let r = try RelayProcess(redisURL: cluster.url, env: ["RELAY_SIMULATED_TOKENS_PER_SECOND": rate, "RELAY_BUFFER_EVENTS": "40",
                                                                  "RELAY_COALESCE_BACKLOG": "0"])
            addTeardownBlock { r.kill9() }
            return r
        }
        let a = try relay("150"), b = try relay("150")
        let maxTokens = 300
        let reference = referenceText(maxTokens: maxTokens)
        let sub = "rt9-cluster-user"
        let token = RelayProcess.token(sub: sub)
        let id = Chat.newID()
        let key = { (part: String) in "relay:{\(OwnerHash.of(sub)):\(id)}:\(part)" }
        let slot = HashSlot.of(key("meta"))
        let from = try cluster.primaryPort(forSlot: slot)
        let to = try XCTUnwrap(try cluster.primaries(askingPort: from).keys.first { $0 != from })
        let c = try Chat.start(port: a.port, token: token, requestID: id, maxTokens: maxTokens)
        var events: [SSEMessage] = []
        while events.count < 60, let e = try c.nextEvent() { events.append(e) }
        let moved = try cluster.migrate(slot: slot, to: to, pauseMs: 200)
        XCTAssertGreaterThanOrEqual(moved, 3, "the stream's keys were migrated one by one")
        let midway = events.count
        events += try c.readAll(timeout: 30)
        XCTAssertLessThan(midway, events.count - 40, "the stream ran on well past the migration")
        XCTAssertEqual(Chat.text(events), reference, "the live answer")
        let n = events.count
        XCTAssertEqual(n, maxTokens + 1)
        XCTAssertEqual(try cluster.primaryPort(forSlot: slot), to)
        let retained = Int(try cluster.cli(to, ["XLEN", key("events")])) ?? 0
        XCTAssertTrue((1...40).contains(retained), "retained \(retained)")
        let firstRetained = n - retained + 1
        let before = try metric(b, "relay_catch_up_merged_total") ?? -1
        var expected = before
        var wrong: [Int] = []
        for k in 0...n {
            let rest = try Chat.resume(port: b.port, token: token, requestID: id, lastEventID: String(k)).readAll()
            if Chat.text(Array(events.prefix(k))) + Chat.text(rest) != reference { wrong.append(k) }
            if k < firstRetained - 1 {
                if rest.first?.lastEventId != String(firstRetained - 1) { wrong.append(-k) }
                expected += Double((firstRetained - 1 - k) - 1)
            }
        }
        XCTAssertEqual(wrong, [], "resumes whose text or catch-up delta is wrong (negative: the catch-up's id)")
        try eventually(5, "the catch-up counter") { try metric(b, "relay_catch_up_merged_total") == expected }
        XCTAssertEqual(try metric(b, "relay_catch_up_merged_total"), expected)
        print("rt9 cluster relay: \(moved) keys moved, first retained \(firstRetained), catch-up merged \(expected)")
    }
}
