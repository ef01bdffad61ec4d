import Foundation
import RelayCore

/// The compact record of a finished answer, kept for `RELAY_ANSWER_RETENTION` after its
/// stream's events expired (docs/DATA_MODEL.md §14, docs/PROTOCOL.md §6.5):
/// `relay:{<ownerHash>:<requestId>}:answer`, written by `Scripts.appendFinal` with the final
/// event, in the stream's hash tag.
///
/// It holds the answer's text, each delta's length (so a resume from any `Last-Event-ID`
/// gets exactly the text after that event), the original `done` event's JSON (finish
/// reason, usage, `budget_limited`) and final seq, the owner and session, and two times.
///
/// `encoded()` / `init(decoding:)` are the record value's one encoding (Redis string):
///
/// ```
/// RA1\n
/// {"owner":…,"sid":…,"final_seq":N,"created_ms":…,"finished_ms":…,"text_bytes":T}\n
/// <the done event's JSON, one line>\n
/// <T bytes of UTF-8 text><base64 (RFC 4648 §4) of one unsigned LEB128 byte length per delta, seq 1 … N − 1>
/// ```
///
/// A delta of 1–127 bytes (every usual token) costs one LEB128 byte, 4/3 of a byte in
/// base64, a third of the 4 bytes per event of the lossless-resume `offsets` key. The
/// value is valid UTF-8 throughout (script arguments are strings). Anything that changes how the value is stored (encryption at rest) wraps
/// this pair.
public struct RetainedAnswer: Sendable, Equatable {
    /// The `sub` that owns the answer.
    public var owner: String
    /// The session that started it.
    public var sid: String
    /// The seq of the final `done` event; the deltas are seqs 1 … `finalSeq − 1`.
    public var finalSeq: UInt64
    /// When the stream was created, unix ms.
    public var createdMs: UInt64
    /// When the final event was appended, unix ms.
    public var finishedMs: UInt64
    /// The answer's whole text, UTF-8.
    public var text: [UInt8]
    /// Each delta's content length in bytes, seq 1 first (`finalSeq − 1` entries).
    public var deltaLengths: [Int]
    /// The stored `done` event's JSON, exactly as sent (docs/PROTOCOL.md §5.3).
    public var doneJSON: String
    /// The record was written as plaintext by design: its stream was created without
    /// encryption at rest (`AtRestMode.plain`; header `"at_rest":"plain"`). A relay with
    /// keys reads a plaintext record only with this mark (docs/DATA_MODEL.md §15).
    public var plainAtRest = false

    public init(owner: String, sid: String, finalSeq: UInt64, createdMs: UInt64, finishedMs: UInt64,
                text: [UInt8], deltaLengths: [Int], doneJSON: String) {
        self.owner = owner
        self.sid = sid
        self.finalSeq = finalSeq
        self.createdMs = createdMs
        self.finishedMs = finishedMs
        self.text = text
        self.deltaLengths = deltaLengths
        self.doneJSON = doneJSON
    }

    /// The value's first line.
    static let magic: [UInt8] = Array("RA1\n".utf8)

    /// The record as stored (see the type's documentation), bytes.
    public func encoded() -> [UInt8] {
        var out = RetainedAnswer.magic
        let head = "{\"owner\":\(JSONText.quoted(owner)),\"sid\":\(JSONText.quoted(sid)),\"final_seq\":\(finalSeq),"
            + "\"created_ms\":\(createdMs),\"finished_ms\":\(finishedMs),\"text_bytes\":\(text.count)"
            + (plainAtRest ? ",\"at_rest\":\"plain\"" : "") + "}\n\(doneJSON)\n"
        out.reserveCapacity(out.count + head.utf8.count + text.count + deltaLengths.count + 8)
        out += head.utf8
        out += text
        var lengths: [UInt8] = []
        lengths.reserveCapacity(deltaLengths.count)
        for var n in deltaLengths {
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
    ///   not add up to the text, a count of lengths other than `final_seq − 1`).
    public init(decoding bytes: [UInt8]) throws {
        let magic = RetainedAnswer.magic
        guard bytes.count > magic.count, Array(bytes[0..<magic.count]) == magic,
              let nl = bytes[magic.count...].firstIndex(of: 0x0A) else { throw RetainedAnswerDecodingError.malformed }
        guard let head = try? LenientJSON.parse(Array(bytes[magic.count..<nl])),
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
        // Each length takes at least one byte: a header that claims more deltas than that is
        // refused before anything is reserved for them (a forged final_seq).
        guard finalSeq - 1 <= packed.count else { throw RetainedAnswerDecodingError.malformed }
        var lengths: [Int] = []
        lengths.reserveCapacity(finalSeq - 1)
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
            lengths.append(n)
            sum += n
        }
        guard lengths.count == finalSeq - 1, sum == textBytes else { throw RetainedAnswerDecodingError.malformed }
        // Every delta is whole characters (`events(after:)` cuts there): a length that cuts
        // inside one, or bytes that are not UTF-8, is damage.
        var at = textStart
        for n in lengths {
            guard String(validating: bytes[at..<(at + n)], as: UTF8.self) != nil else { throw RetainedAnswerDecodingError.malformed }
            at += n
        }
        self.init(owner: owner, sid: sid, finalSeq: UInt64(finalSeq), createdMs: UInt64(max(0, created)),
                  finishedMs: UInt64(max(0, finished)), text: Array(bytes[textStart..<(textStart + textBytes)]),
                  deltaLengths: lengths, doneJSON: doneJSON)
        self.plainAtRest = head["at_rest"]?.stringValue == "plain"
    }

    /// Whether stored record bytes are a plaintext record marked `"at_rest":"plain"`
    /// (`plainAtRest`), read without decoding the rest.
    public static func isMarkedPlain(_ bytes: [UInt8]) -> Bool {
        guard bytes.count > magic.count, Array(bytes[0..<magic.count]) == magic,
              let nl = bytes[magic.count...].firstIndex(of: 0x0A),
              let head = try? LenientJSON.parse(Array(bytes[magic.count..<nl])) else { return false }
        return head["at_rest"]?.stringValue == "plain"
    }

    /// The events after seq `lastEventID`, as they were first sent (docs/PROTOCOL.md §6.5):
    /// each delta `lastEventID+1 … finalSeq−1` with its own seq and text (cut at the stored
    /// lengths), then the original `done` with `finalSeq`. Empty at or past `finalSeq`.
    public func events(after lastEventID: UInt64) -> [SequencedEvent] {
        guard lastEventID < finalSeq else { return [] }
        var out: [SequencedEvent] = []
        out.reserveCapacity(Int(finalSeq - lastEventID))
        var at = 0
        for (i, n) in deltaLengths.enumerated() {
            let seq = UInt64(i + 1)
            defer { at += n }
            guard seq > lastEventID else { continue }
            // Whole characters per delta (checked when decoded): each slice is valid UTF-8.
            out.append(SequencedEvent(seq: seq, json: StreamEvent.delta(String(decoding: text[at..<(at + n)], as: UTF8.self)).json))
        }
        out.append(SequencedEvent(seq: finalSeq, json: doneJSON))
        return out
    }

    /// The bytes the body of a record takes (text plus the lengths' base64; the header
    /// line and the done line come on top): `textBytes` of text, `lengthBytes` LEB128
    /// bytes of lengths (`lengthBytes(of:)` per delta).
    public static func bodyBytes(textBytes: Int, lengthBytes: Int) -> Int { textBytes + (lengthBytes + 2) / 3 * 4 }

    /// LEB128 bytes of one delta length: 1 up to 127, 2 up to 16,383, …
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
