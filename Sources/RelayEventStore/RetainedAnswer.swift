import Foundation
import RelayCore

/// The compact record of a finished answer, kept for `RELAY_ANSWER_RETENTION` after its
/// stream's events expired (docs/DATA_MODEL.md §14, docs/PROTOCOL.md §6.5):
/// `relay:{<ownerHash>:<requestId>}:answer`, written by `Scripts.appendFinal` with the final
/// event, in the stream's hash tag.
///
/// It holds each event's stored piece (`StoredPiece`: a delta's text, a part's JSON) and
/// length (so a resume from any `Last-Event-ID` gets exactly the events after it), the
/// original `done` event's JSON (finish reason, usage, `budget_limited`) and final seq,
/// the owner and session, and two times.
///
/// `encoded()` / `init(decoding:)` are the record value's one encoding (Redis string):
///
/// ```
/// RA1\n   (RA2\n when the answer has parts)
/// {"owner":…,"sid":…,"final_seq":N,"created_ms":…,"finished_ms":…,"text_bytes":T}\n
/// <the done event's JSON, one line>\n
/// <T bytes of pieces><base64 (RFC 4648 §4) of one unsigned LEB128 value per event, seq 1 … N − 1>
/// ```
///
/// In `RA1` each value is the delta's byte length; in `RA2` it is the piece's byte length
/// times two, plus one for a part. An answer of text alone is written `RA1`, as before
/// parts existed, so every relay version reads it. A delta of 1–127 bytes (every usual
/// token) costs one LEB128 byte in `RA1` (up to 63 in `RA2`), 4/3 of a byte in base64, a
/// third of the 4 bytes per event of the lossless-resume `offsets` key. The value is
/// valid UTF-8 throughout (script arguments are strings). Anything that changes how the
/// value is stored (encryption at rest) wraps this pair.
public struct RetainedAnswer: Sendable, Equatable {
    /// The `sub` that owns the answer.
    public var owner: String
    /// The session that started it.
    public var sid: String
    /// The seq of the final `done` event; the other events are seqs 1 … `finalSeq − 1`.
    public var finalSeq: UInt64
    /// When the stream was created, unix ms.
    public var createdMs: UInt64
    /// When the final event was appended, unix ms.
    public var finishedMs: UInt64
    /// Every event's piece, concatenated in seq order (UTF-8): the answer's text with
    /// each part's JSON where the part came.
    public var text: [UInt8]
    /// Each event's piece length and mark, seq 1 first (`finalSeq − 1` entries).
    public var pieces: [StoredPiece.Length]
    /// The stored `done` event's JSON, exactly as sent (docs/PROTOCOL.md §5.3).
    public var doneJSON: String
    /// The record was written as plaintext by design: its stream was created without
    /// encryption at rest (`AtRestMode.plain`; header `"at_rest":"plain"`). A relay with
    /// keys reads a plaintext record only with this mark (docs/DATA_MODEL.md §15).
    public var plainAtRest = false

    public init(owner: String, sid: String, finalSeq: UInt64, createdMs: UInt64, finishedMs: UInt64,
                text: [UInt8], pieces: [StoredPiece.Length], doneJSON: String) {
        self.owner = owner
        self.sid = sid
        self.finalSeq = finalSeq
        self.createdMs = createdMs
        self.finishedMs = finishedMs
        self.text = text
        self.pieces = pieces
        self.doneJSON = doneJSON
    }

    /// An answer of text alone: `deltaLengths` each delta's length, bytes.
    public init(owner: String, sid: String, finalSeq: UInt64, createdMs: UInt64, finishedMs: UInt64,
                text: [UInt8], deltaLengths: [Int], doneJSON: String) {
        self.init(owner: owner, sid: sid, finalSeq: finalSeq, createdMs: createdMs, finishedMs: finishedMs, text: text,
                  pieces: deltaLengths.map { StoredPiece.Length(bytes: $0) }, doneJSON: doneJSON)
    }

    /// Whether any event is a part (the record is written `RA2`).
    public var hasParts: Bool { pieces.contains { $0.isPart } }

