import Foundation
import RelayCore

/// What one non-terminal event keeps in the lossless-resume `text` key, and in a retained
/// answer's text (docs/DATA_MODEL.md §4, §14): a `delta` its content, a part
/// (`AnswerPart`, docs/PROTOCOL.md §5.5) its whole JSON, marked as a part.
///
/// The mark travels with the event's end offset: the top bit of its unsigned 32-bit
/// `offsets` value (`word(end:isPart:)`), and the low bit of its retained length
/// (`RetainedAnswer`, `RA2`). A reader cuts each event's piece out at its offsets, as
/// before, and rebuilds a delta from its text or reads a part's JSON back as it was
/// sent. So one codec, the same writes and the same sealing at rest carry text and
/// parts; readers that want the answer's text alone (a takeover's assistant prefix, a
/// retained answer's `text`) skip the marked pieces. Text offsets therefore count the
/// pieces of parts too, and stay below 2³¹ bytes. Pure: no I/O.
public struct StoredPiece: Sendable, Equatable {
    /// The piece's bytes as text: a delta's content or a part's JSON.
    public var bytes: String
    /// The piece is a part's JSON, not answer text.
    public var isPart: Bool

    /// - Parameters:
    ///   - bytes: a delta's content, or a part's JSON when `isPart`.
    ///   - isPart: whether `bytes` is a part's JSON.
    public init(bytes: String, isPart: Bool) {
        self.bytes = bytes
        self.isPart = isPart
    }

    /// The piece of a non-terminal event: a delta's content, or a part's JSON (`json`,
    /// the event's JSON as written). A terminal event keeps none (empty, not a part).
    public init(_ event: StreamEvent, json: String) {
        switch event {
        case .delta(let t): self.init(bytes: t, isPart: false)
        case .part: self.init(bytes: json, isPart: true)
        case .done, .error: self.init(bytes: "", isPart: false)
        }
    }

    /// One stored piece's length and mark: a retained answer's per-event entry.
    public struct Length: Sendable, Equatable {
        /// The piece's length, bytes.
        public var bytes: Int
        /// The piece is a part's JSON.
        public var isPart: Bool
        public init(bytes: Int, isPart: Bool = false) {
            self.bytes = bytes
            self.isPart = isPart
        }
    }

    /// The piece's length and mark.
    public var length: Length { Length(bytes: bytes.utf8.count, isPart: isPart) }

    /// The top bit of an `offsets` value: the piece that ends there is a part.
    public static let partFlag: UInt32 = 0x8000_0000

    /// The `offsets` value of a piece ending at `end` bytes into the text (`end` below
    /// 2³¹; higher bits wrap, as a `BITFIELD SET u32` would).
    public static func word(end: Int, isPart: Bool) -> UInt32 {
        (UInt32(truncatingIfNeeded: end) & ~partFlag) | (isPart ? partFlag : 0)
    }

    /// The end offset (bytes) and the part mark of an `offsets` value.
    public static func end(ofWord w: UInt32) -> (end: Int, isPart: Bool) {
        (Int(w & ~partFlag), w & partFlag != 0)
    }

    /// The event stored as the piece `bytes` at `seq`: a delta with that content, or
    /// the part whose JSON the bytes are.
    /// - Returns: `nil` when the bytes are not whole UTF-8 characters, or a part's bytes
    ///   are not one line of JSON that reads as a part: stored data that is damaged,
    ///   never sent.
    public static func event(seq: UInt64, bytes: ArraySlice<UInt8>, isPart: Bool) -> SequencedEvent? {
        guard let s = String(validating: bytes, as: UTF8.self) else { return nil }
        guard isPart else { return SequencedEvent(seq: seq, json: StreamEvent.delta(s).json) }
        guard bytes.first == UInt8(ascii: "{"), !bytes.contains(0x0A), !bytes.contains(0x0D),
              case .part? = try? StreamEvent(jsonData: Data(bytes)) else { return nil }
        return SequencedEvent(seq: seq, json: s)
    }
}
