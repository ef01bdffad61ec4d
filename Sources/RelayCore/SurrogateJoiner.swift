/// Joins UTF-16 surrogate halves that an upstream split across consecutive text pieces
/// (an emoji sent as `"\ud83d"` in one delta and `"\ude00"` in the next; docs/UPSTREAMS.md).
///
/// Feed each piece's UTF-16 code units in order with `append`; it returns the text that is
/// complete so far. A high surrogate (U+D800–U+DBFF) at the very end of a piece is held back;
/// if the next piece starts with a low surrogate (U+DC00–U+DFFF) the two form one scalar,
/// otherwise the held half becomes U+FFFD. Any other unpaired half becomes U+FFFD (Unicode
/// §3.9, "U+FFFD substitution"). Call `finish()` at the end of the stream: a half still held
/// becomes U+FFFD.
///
/// Invariant: the concatenation of all returned strings equals decoding the concatenation of
/// all pieces at once with U+FFFD repair (`String(decoding:as: UTF16.self)`).
public struct SurrogateJoiner: Sendable {
    private var heldHigh: UInt16?
    /// How many unpaired halves were replaced by U+FFFD so far.
    public private(set) var replacedHalves = 0

    /// Creates a joiner for one stream.
    public init() {}

    /// `true` while a high surrogate from the end of the last piece is held back.
    public var isHolding: Bool { heldHigh != nil }

    /// Appends the next piece and returns the text completed by it (may be `""`, for a piece
    /// that is only a held-back high surrogate).
    public mutating func append(_ units: [UInt16]) -> String {
        var out = String.UnicodeScalarView()
        var k = 0
        var pendingHigh = heldHigh
        heldHigh = nil
        let n = units.count
        while k < n {
            let u = units[k]
            if let h = pendingHigh {
                pendingHigh = nil
                if UTF16.isTrailSurrogate(u) {
                    let v = 0x10000 + (UInt32(h - 0xD800) << 10) + UInt32(u - 0xDC00)
                    out.append(Unicode.Scalar(v)!)
                    k += 1
                    continue
                }
                replace(into: &out)
            }
            if UTF16.isLeadSurrogate(u) {
                pendingHigh = u
            } else if UTF16.isTrailSurrogate(u) {
                replace(into: &out)
            } else {
                out.append(Unicode.Scalar(u)!)
            }
            k += 1
        }
        heldHigh = pendingHigh
        return String(out)
    }

    /// Appends the units of `text` (well-formed, except that a held half before it is resolved).
    public mutating func append(_ text: String) -> String {
        append(Array(text.utf16))
    }

    /// Ends the stream: returns `"\u{FFFD}"` when a high surrogate is still held, else `""`.
    public mutating func finish() -> String {
        guard heldHigh != nil else { return "" }
        heldHigh = nil
        replacedHalves += 1
        return "\u{FFFD}"
    }

    private mutating func replace(into out: inout String.UnicodeScalarView) {
        replacedHalves += 1
        out.append("\u{FFFD}")
    }
}
