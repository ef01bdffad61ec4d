import RelayCore

/// The events that a read after a seq finds, and the original events (deltas and parts)
/// that the text key gives back once the retained window moved past them (docs/PROTOCOL.md §6.3,
/// docs/DATA_MODEL.md §4). Pure: no I/O.
///
/// An event read at any time — live, replayed, caught up from the text key, or read back
/// from a retained answer — is the same event: the same seq and the same delta text.
/// The text key holds each event's piece (`StoredPiece`: a delta's text, a part's JSON)
/// and the `offsets` key each event's end offset, so the events that left the window are
/// cut back out at their original boundaries.
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

    /// Cuts events `from+1 … to` out of `text`, the answer's stored pieces from offset
    /// `start` on (`start` is the end of event `from`, 0 when `from` is 0). `ends`: the
    /// `offsets` key's bytes for seqs `from+1 … to`, 4 per seq, big-endian, the top bit
    /// marking a part (`OffsetRuns`, `StoredPiece`).
    /// - Returns: one event per seq, in order: a `delta` with its original content, or a
    ///   part as it was sent; `nil` when the bytes do not describe such a run (an offset
    ///   going backwards, past the text, or inside a character; a part that is not one
    ///   line of part JSON): the stored data is unreadable, never guessed at.
    public static func events(from: UInt64, to: UInt64, start: Int, ends: ArraySlice<UInt8>,
                              text: ArraySlice<UInt8>) -> [SequencedEvent]? {
        guard to > from, ends.count == 4 * Int(to - from), start >= 0 else { return nil }
        var out: [SequencedEvent] = []
        out.reserveCapacity(Int(to - from))
        var at = start
        var i = ends.startIndex
        for seq in (from + 1)...to {
            let word = UInt32(ends[i]) << 24 | UInt32(ends[i + 1]) << 16 | UInt32(ends[i + 2]) << 8 | UInt32(ends[i + 3])
            let (end, isPart) = StoredPiece.end(ofWord: word)
            i += 4
            guard end >= at, end - start <= text.count else { return nil }
            let lo = text.startIndex + (at - start), hi = text.startIndex + (end - start)
            // A cut inside a character is damage, never replaced with U+FFFD and sent.
            guard let event = StoredPiece.event(seq: seq, bytes: text[lo..<hi], isPart: isPart) else { return nil }
            out.append(event)
            at = end
        }
        return out
    }
}
