import Foundation
import RelayAuth
import RelayConfiguration
import RelayCore
import RelayLoop
import RelayRedis
import RelayTestKit
import RelayTestSupport
import XCTest
import RelayCluster
import RelayEventStore

/// The lossless-resume offsets (binary `SETRANGE` runs, `OffsetRuns`; the offsets key of
/// docs/DATA_MODEL.md) when their bytes break text handling: offsets whose big-endian
/// bytes are CR, LF, NUL, RESP markers or not UTF-8, written on every channel (a
/// `RedisConnection`, `LossyChannel`'s resent RESP bytes, a `ClusterClient` while the
/// slot migrates); writes whose seqs are not consecutive, descend or repeat; offset and
/// text writes refused or with their replies lost, then resent by the appender. The
/// stored bytes are those of one Redis `BITFIELD SET u32` per seq, and every catch-up
/// range is the answer's text byte for byte.
final class HostileOffsetsTests: RelayTestCase {
    override class func setUp() {
        super.setUp()
        signal(SIGPIPE, SIG_IGN)
    }

    /// 32-bit values whose big-endian bytes break text handling: CR LF, NUL, RESP
    /// markers (`*3\r\n`, `$3\r\n`), bytes 0x80-0xFF, overlong / surrogate / U+FFFD UTF-8.
    static let hostile: [UInt32] = [0x0D0A_0D0A, 0x0A0D_0A0D, 0, 0x000D_0A00, 0x2A33_0D0A, 0x2433_0D0A, 0xFFFF_FFFF,
                                    0x8080_8080, 0xC0AF_C0AF, 0xEDA0_80ED, 0xEFBF_BD00, 0x0000_000D, 0x0A00_0000,
                                    0x7FFF_FFFF, 0x8000_0000, 0xFEFF_000D, 0x0D00_0A00, 0x3A31_0D0A, 0x2D45_5252]

    private func newKeys(_ tag: String = "hostile") -> StreamKeys {
        StreamKeys(try! RequestID(validating: tag + UUID().uuidString.replacingOccurrences(of: "-", with: "")))
    }

    private func connHarness() throws -> RedisConnectionTests.Harness {
        let h = try RedisConnectionTests.Harness(url: redis.url)
        addTeardownBlock { h.stop() }
        try eventually(10, "the connection") { h.connects.value > 0 }
        return h
    }

