/// The lossless-resume text and offsets of a generation not yet written to Redis
/// (written once per group of events, not per event: docs/DATA_MODEL.md §4).
///
/// The `text` key (`SETRANGE`, positional) and the `offsets` key (each event's end
/// offset as `BITFIELD … u32 #<seq>` lays it out, written with `SETRANGE`: `OffsetRuns`)
/// serve one read: a client resuming from an event
/// older than the stream's oldest retained entry gets the text between the two
/// (`Scripts.catchUp`). Entries still retained never need it. So the appender buffers
/// each event's text here and writes it every `every` events (one `SETRANGE` of the
/// buffered bytes and one of the events' end offsets, `Write`), and the retained entries
/// cover what is not written yet. The rule that keeps that true: an event whose seq is
/// more than `holdAfter` above the last *confirmed* write is not sent
/// (`sendableThrough`), and `holdAfter` is at most the stream's `StreamTrim.minRetained`;
/// so when the `XADD` of seq `s` trims entries up to `s − minRetained`, their text is
/// already stored. It is also below the cap: a lease expiry appends its terminal entry
/// after the owner's last one with `MAXLEN maxLen` (`Scripts.expireLease`), trimming up
/// to `top + 1 − maxLen`, so `holdAfter ≤ maxLen − 1` keeps that text stored too (cap 1:
/// `holdAfter` 0, each event's text is stored before its `XADD`). A failed write keeps its events buffered and is sent again (the
/// bytes go to the same offsets: a resend never duplicates text). The final event's
/// script writes everything still buffered (`pending`), and a lease expiry needs none of
/// it: the entries after the last write are retained.
///
/// Pure: no I/O; the caller sends what `take` returns and reports the outcome to
/// `written(through:ok:)`.
public struct TextCheckpoint: Sendable, Equatable {
    /// One event's end offset, bytes into the `text` key, and whether its piece is a
    /// part's JSON (`StoredPiece`).
    public struct Offset: Sendable, Equatable {
        public var seq: UInt64
        public var end: Int
        public var isPart: Bool
        public init(seq: UInt64, end: Int, isPart: Bool = false) {
            self.seq = seq
            self.end = end
            self.isPart = isPart
        }
        /// The value stored in the `offsets` key (`StoredPiece.word`).
        public var word: UInt32 { StoredPiece.word(end: end, isPart: isPart) }
    }

    /// A write of buffered text: `SETRANGE text <start> <text>` and the `offsets` of each
    /// event (`OffsetRuns`: `SETRANGE offsets <4 × first seq> <4 bytes per seq>`).
    public struct Write: Sendable, Equatable {
        /// Where `text` starts in the `text` key, bytes.
        public var start: Int
        /// The events' text, concatenated in seq order (UTF-8 bytes; may be empty).
        public var text: [UInt8]
        /// Each buffered event's end offset, ascending seq.
        public var offsets: [Offset]
        /// Where the write goes in the `text` key as stored, bytes: `start` for plain
        /// text; with sealing at rest, the end of the records already confirmed (each
        /// write is one sealed record, `SealedFormat`; docs/DATA_MODEL.md §15).
        public var storedStart: Int
        /// The last seq it covers.
        public var throughSeq: UInt64 { offsets.last?.seq ?? 0 }

        public init(start: Int, text: [UInt8], offsets: [Offset], storedStart: Int? = nil) {
            self.start = start
            self.text = text
            self.offsets = offsets
            self.storedStart = storedStart ?? start
        }

        /// `text` given as a string (its UTF-8 bytes).
        public init(start: Int, text: String, offsets: [Offset]) {
            self.init(start: start, text: Array(text.utf8), offsets: offsets)
        }
    }

    /// Events per write.
    public let every: Int
    /// The most events beyond the last confirmed write that may be sent (≤ the stream's
    /// `StreamTrim.minRetained` and ≤ `maxLen − 1`; 0 for a cap of 1).
    public let holdAfter: Int
    /// Text and offsets are stored through this seq (0: none yet).
    public private(set) var confirmedSeq: UInt64 = 0
    /// The end offset of `confirmedSeq`, bytes.
    public private(set) var confirmedEnd = 0
    /// Bytes of the `text` key as stored through `confirmedSeq`: `confirmedEnd` for plain
    /// text, the confirmed sealed records' length when sealed (`sealedKidBytes`).
    public private(set) var confirmedStoredEnd = 0
    /// With sealing at rest, the current kid's length, bytes: each write is stored as one
    /// sealed record of `SealedFormat.sealedLength` bytes. `nil`: plain text.
    public let sealedKidBytes: Int?
    /// Bytes of text buffered so far in total (the next event's start offset).
    public var textEnd: Int { confirmedEnd + text.count }
    /// The text of the buffered events, concatenated (UTF-8; starts at `confirmedEnd`).
    /// One growing buffer, not a string per event: a write hands it out whole.
    private var text: [UInt8] = []
    /// The buffered events' end offsets, ascending seq.
    private var offsets: [Offset] = []
    /// The last seq of the write in flight, if any.
    public private(set) var inFlightThrough: UInt64?
    /// The last write failed and nothing has been written since.
    public private(set) var lastWriteFailed = false
    /// The final event's script was given the text through this seq (`takeFinal`): no
    /// other write goes out, and the outcome of one sent before it is not applied.
    public private(set) var finalThrough: UInt64?

