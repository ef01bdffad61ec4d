/// The `BITFIELD` operations that store a text write's end offsets (`TextCheckpoint.Write`)
/// in the `offsets` key's layout: event `seq`'s end offset, bytes, as an unsigned 32-bit
/// field at `#seq` (bits `seq × 32` …, big-endian: Redis `BITFIELD` doc), which
/// `BITFIELD … GET u32 #seq` reads (`Scripts.catchUp`, `Scripts.appendStatus`).
///
/// Issue 14: each `BITFIELD` operation costs Redis about 0.9 µs to parse and apply, and a
/// write carries one per event. Two consecutive events `2k` and `2k + 1` cover the 64
/// bits at `#k` of a 64-bit field, so they are written as one `SET i64 #k <v>` with `v`
/// the two 32-bit values side by side (the even seq's in the high half), as a signed
/// 64-bit integer: the same bytes, half the operations. A seq whose partner is not in the
/// write (the write's first seq when odd, its last when even) is a `SET u32` alone.
/// Values wrap to 32 bits as a `SET u32` would (`OVERFLOW WRAP`, the default).
///
/// Pure: no I/O.
public enum OffsetFields {
    /// One `BITFIELD` `SET` operation.
    public enum Operation: Sendable, Equatable {
        /// `SET u32 #<index> <value>`.
        case u32(index: UInt64, value: UInt32)
        /// `SET i64 #<index> <value>`: the offsets of seqs `2 × index` (high half) and
        /// `2 × index + 1` (low half).
        case i64(index: UInt64, value: Int64)
    }

    /// The operations for `offsets` (ascending seq, as a write holds them).
    public static func operations(_ offsets: [TextCheckpoint.Offset]) -> [Operation] {
        var out: [Operation] = []
        out.reserveCapacity(offsets.count / 2 + 2)
        var i = 0
        while i < offsets.count {
            let o = offsets[i]
            let even = o.seq & 1 == 0
            if even, i + 1 < offsets.count, offsets[i + 1].seq == o.seq + 1 {
                let high = UInt64(UInt32(truncatingIfNeeded: o.end))
                let low = UInt64(UInt32(truncatingIfNeeded: offsets[i + 1].end))
                out.append(.i64(index: o.seq / 2, value: Int64(bitPattern: high << 32 | low)))
                i += 2
            } else {
                out.append(.u32(index: o.seq, value: UInt32(truncatingIfNeeded: o.end)))
                i += 1
            }
        }
        return out
    }
}
