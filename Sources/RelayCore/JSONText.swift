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
    ///
    /// Eight bytes at a time (it runs once per token; a byte loop costs ≈ 13 instructions
    /// per byte, this ≈ 4, docs/BENCHMARKS.md): a 64-bit word has a byte below 0x20 when
    /// `(w - 0x20…20) & ~w & 0x80…80` is not zero, and a byte equal to `c` when the word
    /// `w ^ c…c` has a zero byte (the "has less" and "has zero byte" tests of Sean
    /// Anderson's Bit Twiddling Hacks, exact for any bytes when only the zero/non-zero
    /// result is used). The bytes after the last whole word go through the byte loop.
    public static func mayNeedEscaping(_ utf8: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = utf8.baseAddress else { return false }
        let n = utf8.count
        var i = 0
        let raw = UnsafeRawPointer(base)
        while i + 8 <= n {
            let w = raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            if wordMayNeedEscaping(w) { return true }
            i += 8
        }
        while i < n {
            let b = base[i]
            if b < 0x20 || b == 0x22 || b == 0x5C || b == 0xE2 { return true }
            i += 1
        }
        return false
    }

    private static let ones: UInt64 = 0x0101_0101_0101_0101
    private static let highs: UInt64 = 0x8080_8080_8080_8080

    /// Whether one of the word's eight bytes is < 0x20, `"`, `\` or 0xE2.
    @inline(__always)
    static func wordMayNeedEscaping(_ w: UInt64) -> Bool {
        let control = (w &- ones &* 0x20) & ~w & highs
        return control | hasZeroByte(w ^ (ones &* 0x22)) | hasZeroByte(w ^ (ones &* 0x5C))
            | hasZeroByte(w ^ (ones &* 0xE2)) != 0
    }

    /// Non-zero when a byte of `v` is zero.
    @inline(__always)
    private static func hasZeroByte(_ v: UInt64) -> UInt64 {
        (v &- ones) & ~v & highs
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
