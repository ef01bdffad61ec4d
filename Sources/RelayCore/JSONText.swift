/// Minimal JSON text writing for the relay's own fixed-shape events.
///
/// Decoding always goes through Foundation (`JSONSerialization`); this only escapes a
/// Swift string into a JSON string literal per RFC 8259 §7, so that the hot path of
/// the relay (one event per token) does not pay for a generic encoder.
public enum JSONText {
    /// Returns `s` as a quoted JSON string literal: `"`, `\` and control characters
    /// U+0000–U+001F escaped (RFC 8259 §7); everything else, including non-ASCII, is
    /// kept as UTF-8. U+2028/U+2029 are escaped too so the text is safe inside JS.
    public static func quoted(_ s: String) -> String {
        var out = "\""
        out.reserveCapacity(s.utf8.count + 2)
        appendEscaped(s, to: &out)
        out.append("\"")
        return out
    }

    /// Whether UTF-8 text may need escaping in a JSON string: it holds a control
    /// character, `"`, `\`, or the lead byte 0xE2 of U+2028/U+2029 (and of other
    /// characters, which then turn out to need nothing). `false` means the bytes can be
    /// copied as they are.
    public static func mayNeedEscaping(_ utf8: UnsafeBufferPointer<UInt8>) -> Bool {
        for b in utf8 where b < 0x20 || b == 0x22 || b == 0x5C || b == 0xE2 { return true }
        return false
    }

    /// Appends the escaped body of `s` (without quotes) to `out`.
    public static func appendEscaped(_ s: String, to out: inout String) {
        // Fast path: nothing to escape.
        var copy = s
        if !copy.withUTF8({ mayNeedEscaping($0) }) {
            out.append(s)
            return
        }
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out.append("\\\"")
            case "\\": out.append("\\\\")
            case "\n": out.append("\\n")
            case "\r": out.append("\\r")
            case "\t": out.append("\\t")
            case "\u{2028}": out.append("\\u2028")
            case "\u{2029}": out.append("\\u2029")
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    out.append("\\u" + String(repeating: "0", count: 4 - hex.count) + hex)
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
    }
}