    /// - Parameters:
    ///   - trim: the stream's trim rule; `every` is an eighth of the cap (at most
    ///     32, at least 1), `holdAfter` half the cap, at most `trim.minRetained` and
    ///     `trim.maxLen − 1`.
    ///   - sealedKidBytes: the at-rest kid's length when text is sealed (`nil`: plain).
    ///   - confirmedSeq: the seq whose text is already stored (a takeover starts after the
    ///     text its records or the oldest retained entry leave off at; 0 for a new stream).
    ///   - confirmedEnd: that text's length, bytes.
    ///   - confirmedStoredEnd: the `text` key's length as stored through `confirmedSeq`
    ///     (sealed records); `nil`: `confirmedEnd`.
    public init(trim: StreamTrim, sealedKidBytes: Int? = nil, confirmedSeq: UInt64 = 0, confirmedEnd: Int = 0,
                confirmedStoredEnd: Int? = nil) {
        self.sealedKidBytes = sealedKidBytes
        self.confirmedSeq = confirmedSeq
        self.confirmedEnd = confirmedEnd
        self.confirmedStoredEnd = confirmedStoredEnd ?? confirmedEnd
        holdAfter = min(trim.maxLen / 2, trim.minRetained, trim.maxLen - 1)
        every = max(1, min(32, trim.maxLen / 8, holdAfter))
    }

    /// Buffers the piece of event `seq` (seqs ascending: a delta's text or a part's JSON,
    /// `StoredPiece`); returns its start offset, bytes.
    @discardableResult
    public mutating func add(seq: UInt64, piece: StoredPiece) -> Int {
        let start = textEnd
        self.text.append(contentsOf: piece.bytes.utf8)
        offsets.append(Offset(seq: seq, end: textEnd, isPart: piece.isPart))
        return start
    }

    /// Buffers the text of delta `seq` (`add(seq:piece:)` of a delta's content).
    @discardableResult
    public mutating func add(seq: UInt64, text: String) -> Int {
        add(seq: seq, piece: StoredPiece(bytes: text, isPart: false))
    }

    /// Events buffered and not confirmed.
    public var backlog: Int { offsets.count }

    /// A write should go out now: `every` events are buffered (or the last write failed
    /// and events are buffered) and none is in flight.
    public var isDue: Bool {
        finalThrough == nil && inFlightThrough == nil && !offsets.isEmpty && (offsets.count >= every || lastWriteFailed)
    }

    /// The highest seq that may be sent now (`confirmedSeq + holdAfter`).
    public var sendableThrough: UInt64 { confirmedSeq + UInt64(holdAfter) }

    /// Everything buffered as one write, marked in flight; `nil` when nothing is
    /// buffered, a write is in flight, or the final event's script carries the text.
    public mutating func take() -> Write? {
        guard finalThrough == nil, inFlightThrough == nil, let w = pending(through: .max) else { return nil }
        inFlightThrough = w.throughSeq
        return w
    }

    /// The buffered events up to `seq` as one write, without marking it in flight
    /// (the final event's script writes them itself); `nil` when none.
    public func pending(through seq: UInt64) -> Write? {
        let n = buffered(through: seq)
        guard n > 0 else { return nil }
        // Usually everything buffered (the arrays are shared, not copied).
        if n == offsets.count { return Write(start: confirmedEnd, text: text, offsets: offsets, storedStart: confirmedStoredEnd) }
        return Write(start: confirmedEnd, text: Array(text[..<(offsets[n - 1].end - confirmedEnd)]),
                     offsets: Array(offsets[..<n]), storedStart: confirmedStoredEnd)
    }

    /// The text the final event's script writes (everything buffered through `seq`, the
    /// final event included), from the last confirmed write: `pending(through:)`, and no
    /// other write goes out after it. A write still in flight covers a prefix of the same
    /// bytes from the same place, and the script writes over it; sealed at rest, as one
    /// longer record over that write's record. Its late reply is therefore ignored: were
    /// it confirmed, the next write (or a resent final) would start inside the final's
    /// record and leave neither readable. Called again when the final event is resent.
    public mutating func takeFinal(through seq: UInt64) -> Write? {
        finalThrough = seq
        return pending(through: seq)
    }

    /// Reports a write's outcome (`through`: its last seq). A success confirms every
    /// event up to it (even one buffered before a write that failed); a failure keeps
    /// them buffered for the next write. After `takeFinal`, only the final event's own
    /// outcome is applied.
    public mutating func written(through seq: UInt64, ok: Bool) {
        if inFlightThrough == seq { inFlightThrough = nil }
        if let f = finalThrough, seq != f { return }
        guard ok else {
            lastWriteFailed = true
            return
        }
        lastWriteFailed = false
        guard seq > confirmedSeq else { return }
        let n = buffered(through: seq)
        if n > 0 {
            let end = offsets[n - 1].end
            confirmedStoredEnd += storedLength(plaintextBytes: end - confirmedEnd)
            text.removeFirst(end - confirmedEnd)
            confirmedEnd = end
            offsets.removeFirst(n)
        }
        confirmedSeq = seq
    }

    /// Bytes a write of `n` bytes of text takes in the `text` key: `n` plain; sealed, one
    /// record (`SealedFormat.sealedLength`), none for an empty write (no `SETRANGE`).
    public func storedLength(plaintextBytes n: Int) -> Int {
        guard let k = sealedKidBytes, n > 0 else { return n }
        return SealedFormat.sealedLength(plaintextBytes: n, kidBytes: k)
    }

    /// How many buffered events have a seq at most `seq` (they are the first ones: seqs ascend).
    private func buffered(through seq: UInt64) -> Int {
        var n = 0
        while n < offsets.count && offsets[n].seq <= seq { n += 1 }
        return n
    }
}
