import Foundation
import RelayConfiguration
import RelayCore
import RelayLoop
import RelayRedis
import RelayTestKit
import XCTest
import RelayEventStore

/// The offsets the text writes store (binary `SETRANGE` runs, `OffsetRuns`; the offsets
/// key of docs/DATA_MODEL.md) on a real `redis-server`, compared with what one Redis
/// `BITFIELD SET u32` per seq stores: random values
/// (top bits, extremes), random groupings (odd/even first seqs, gaps, lone seqs),
/// overlapping resends, interleaving with the `appendFinal`-style `SET u32` writes; and
/// the catch-up text byte for byte after random text writes.
final class StoredOffsetsTests: RelayTestCase {
    /// An `EventLog` straight on a `RedisConnection` (its RESP bytes go to hiredis as
    /// written; `AppendHarness`' `LossyChannel` passes `encoded` bytes on, as
    /// `ClusterClient` does).
    final class Direct: @unchecked Sendable {
        let loop: EventLoop
        let connection: RedisConnection
        let log: EventLog
        let connected = LockedBox(false)
        private let thread: Thread
        init(_ url: String) throws {
            loop = try EventLoop()
            connection = RedisConnection(loop: loop, endpoint: try RedisEndpoint.parse(url), role: .commands)
            log = EventLog(connection: connection, settings: EventStoreSettings(maxLen: 200, ttlMs: 60_000, lossless: true))
            let l = log, c = connected, lp = loop
            nonisolated(unsafe) let conn = connection
            connection.onConnect = { l.connected(); c.value = true }
            loop.post { conn.connect() }
            thread = Thread { lp.run() }
            thread.start()
        }
        func stop() {
            nonisolated(unsafe) let c = connection
            let lp = loop
            loop.post { c.close(); lp.stop() }
            let t = thread
            pollUntil(timeout: 5) { t.isFinished }
        }
    }

    private func writeDirect(_ d: Direct, _ k: StreamKeys, _ writes: [TextCheckpoint.Write]) throws {
        try writeTexts(loop: d.loop, log: d.log, k, writes)
    }

    private func newKeys() -> StreamKeys {
        StreamKeys(try! RequestID(validating: "offsets" + UUID().uuidString.replacingOccurrences(of: "-", with: "")))
    }

    private func write(_ h: AppendHarness, _ k: StreamKeys, _ writes: [TextCheckpoint.Write]) throws {
        try writeTexts(loop: h.loop, log: h.log, k, writes)
    }

    /// `GET u32 #0…#n` in one `BITFIELD`.
    private func readU32(_ k: StreamKeys, through n: UInt64) throws -> [UInt32] {
        var args = ["BITFIELD", k.offsets]
        for s in 0...n { args += ["GET", "u32", "#\(s)"] }
        return try redis.cli(args).split(separator: "\n").map { UInt32($0)! }
    }

    /// The same operations sent as one `SET u32` per seq to a second key (the reference).
    private func referenceWrite(_ key: String, _ offsets: [TextCheckpoint.Offset]) throws {
        guard !offsets.isEmpty else { return }
        var args = ["BITFIELD", key]
        for o in offsets { args += ["SET", "u32", "#\(o.seq)", String(o.word)] }
        _ = try redis.cli(args)
    }

    private static func randomEnd(_ rng: inout SplitMix64) -> Int {
        switch rng.next() % 6 {
        case 0: return 0
        case 1: return 0xFFFF_FFFF
        case 2: return 0x8000_0000
        case 3: return 0x7FFF_FFFF
        case 4: return Int(rng.next() & 0xFF)
        default: return Int(UInt32(truncatingIfNeeded: rng.next()))
        }
    }

    /// Random groupings of random values: the key's bytes equal a `SET u32`-per-seq key's
    /// (same length, same bytes), and each `GET u32 #seq` the last value written for it.
    func testRandomGroupingsStoreTheBytesOfOneSetU32PerSeq() throws {
        try randomGroupings(direct: false)
    }

    /// The same on the RESP bytes path (`RedisConnection.send(_: RESPCommand)`).
    func testRandomGroupingsStoreTheBytesOfOneSetU32PerSeqDirect() throws {
        try randomGroupings(direct: true)
    }

    private func randomGroupings(direct: Bool) throws {
        let h = try appendHarness()
        let d = try Direct(redis.url)
        addTeardownBlock { d.stop() }
        try eventually(10, "direct connection") { d.connected.value }
        var rng = SplitMix64(seed: direct ? 0xD1EC7 : 0x5EED_0FF5_E7)
        for round in 0..<25 {
            let k = newKeys()
            let ref = "offsets-ref:" + UUID().uuidString
            let n = UInt64(1 + rng.next() % 60)
            var model = [UInt32](repeating: 0, count: Int(n) + 1)
            var writes: [TextCheckpoint.Write] = []
            var refs: [[TextCheckpoint.Offset]] = []
            for _ in 0..<(1 + rng.next() % 8) {
                // A run of ascending seqs from a random start, with random gaps.
                var seq = rng.next() % (n + 1)
                var offs: [TextCheckpoint.Offset] = []
                while seq <= n && offs.count < 30 {
                    let end = Self.randomEnd(&rng)
                    offs.append(.init(seq: seq, word: UInt32(truncatingIfNeeded: end)))
                    model[Int(seq)] = UInt32(truncatingIfNeeded: end)
                    seq += rng.next() % 4 == 0 ? 2 + rng.next() % 3 : 1
                }
                writes.append(TextCheckpoint.Write(start: 0, text: "", offsets: offs))
                refs.append(offs)
            }
            if direct { try writeDirect(d, k, writes) } else { try write(h, k, writes) }
            for r in refs { try referenceWrite(ref, r) }
            let maxSeq = refs.flatMap { $0 }.map(\.seq).max() ?? 0
            XCTAssertEqual(try readU32(k, through: n), model, "round \(round): GET u32 per seq")
            XCTAssertEqual(try redis.cli("STRLEN", k.offsets), try redis.cli("STRLEN", ref),
                           "round \(round): key length (max seq \(maxSeq))")
            // Byte-for-byte: the same key content (hex of each u8, both keys).
            let len = Int(try redis.cli("STRLEN", ref)) ?? 0
            if len > 0 {
                var a = ["BITFIELD", k.offsets], b = ["BITFIELD", ref]
                for i in 0..<len { a += ["GET", "u8", "#\(i)"]; b += ["GET", "u8", "#\(i)"] }
                XCTAssertEqual(try redis.cli(a), try redis.cli(b), "round \(round): bytes")
            }
            _ = try redis.cli("DEL", ref, k.offsets)
        }
    }

