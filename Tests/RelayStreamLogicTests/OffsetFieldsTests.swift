import RelayTestKit
import XCTest
@testable import RelayStreamLogic

/// `OffsetFields`: the `BITFIELD` operations of a text write, applied to a model of the
/// `offsets` key's bytes (Redis `BITFIELD`: fields big-endian at `#index × width` bits),
/// leave the same bytes as one `SET u32 #seq` per event, in half the operations where
/// seqs pair up.
final class OffsetFieldsTests: XCTestCase {
    /// The key's bytes after `operations`, as Redis lays out `u32` and `i64` fields.
    private static func apply(_ ops: [OffsetFields.Operation], to bytes: inout [UInt8]) {
        func put(_ v: UInt64, width: Int, at byte: Int) {
            if bytes.count < byte + width { bytes += [UInt8](repeating: 0, count: byte + width - bytes.count) }
            for i in 0..<width { bytes[byte + i] = UInt8(truncatingIfNeeded: v >> UInt64(8 * (width - 1 - i))) }
        }
        for op in ops {
            switch op {
            case .u32(let index, let value): put(UInt64(value), width: 4, at: Int(index) * 4)
            case .i64(let index, let value): put(UInt64(bitPattern: value), width: 8, at: Int(index) * 8)
            }
        }
    }

    func testPairsAndSinglesInAWrite() {
        let o = [3, 4, 5, 6].map { TextCheckpoint.Offset(seq: UInt64($0), end: $0 * 10) }
        XCTAssertEqual(OffsetFields.operations(o), [.u32(index: 3, value: 30), .i64(index: 2, value: 40 << 32 | 50), .u32(index: 6, value: 60)])
        XCTAssertEqual(OffsetFields.operations([]), [])
        // A group of 25 consecutive events (the appender's write): 13 operations, not 25.
        XCTAssertEqual(OffsetFields.operations((26...50).map { .init(seq: UInt64($0), end: $0) }).count, 13)
        XCTAssertEqual(OffsetFields.operations((25...49).map { .init(seq: UInt64($0), end: $0) }).count, 13)
        // A gap: 4 and 6 have no partner.
        XCTAssertEqual(OffsetFields.operations([.init(seq: 4, end: 1), .init(seq: 6, end: 2)]), [.u32(index: 4, value: 1), .u32(index: 6, value: 2)])
        // The top bit set: the pair's value is negative, its bytes the same.
        XCTAssertEqual(OffsetFields.operations([.init(seq: 0, end: 0xFFFF_FFFF), .init(seq: 1, end: 1)]), [.i64(index: 0, value: Int64(bitPattern: 0xFFFF_FFFF_0000_0001))])
    }

    /// Random writes (runs of consecutive seqs from random starts, random gaps, random
    /// 32-bit values) give the bytes of one `SET u32` per event, never in more operations.
    func testRandomWritesMatchOneU32PerEvent() {
        var rng = SplitMix64(seed: 14)
        for round in 0..<2_000 {
            var offsets: [TextCheckpoint.Offset] = []
            var seq = UInt64(rng.next() % 50)
            for _ in 0..<Int(rng.next() % 30) {
                seq += rng.next() % 5 == 0 ? 2 + rng.next() % 3 : 1
                offsets.append(.init(seq: seq, end: Int(truncatingIfNeeded: rng.next() % (1 << 32))))
            }
            let ops = OffsetFields.operations(offsets)
            var paired: [UInt8] = [], single: [UInt8] = []
            Self.apply(ops, to: &paired)
            Self.apply(offsets.map { .u32(index: $0.seq, value: UInt32(truncatingIfNeeded: $0.end)) }, to: &single)
            let n = max(paired.count, single.count)
            paired += [UInt8](repeating: 0, count: n - paired.count)
            single += [UInt8](repeating: 0, count: n - single.count)
            XCTAssertEqual(paired, single, "round \(round): \(offsets)")
            XCTAssertLessThanOrEqual(ops.count, offsets.count, "round \(round)")
        }
    }
}
