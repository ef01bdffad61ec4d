import RelayTestKit
import XCTest
@testable import RelayEventStore

/// `OffsetRuns`: the `SETRANGE`s of a text write, applied to a model of the `offsets`
/// key's bytes, leave the bytes of one `BITFIELD SET u32 #seq` per event (Redis
/// `BITFIELD`: fields big-endian at `#index × 32` bits), one run per stretch of
/// consecutive seqs.
final class OffsetRunsTests: XCTestCase {
    /// The key's bytes after `writes` (byte offset, bytes), zero-padded as Redis pads.
    private static func apply(_ writes: [(Int, [UInt8])], to bytes: inout [UInt8]) {
        for (at, b) in writes {
            if bytes.count < at + b.count { bytes += [UInt8](repeating: 0, count: at + b.count - bytes.count) }
            bytes.replaceSubrange(at..<(at + b.count), with: b)
        }
    }

    /// `SET u32 #seq <end>` as Redis lays it out.
    private static func u32(_ o: TextCheckpoint.Offset) -> (Int, [UInt8]) {
        let v = UInt32(truncatingIfNeeded: o.end) | (o.isPart ? 0x8000_0000 : 0)   // SET u32 of the marked offset
        return (4 * Int(o.seq), [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: v >> UInt32($0)) })
    }

    func testAWriteIsOneRunAndAGapStartsAnother() {
        let o = [3, 4, 5].map { TextCheckpoint.Offset(seq: UInt64($0), end: $0 * 10) }
        XCTAssertEqual(OffsetRuns.runs(o), [.init(byteOffset: 12, bytes: [0, 0, 0, 30, 0, 0, 0, 40, 0, 0, 0, 50])])
        XCTAssertEqual(OffsetRuns.runs([]), [])
        // A group of 25 consecutive events (the appender's write): one SETRANGE of 100 bytes.
        let group = OffsetRuns.runs((26...50).map { .init(seq: UInt64($0), end: $0) })
        XCTAssertEqual(group.count, 1)
        XCTAssertEqual(group.first?.bytes.count, 100)
        XCTAssertEqual(group.first?.byteOffset, 104)
        XCTAssertEqual(OffsetRuns.runs([.init(seq: 4, end: 1), .init(seq: 6, end: 0x0102_0304)]),
                       [.init(byteOffset: 16, bytes: [0, 0, 0, 1]), .init(byteOffset: 24, bytes: [1, 2, 3, 4])])
        // Seq 0 and the 31-bit extremes; an offset past 31 bits wraps; a part sets the top bit
        // (`StoredPiece.word`).
        XCTAssertEqual(OffsetRuns.runs([.init(seq: 0, end: 0x7FFF_FFFF), .init(seq: 1, end: 0x8000_0002)]),
                       [.init(byteOffset: 0, bytes: [127, 255, 255, 255, 0, 0, 0, 2])])
        XCTAssertEqual(OffsetRuns.runs([.init(seq: 2, end: 0x7FFF_FFFF, isPart: true), .init(seq: 3, end: 5, isPart: true)]),
                       [.init(byteOffset: 8, bytes: [255, 255, 255, 255, 128, 0, 0, 5])])
    }

    /// Random writes (runs from random starts, random gaps, random 31-bit offsets and part
    /// marks) give
    /// the bytes of one `SET u32` per event, in one run per stretch of consecutive seqs.
    func testRandomWritesMatchOneU32PerEvent() {
        var rng = SplitMix64(seed: 14)
        for round in 0..<2_000 {
            var offsets: [TextCheckpoint.Offset] = []
            var seq = UInt64(rng.next() % 50)
            var stretches = 0
            for k in 0..<Int(rng.next() % 30) {
                let gap = rng.next() % 5 == 0
                seq += gap ? 2 + rng.next() % 3 : 1
                if gap || k == 0 { stretches += 1 }
                offsets.append(.init(seq: seq, end: Int(truncatingIfNeeded: rng.next() % (1 << 31)), isPart: rng.next() % 3 == 0))
            }
            let runs = OffsetRuns.runs(offsets)
            var ranged: [UInt8] = [], single: [UInt8] = []
            Self.apply(runs.map { ($0.byteOffset, $0.bytes) }, to: &ranged)
            Self.apply(offsets.map(Self.u32), to: &single)
            XCTAssertEqual(ranged, single, "round \(round): \(offsets)")
            XCTAssertEqual(runs.count, stretches, "round \(round)")
        }
    }
}