    /// Extremes of two neighbouring 32-bit offsets (bytes 0xFF, 0x80, 0x00: not UTF-8; as
    /// one big-endian i64 the pair reads -1, Int64.min, Int64.max), each written over the
    /// previous bits.
    func testExtremeNeighbouringOffsetsOverwriteExistingBitsExactly() throws {
        let h = try appendHarness()
        let k = newKeys()
        let pairs: [(UInt32, UInt32)] = [(0xFFFF_FFFF, 0xFFFF_FFFF), (0x8000_0000, 0), (0x7FFF_FFFF, 0xFFFF_FFFF),
                                         (0, 0x8000_0000), (0, 0), (0xDEAD_BEEF, 0x0BAD_F00D)]
        for (hi, lo) in pairs {
            try write(h, k, [TextCheckpoint.Write(start: 0, text: "", offsets: [.init(seq: 4, word: hi), .init(seq: 5, word: lo)])])
            XCTAssertEqual(Array(try readU32(k, through: 6)[4...6]), [hi, lo, 0], "\(hi) \(lo)")
        }
    }

    /// Text and offsets in random groups, resends of earlier groups after later ones, the
    /// final event's offsets as `SET u32` (as `appendFinal` writes them) in between: every
    /// catch-up range is the pieces' text byte for byte.
    func testCatchUpAfterRandomGroupsAndResendsIsByteExact() throws {
        let h = try appendHarness()
        var rng = SplitMix64(seed: 0xC47C_0B)
        let alphabet = ["a", "é", "👩‍👩‍👧", "\n", "\"", "\\", "\u{2028}", " ", "مَ", "\u{0}", "x y"]
        for round in 0..<12 {
            let id = try RequestID(validating: "offsets" + UUID().uuidString.replacingOccurrences(of: "-", with: ""))
            let k = StreamKeys(id)
            let n = Int(2 + rng.next() % 50)
            var pieces = [""]   // seq 0: nothing
            for _ in 1...n {
                let len = Int(rng.next() % 4)
                pieces.append((0..<len).map { _ in alphabet[Int(rng.next() % UInt64(alphabet.count))] }.joined())
            }
            var ends = [0]
            for s in 1...n { ends.append(ends[s - 1] + pieces[s].utf8.count) }
            // Partition 1...n into groups.
            var groups: [TextCheckpoint.Write] = []
            var s = 1
            while s <= n {
                let e = min(n, s + Int(rng.next() % 7))
                let text = pieces[s...e].joined()
                groups.append(TextCheckpoint.Write(start: ends[s - 1], text: text,
                                                   offsets: (s...e).map { .init(seq: UInt64($0), word: UInt32(truncatingIfNeeded: ends[$0])) }))
                s = e + 1
            }
            var order = groups
            // Resends: a few earlier groups again, and one merged resend of two neighbours.
            for _ in 0..<3 { order.append(groups[Int(rng.next() % UInt64(groups.count))]) }
            if groups.count >= 2 {
                let i = Int(rng.next() % UInt64(groups.count - 1))
                let a = groups[i], b = groups[i + 1]
                order.append(TextCheckpoint.Write(start: a.start, text: a.text + b.text, offsets: a.offsets + b.offsets))
            }
            // The last seq's offset again as SET u32 (appendFinal's Lua path).
            try write(h, k, order)
            _ = try redis.cli("BITFIELD", k.offsets, "SET", "u32", "#\(n)", String(ends[n]))
            var ranges: [(Int, Int)] = []
            for _ in 0..<30 {
                let from = Int(rng.next() % UInt64(n + 1))
                ranges.append((from, from + Int(rng.next() % UInt64(n - from + 1))))
            }
            // Through the relay's reader (`EventLog.catchUp`): each delta at its own seq, byte-exact.
            nonisolated(unsafe) let log = h.log
            let got = LockedBox<[Int: [SequencedEvent]?]>([:])
            let asked = ranges
            h.loop.post {
                for (i, r) in asked.enumerated() {
                    log.catchUp(id, from: UInt64(r.0), to: UInt64(r.1)) { res in got.mutate { $0[i] = (try? res.get()) ?? nil } }
                }
            }
            try eventually(10, "every catch-up read") { got.value.count == ranges.count }
            for (i, r) in ranges.enumerated() {
                let want = ((r.0 + 1)..<(r.1 + 1)).map { SequencedEvent(seq: UInt64($0), json: StreamEvent.delta(pieces[$0]).json) }
                XCTAssertEqual(got.value[i], .some(want), "round \(round) \(r.0)…\(r.1)")
            }
        }
    }
}