    /// The answer's text: the deltas' contents in seq order, without the parts.
    public var answerText: String {
        guard hasParts else { return String(decoding: text, as: UTF8.self) }
        var out: [UInt8] = []
        out.reserveCapacity(text.count)
        var at = 0
        for p in pieces {
            if !p.isPart { out += text[at..<(at + p.bytes)] }
            at += p.bytes
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Each part's JSON, in seq order (empty for an answer of text alone).
    public var partJSONs: [String] {
        var out: [String] = []
        var at = 0
        for p in pieces {
            if p.isPart { out.append(String(decoding: text[at..<(at + p.bytes)], as: UTF8.self)) }
            at += p.bytes
        }
        return out
    }

    /// The value's first line: `RA1` for text alone, `RA2` with parts.
    static let magic: [UInt8] = Array("RA1\n".utf8)
    static let magicWithParts: [UInt8] = Array("RA2\n".utf8)

    /// The LEB128 value stored for a piece: its length (`RA1`), or length × 2 + mark (`RA2`).
    static func lengthValue(_ p: StoredPiece.Length, withParts: Bool) -> Int {
        withParts ? p.bytes << 1 | (p.isPart ? 1 : 0) : p.bytes
    }

    /// The record as stored (see the type's documentation), bytes.
    public func encoded() -> [UInt8] {
        let withParts = hasParts
        var out = withParts ? RetainedAnswer.magicWithParts : RetainedAnswer.magic
        let head = "{\"owner\":\(JSONText.quoted(owner)),\"sid\":\(JSONText.quoted(sid)),\"final_seq\":\(finalSeq),"
            + "\"created_ms\":\(createdMs),\"finished_ms\":\(finishedMs),\"text_bytes\":\(text.count)"
            + (plainAtRest ? ",\"at_rest\":\"plain\"" : "") + "}\n\(doneJSON)\n"
        out.reserveCapacity(out.count + head.utf8.count + text.count + pieces.count + 8)
        out += head.utf8
        out += text
        var lengths: [UInt8] = []
        lengths.reserveCapacity(pieces.count)
        for p in pieces {
            var n = RetainedAnswer.lengthValue(p, withParts: withParts)
            repeat {
                let low = UInt8(n & 0x7F)
                n >>= 7
                lengths.append(n == 0 ? low : low | 0x80)
            } while n != 0
        }
        out += Data(lengths).base64EncodedData()
        return out
    }

    /// Decodes a stored value.
    /// - Throws: `RetainedAnswerDecodingError` when the bytes are not a record of this
    ///   encoding (wrong first line, header not JSON or missing a field, lengths that do
    ///   not add up to the text, a count of lengths other than `final_seq − 1`, a piece
    ///   that is not whole characters or a part that is not one line of part JSON).
    public init(decoding bytes: [UInt8]) throws {
        guard let withParts = RetainedAnswer.version(of: bytes), let nl = bytes[4...].firstIndex(of: 0x0A) else {
            throw RetainedAnswerDecodingError.malformed
        }
        guard let head = try? LenientJSON.parse(Array(bytes[4..<nl])),
              let owner = head["owner"]?.stringValue, let sid = head["sid"]?.stringValue,
              let finalSeq = head["final_seq"]?.intValue, finalSeq >= 1,
              let created = head["created_ms"]?.intValue, let finished = head["finished_ms"]?.intValue,
              let textBytes = head["text_bytes"]?.intValue, textBytes >= 0,
              let doneEnd = bytes[(nl + 1)...].firstIndex(of: 0x0A),
              let done = try? StreamEvent(jsonData: Data(bytes[(nl + 1)..<doneEnd])), case .done = done else {
            throw RetainedAnswerDecodingError.malformed
        }
        let doneJSON = String(decoding: bytes[(nl + 1)..<doneEnd], as: UTF8.self)
        let textStart = doneEnd + 1
        guard bytes.count - textStart >= textBytes else { throw RetainedAnswerDecodingError.malformed }
        guard let packed = Data(base64Encoded: Data(bytes[(textStart + textBytes)...])).map({ [UInt8]($0) }) else {
            throw RetainedAnswerDecodingError.malformed
        }
        // Each length takes at least one byte: a header that claims more events than that is
        // refused before anything is reserved for them (a forged final_seq).
        guard finalSeq - 1 <= packed.count else { throw RetainedAnswerDecodingError.malformed }
        var pieces: [StoredPiece.Length] = []
        pieces.reserveCapacity(finalSeq - 1)
        var i = 0
        var sum = 0
        while i < packed.count {
            var n = 0
            var shift = 0
            while true {
                guard i < packed.count, shift < 35 else { throw RetainedAnswerDecodingError.malformed }
                let b = packed[i]
                i += 1
                n |= Int(b & 0x7F) << shift
                shift += 7
                if b & 0x80 == 0 { break }
            }
            let p = withParts ? StoredPiece.Length(bytes: n >> 1, isPart: n & 1 == 1) : StoredPiece.Length(bytes: n)
            pieces.append(p)
            sum += p.bytes
        }
        guard pieces.count == finalSeq - 1, sum == textBytes else { throw RetainedAnswerDecodingError.malformed }
        // Every piece is whole characters, every part one line of part JSON (`events(after:)`
        // sends them as they are): anything else is damage.
        var at = textStart
        for (k, p) in pieces.enumerated() {
            guard StoredPiece.event(seq: UInt64(k + 1), bytes: bytes[at..<(at + p.bytes)], isPart: p.isPart) != nil else {
                throw RetainedAnswerDecodingError.malformed
            }
            at += p.bytes
        }
        self.init(owner: owner, sid: sid, finalSeq: UInt64(finalSeq), createdMs: UInt64(max(0, created)),
                  finishedMs: UInt64(max(0, finished)), text: Array(bytes[textStart..<(textStart + textBytes)]),
                  pieces: pieces, doneJSON: doneJSON)
        self.plainAtRest = head["at_rest"]?.stringValue == "plain"
    }

    /// Whether `bytes` start with a record's first line: `false` for `RA1`, `true` for
    /// `RA2` (lengths carry the part mark), `nil` for anything else.
    static func version(of bytes: [UInt8]) -> Bool? {
        guard bytes.count > 4 else { return nil }
        let first = Array(bytes[0..<4])
        if first == magic { return false }
        if first == magicWithParts { return true }
        return nil
    }

    /// Whether stored record bytes are a plaintext record marked `"at_rest":"plain"`
    /// (`plainAtRest`), read without decoding the rest.
    public static func isMarkedPlain(_ bytes: [UInt8]) -> Bool {
        guard version(of: bytes) != nil, let nl = bytes[4...].firstIndex(of: 0x0A),
              let head = try? LenientJSON.parse(Array(bytes[4..<nl])) else { return false }
        return head["at_rest"]?.stringValue == "plain"
    }

    /// The events after seq `lastEventID`, as they were first sent (docs/PROTOCOL.md §6.5):
    /// each event `lastEventID+1 … finalSeq−1` with its own seq (a delta with its text cut
    /// at the stored lengths, a part as its JSON), then the original `done` with
    /// `finalSeq`. Empty at or past `finalSeq`.
    public func events(after lastEventID: UInt64) -> [SequencedEvent] {
        guard lastEventID < finalSeq else { return [] }
        var out: [SequencedEvent] = []
        out.reserveCapacity(Int(finalSeq - lastEventID))
        var at = 0
        for (i, p) in pieces.enumerated() {
            let seq = UInt64(i + 1)
            defer { at += p.bytes }
            guard seq > lastEventID else { continue }
            // Checked when decoded: every piece reads back.
            if let e = StoredPiece.event(seq: seq, bytes: text[at..<(at + p.bytes)], isPart: p.isPart) { out.append(e) }
        }
        out.append(SequencedEvent(seq: finalSeq, json: doneJSON))
        return out
    }

    /// The bytes the body of a record takes (text plus the lengths' base64; the header
    /// line and the done line come on top): `textBytes` of pieces, `lengthBytes` LEB128
    /// bytes of lengths (`lengthBytes(of:)` per event).
    public static func bodyBytes(textBytes: Int, lengthBytes: Int) -> Int { textBytes + (lengthBytes + 2) / 3 * 4 }

    /// LEB128 bytes of one stored value (`lengthValue`): 1 up to 127, 2 up to 16,383, …
    public static func lengthBytes(of n: Int) -> Int {
        var k = 1
        var v = n >> 7
        while v != 0 { k += 1; v >>= 7 }
        return k
    }
}

/// Why a stored value is not a `RetainedAnswer`.
public enum RetainedAnswerDecodingError: Error, Equatable {
    /// Not this encoding, or inconsistent.
    case malformed
}
