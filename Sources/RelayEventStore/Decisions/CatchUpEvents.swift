import RelayCore

/// The events that a read after a seq finds, and the original deltas that the text key
/// gives back once the retained window moved past them (docs/PROTOCOL.md §6.3,
/// docs/DATA_MODEL.md §4). Pure: no I/O.
///
/// An event read at any time — live, replayed, caught up from the text key, or read back
/// from a retained answer — is the same event: the same seq and the same delta text.
/// The text key holds the answer's bytes and the `offsets` key each event's end offset,
/// so the deltas that left the window are cut back out at their original boundaries.
public enum CatchUpEvents {
    /// What a read of the retained entries after `after` means.
    public enum Continuity: Sendable, Equatable {
        /// The entries continue from `after` (or there are none after it).
        case complete
        /// Events `after+1 … seq` left the window: read them from the text key
        /// (lossless resume), or the read ends with `409 resume_gap`.
        case catchUp(to: UInt64)
        /// Events up to `seq` are gone and the log keeps no text.
        case gap(to: UInt64)
    }

    /// Judges the entries read after `after` (`events` in seq order, as `XRANGE` returns them).
    /// - Parameter lossless: the log keeps the full text (`RELAY_LOSSLESS_RESUME`).
    public static func continuity(after: UInt64, events: [SequencedEvent], lossless: Bool) -> Continuity {
        guard let first = events.first, first.seq > after + 1 else { return .complete }
        return lossless ? .catchUp(to: first.seq - 1) : .gap(to: first.seq - 1)
    }

    /// Cuts events `from+1 … to`'s deltas out of `text`, the answer's bytes from offset
    /// `start` on (`start` is the end of event `from`, 0 when `from` is 0). `ends`: the
    /// `offsets` key's bytes for seqs `from+1 … to`, 4 per seq, big-endian (`OffsetRuns`).
    /// - Returns: one `delta` per seq, in order; `nil` when the bytes do not describe
    ///   such a run (an offset going backwards, past the text, or inside a character): the
    ///   stored data is unreadable, never guessed at.
    public static func deltas(from: UInt64, to: UInt64, start: Int, ends: ArraySlice<UInt8>,
                              text: ArraySlice<UInt8>) -> [SequencedEvent]? {
        guard to > from, ends.count == 4 * Int(to - from), start >= 0 else { return nil }
        var out: [SequencedEvent] = []
        out.reserveCapacity(Int(to - from))
        var at = start
        var i = ends.startIndex
        for seq in (from + 1)...to {
            let end = Int(ends[i]) << 24 | Int(ends[i + 1]) << 16 | Int(ends[i + 2]) << 8 | Int(ends[i + 3])
            i += 4
            guard end >= at, end - start <= text.count else { return nil }
            let lo = text.startIndex + (at - start), hi = text.startIndex + (end - start)
            // A cut inside a character is damage, never replaced with U+FFFD and sent.
            guard let delta = String(validating: text[lo..<hi], as: UTF8.self) else { return nil }
            out.append(SequencedEvent(seq: seq, json: StreamEvent.delta(delta).json))
            at = end
        }
        return out
    }
}
