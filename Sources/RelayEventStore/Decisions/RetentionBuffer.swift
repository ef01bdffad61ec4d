/// What a generation keeps in memory to write its `RetainedAnswer` with the final event
/// (docs/DATA_MODEL.md §14): every event's stored piece so far (`StoredPiece`: a delta's
/// text, a part's JSON) and its length, up to a cap.
///
/// The cap is `RELAY_ANSWER_RETENTION_MAX_BYTES` over the record's body, its pieces and
/// encoded lengths (`RetainedAnswer.bodyBytes`, in the encoding the record will have:
/// `RA1` for text alone, `RA2` once a part came); once an answer passes it the buffer lets
/// go of what it held (`isOverCap`) and the answer is not retained. Pure: no I/O, no clock.
public struct RetentionBuffer: Sendable, Equatable {
    /// Most piece and length bytes kept (the record's body).
    public let maxBytes: Int
    /// The pieces so far, UTF-8 (empty once over the cap).
    public private(set) var text: [UInt8] = []
    /// Each event's piece length and mark, seq 1 first (empty once over the cap).
    public private(set) var pieces: [StoredPiece.Length] = []
    /// The answer grew past `maxBytes`: nothing is kept from now on.
    public private(set) var isOverCap = false
    /// LEB128 bytes the lengths take as `RA1` (lengths alone) and as `RA2` (with the mark).
    private var lengthBytesRA1 = 0
    private var lengthBytesRA2 = 0
    /// A part came: the record is `RA2`.
    private var hasParts = false

    /// The record body's size so far, bytes (`RetainedAnswer.bodyBytes`).
    public var bodyBytes: Int {
        RetainedAnswer.bodyBytes(textBytes: text.count, lengthBytes: hasParts ? lengthBytesRA2 : lengthBytesRA1)
    }

    /// Each delta's byte length, seq 1 first, for an answer of text alone.
    public var deltaLengths: [Int] { pieces.map(\.bytes) }

    /// - Parameter maxBytes: the cap, bytes (> 0).
    public init(maxBytes: Int) {
        self.maxBytes = maxBytes
    }

    /// Starts from an answer so far that another writer stored (a generation continuing a
    /// stream it did not start): its pieces and their lengths, seq 1 first. Over the cap
    /// at once when they pass it.
    public mutating func seed(text: [UInt8], pieces: [StoredPiece.Length]) {
        guard !isOverCap else { return }
        var next = self
        next.text += text
        for p in pieces { next.count(p) }
        guard next.bodyBytes <= maxBytes else { return dropAll() }
        self = next
    }

    /// Starts from an answer of text alone (`seed(text:pieces:)` with every piece a delta).
    public mutating func seed(text: [UInt8], deltaLengths: [Int]) {
        seed(text: text, pieces: deltaLengths.map { StoredPiece.Length(bytes: $0) })
    }

    /// Adds the piece of event number `pieces.count + 1`.
    public mutating func add(_ piece: StoredPiece) {
        guard !isOverCap else { return }
        let n = piece.bytes.utf8.count
        var next = self
        next.count(StoredPiece.Length(bytes: n, isPart: piece.isPart))
        // Checked before the bytes are copied: a piece that passes the cap is never held.
        guard RetainedAnswer.bodyBytes(textBytes: text.count + n,
                                       lengthBytes: next.hasParts ? next.lengthBytesRA2 : next.lengthBytesRA1) <= maxBytes else {
            return dropAll()
        }
        next.text += piece.bytes.utf8
        self = next
    }

    /// Adds the text of delta number `pieces.count + 1`.
    public mutating func add(delta content: String) {
        add(StoredPiece(bytes: content, isPart: false))
    }

    private mutating func count(_ p: StoredPiece.Length) {
        pieces.append(p)
        hasParts = hasParts || p.isPart
        lengthBytesRA1 += RetainedAnswer.lengthBytes(of: RetainedAnswer.lengthValue(p, withParts: false))
        lengthBytesRA2 += RetainedAnswer.lengthBytes(of: RetainedAnswer.lengthValue(p, withParts: true))
    }

    private mutating func dropAll() {
        isOverCap = true
        text = []
        pieces = []
        lengthBytesRA1 = 0
        lengthBytesRA2 = 0
    }
}
