import XCTest
@testable import RelayEventStore

/// A model check of `TextCheckpoint` (its text in one byte buffer): random adds
/// (empty, multi-byte), takes, failures, late replies for older writes, and partial
/// `pending(through:)` for a final event, against a naive model ("Redis" as a byte
/// array written positionally). Invariant: every write's bytes are exactly the model's
/// text of its events at its start, its offsets are the model's, and after every
/// confirmed write the stored text equals the concatenation of the confirmed events.
final class TextCheckpointModelTests: XCTestCase {
    private struct Rng { var s: UInt64; mutating func next() -> UInt64 { s &+= 0x9E3779B97F4A7C15; var z = s; z = (z ^ (z >> 30)) &* 0xBF58476D1CE4E5B9; z = (z ^ (z >> 27)) &* 0x94D049BB133111EB; return z ^ (z >> 31) } }
    private static let texts = ["", "a", "é", "👩‍👩‍👧", "مَرْ", "\u{0}", "xyz", "e\u{301}", "🇸🇦"]

    func testRandomScheduleAgainstAModel() {
        for seed in UInt64(1)...400 {
            var rng = Rng(s: seed)
            var c = TextCheckpoint(trim: StreamTrim(maxLen: Int(rng.next() % 64) + 1))
            var all: [UInt8] = []         // every event's text, in order
            var ends: [UInt64: Int] = [:] // seq -> end
            var starts: [UInt64: Int] = [:]
            var stored = [UInt8]()        // "Redis" text key
            var storedOffsets: [UInt64: Int] = [:]
            var inFlight: [TextCheckpoint.Write] = []
            var seq: UInt64 = 0
            func apply(_ w: TextCheckpoint.Write) {
                if stored.count < w.start + w.text.count { stored += [UInt8](repeating: 0, count: w.start + w.text.count - stored.count) }
                for (i, b) in w.text.enumerated() { stored[w.start + i] = b }
                for o in w.offsets { storedOffsets[o.seq] = o.end }
            }
            func check(_ w: TextCheckpoint.Write, _ ctx: String) {
                guard let f = w.offsets.first else { return XCTFail("empty write \(ctx)") }
                XCTAssertEqual(w.start, starts[f.seq], "start \(ctx)")
                let end = w.offsets.last!.end
                XCTAssertEqual(w.text, Array(all[w.start..<end]), "bytes \(ctx)")
                for o in w.offsets { XCTAssertEqual(o.end, ends[o.seq], "offset \(o.seq) \(ctx)") }
                XCTAssertEqual(w.offsets.map(\.seq), Array(f.seq...w.offsets.last!.seq), "contiguous seqs \(ctx)")
                XCTAssertNotNil(String(validating: w.text, as: UTF8.self), "valid UTF-8 \(ctx)")
            }
            for step in 0..<300 {
                let ctx = "seed \(seed) step \(step)"
                switch rng.next() % 6 {
                case 0, 1, 2:
                    seq += 1
                    let t = Self.texts[Int(rng.next() % UInt64(Self.texts.count))]
                    starts[seq] = all.count
                    XCTAssertEqual(c.add(seq: seq, text: t), all.count, ctx)
                    all += Array(t.utf8)
                    ends[seq] = all.count
                case 3:
                    if let w = c.take() { check(w, ctx); inFlight.append(w) }
                case 4:
                    // A reply, maybe for an older write (late), maybe a failure.
                    guard !inFlight.isEmpty else { break }
                    let i = Int(rng.next() % UInt64(inFlight.count))
                    let w = inFlight.remove(at: i)
                    let ok = rng.next() % 3 != 0
                    if ok { apply(w) }
                    c.written(through: w.throughSeq, ok: ok)
                default:
                    // A partial pending write (the final event's), confirmed.
                    guard seq > 0 else { break }
                    let through = UInt64(rng.next() % seq) + 1
                    if let w = c.pending(through: through) {
                        check(w, ctx + " pending \(through)")
                        XCTAssertLessThanOrEqual(w.throughSeq, through)
                        apply(w)
                        c.written(through: w.throughSeq, ok: true)
                    }
                }
                // Whatever is confirmed is stored, byte-exact.
                if c.confirmedSeq > 0 {
                    XCTAssertEqual(c.confirmedEnd, ends[c.confirmedSeq], ctx)
                    XCTAssertGreaterThanOrEqual(stored.count, c.confirmedEnd, ctx)
                    XCTAssertEqual(Array(stored[0..<c.confirmedEnd]), Array(all[0..<c.confirmedEnd]), "stored text \(ctx)")
                    for s in UInt64(1)...c.confirmedSeq { XCTAssertEqual(storedOffsets[s], ends[s], "stored offset \(s) \(ctx)") }
                }
                XCTAssertEqual(c.textEnd, all.count, ctx)
            }
        }
    }
}
