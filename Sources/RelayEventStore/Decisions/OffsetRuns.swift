/// The bytes that store a text write's end offsets (`TextCheckpoint.Write`) in the
/// `offsets` key: event `seq`'s end offset, bytes into the `text` key, as a big-endian
/// unsigned 32-bit value at byte `4 × seq`, its top bit set when the piece is a part's
/// JSON (`StoredPiece.word`). That is the layout of `BITFIELD … u32 #seq`
/// (Redis `BITFIELD` doc: a field at `#index` starts at bit `index × width`, most
/// significant bit first), which `Scripts.catchUp` and `Scripts.appendStatus` read with
/// `BITFIELD … GET u32 #seq` and the final event's script writes with `SET u32`: relays
/// of either kind read what the other wrote (a rolling deploy).
///
/// Why `SETRANGE`: a `BITFIELD` with one `SET` per event (or per pair of events) costs Redis
/// about 8 µs per group of 25 events to parse and apply, 13–18 µs under load; the same
/// bytes as one `SETRANGE offsets <4 × first seq> <bytes>` cost about 0.3 µs
/// (docs/BENCHMARKS.md). A run of
/// consecutive seqs is one `SETRANGE`; a write's events are consecutive, so it is one
/// run (a gap would start another). Offsets wrap to 31 bits.
///
/// Pure: no I/O.
public enum OffsetRuns {
    /// One `SETRANGE offsets <byteOffset> <bytes>`.
    public struct Run: Sendable, Equatable {
        /// Where the run starts in the `offsets` key, bytes (`4 × first seq`).
        public var byteOffset: Int
        /// Four bytes per seq, big-endian.
        public var bytes: [UInt8]

        public init(byteOffset: Int, bytes: [UInt8]) {
            self.byteOffset = byteOffset
            self.bytes = bytes
        }
    }

    /// The runs for `offsets` (ascending seq, as a write holds them).
    public static func runs(_ offsets: [TextCheckpoint.Offset]) -> [Run] {
        var out: [Run] = []
        var i = 0
        while i < offsets.count {
            var j = i + 1
            while j < offsets.count && offsets[j].seq == offsets[j - 1].seq + 1 { j += 1 }
            var bytes: [UInt8] = []
            bytes.reserveCapacity(4 * (j - i))
            for o in offsets[i..<j] {
                let v = o.word
                bytes.append(UInt8(truncatingIfNeeded: v >> 24))
                bytes.append(UInt8(truncatingIfNeeded: v >> 16))
                bytes.append(UInt8(truncatingIfNeeded: v >> 8))
                bytes.append(UInt8(truncatingIfNeeded: v))
            }
            out.append(Run(byteOffset: 4 * Int(offsets[i].seq), bytes: bytes))
            i = j
        }
        return out
    }
}