    /// `GET key`'s raw bytes, read in process (redis-cli would decode them as text).
    private func rawGet(_ h: RedisConnectionTests.Harness, _ key: String) throws -> [UInt8]? {
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
            for o in w.offsets { args += ["SET", "u32", "#\(o.seq)", String(o.word)] }
            _ = try redis.cli(args)
        }
    }

    /// Offset writes of every shape: a consecutive run of hostile values, gaps of one,
    /// descending and repeated seqs (the later value wins, as in one `BITFIELD`), seq 0,
    /// values past 32 bits (wrapped), and a long run of 3,000 seqs.
    static func hostileWrites() -> [TextCheckpoint.Write] {
        func w(_ pairs: [(UInt64, Int)]) -> TextCheckpoint.Write {
            TextCheckpoint.Write(start: 0, text: "", offsets: pairs.map { .init(seq: $0.0, word: UInt32(truncatingIfNeeded: $0.1)) })
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

    /// The hostile offsets written by `writeText` on the RESP bytes path
    /// (`RedisConnection.send(_: RESPCommand)`) are the bytes of one `BITFIELD SET u32`
    /// per seq, byte for byte.
    func testHostileOffsetsOnTheDirectConnectionAreTheBytesOfBitfieldSetU32() throws {
        let h = try connHarness()
        nonisolated(unsafe) let log = EventLog(connection: h.connection, settings: EventStoreSettings(maxLen: 200, ttlMs: 60_000, lossless: true))
        h.run { _ in log.connected() }
        let k = newKeys(), ref = "hostile-ref:" + UUID().uuidString
        let writes = Self.hostileWrites()
        try writeTexts(loop: h.loop, log: log, k, writes, timeout: 20)
        try referenceWrite(ref, writes)
        let got = try rawGet(h, k.offsets), want = try rawGet(h, ref)
        XCTAssertEqual(got?.count, want?.count, "the offsets key's length")
        XCTAssertTrue(got == want, "the offsets key's bytes equal BITFIELD SET u32's")
    }

    /// The same through `LossyChannel` (`send(encoded:)`, the bytes
    /// `ClusterClient` resends), with the writes resent twice (positional: same bytes).
    func testHostileOffsetsThroughEncodedResendsAreTheBytesOfBitfieldSetU32() throws {
        let h = try appendHarness()
        let reader = try connHarness()
        let k = newKeys(), ref = "hostile-ref:" + UUID().uuidString
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
            for (i, p) in first.enumerated() { appender.value!.append(seq: UInt64(i + 1), event: .delta(p)) }
        }
        try midway?()
        let n = pieces.count
        let doneJSON = StreamEvent.done(finishReason: "stop", usage: Usage(promptTokens: 1, completionTokens: n)).json
        loop.post {
            for (i, p) in second.enumerated() {
                appender.value!.append(seq: UInt64(half + i + 1), event: .delta(p))
            }
            appender.value!.append(seq: UInt64(n + 1), event: try! StreamEvent(json: doneJSON))
        }
        try eventually(30, "the appender to drain after the final event") {
            run.failure.value != nil || (run.drained.value > 0 && appender.value?.ackedSeq == UInt64(n + 1))
        }
        XCTAssertNil(run.failure.value)
    }

    /// Every seq's stored end offset (`BITFIELD GET u32`) and catch-up ranges read in
    /// process (`EventLog.catchUp`: each delta at its own seq), against the pieces.
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
        let got = LockedBox<[Int: [SequencedEvent]?]>([:])
        let asked = ranges
        loop.post {
            for (i, r) in asked.enumerated() {
                log.catchUp(id, from: UInt64(r.0), to: UInt64(r.1)) { res in
                    let t = (try? res.get()) ?? nil
                    got.mutate { $0[i] = t }
                }
            }
        }
        try eventually(20, "every catch-up read") { got.value.count == ranges.count }
        var bad = 0
        for (i, r) in ranges.enumerated() {
            // Each delta back at its own seq, byte-exact.
            let want = (r.0..<r.1).map { SequencedEvent(seq: UInt64($0 + 1), json: StreamEvent.delta(pieces[$0]).json) }
            if got.value[i] != .some(want) {
                bad += 1
                if bad <= 5 { XCTFail("catch-up \(r.0)…\(r.1): \(got.value[i]??.count ?? -1) deltas, want \(want.count)", file: file, line: line) }
            }
        }
        XCTAssertEqual(bad, 0, "catch-up ranges wrong", file: file, line: line)
    }

    /// Only the offsets' `SETRANGE` of text writes is refused (the text of the
    /// same write is stored): the appender resends after its tail verification, and the
    /// stored offsets (hostile bytes) and every catch-up range are exact.
    func testRefusedOffsetWritesAreResentAndTheCatchUpIsByteExact() throws {
        let h = try appendHarness(maxLen: 40)
        let pieces = Self.hostilePieces()
        let id = try RequestID(validating: "hostilerefuse" + UUID().uuidString.replacingOccurrences(of: "-", with: ""))
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

    /// Replies of text writes lost (executed, answered `DISCONNECTED`:
    /// `LossyChannel`), and text writes refused for a while, mid-stream: the resends
    /// store the same bytes; hostile offsets and every catch-up range exact.
    func testLostAndRefusedTextWritesResentKeepHostileOffsetsExact() throws {
        let h = try appendHarness(maxLen: 40)
        let pieces = Self.hostilePieces()
        let id = try RequestID(validating: "hostilelossy" + UUID().uuidString.replacingOccurrences(of: "-", with: ""))
        let ch = h.channel
        h.run {
            ch.loseReplies(afterXADDs: 7)
            ch.refused = ["SETRANGE"]
        }
        try runAppender(loop: h.loop, log: h.log, id, pieces) {
            try eventually(10, "replies lost") { ch.lostReplies > 0 }
            try eventually(10, "text writes refused") { ch.refusedCount.value >= 4 }
            h.run { ch.refused = [] }
        }
        XCTAssertGreaterThan(ch.refusedCount.value, 0)
        try assertTextAndOffsets(loop: h.loop, log: h.log, id, pieces)
    }

    /// On a Redis Cluster: hostile offsets and binary text written with `writeText`
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
        let k = newKeys("hostilecluster")
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
                offs.append(.init(seq: seq, word: UInt32(truncatingIfNeeded: v)))
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
                usleep(8_000)   // pacing on purpose: the feeder sends a batch every 8 ms while the slot migrates
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
        // write fails. (Should one fail, this test resends it as the appender resends a
        // failed text write: the same bytes, positional.)
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
        print("hostile offsets on a cluster: \(moved) keys moved, \(try h.counters()), first-send failures \(firstFailures)")
    }
}
