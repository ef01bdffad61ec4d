/// Compact JSON text of a `JSONValue` (RFC 8259): no whitespace between tokens, members
/// in document order, numbers as their validated literal, strings escaped as `JSONText`
/// escapes them (control characters, `"`, `\`, U+2028/U+2029). An unpaired surrogate
/// unit is written as its `\uXXXX` escape, so the value reads back unit for unit.
///
/// The text is one line: a value taken from an upstream's pretty-printed arguments is
/// stored and sent on one `data:` line (docs/PROTOCOL.md §5).
extension JSONValue {
    /// The value as compact JSON text.
    public var compactJSON: String {
        var out = ""
        append(to: &out)
        return out
    }

    /// Appends the compact JSON text of the value to `out`.
    public func append(to out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .number(let literal): out += literal
        case .string(let s): JSONValue.appendQuoted(s, to: &out)
        case .array(let items):
            out += "["
            for (i, v) in items.enumerated() {
                if i > 0 { out += "," }
                v.append(to: &out)
            }
            out += "]"
        case .object(let members):
            out += "{"
            for (i, m) in members.enumerated() {
                if i > 0 { out += "," }
                JSONValue.appendQuoted(m.name, to: &out)
                out += ":"
                m.value.append(to: &out)
            }
            out += "}"
        }
    }

    /// A JSON string literal of `s`'s units, written straight from UTF-16 to UTF-8 (one pass, no
    /// intermediate `String`: the standard library's UTF-16 decoding takes a generic path of
    /// about 500 instructions per byte, docs/BENCHMARKS.md "Parts: cost per event"). Escaped
    /// as `JSONText.appendEscaped` escapes (`"`, `\`, U+0000–U+001F, U+2028, U+2029); each
    /// unpaired surrogate as `\uXXXX`.
    private static func appendQuoted(_ s: JSONString, to out: inout String) {
        let u = s.units
        var bytes: [UInt8] = []
        bytes.reserveCapacity(u.count + 2)
        bytes.append(0x22)
        func hex4(_ v: UInt16) {
            let digits: [UInt8] = Array("0123456789abcdef".utf8)
            bytes += [0x5C, 0x75, digits[Int(v >> 12) & 15], digits[Int(v >> 8) & 15], digits[Int(v >> 4) & 15], digits[Int(v) & 15]]
        }
        var i = 0
        while i < u.count {
            let c = u[i]
            i += 1
            switch c {
            case 0x22: bytes += [0x5C, 0x22]
            case 0x5C: bytes += [0x5C, 0x5C]
            case 0x0A: bytes += [0x5C, 0x6E]
            case 0x0D: bytes += [0x5C, 0x72]
            case 0x09: bytes += [0x5C, 0x74]
            case 0..<0x20, 0x2028, 0x2029: hex4(c)
            case 0x20..<0x80: bytes.append(UInt8(c))
            case 0x80..<0x800:
                bytes += [UInt8(0xC0 | (c >> 6)), UInt8(0x80 | (c & 0x3F))]
            case 0xD800...0xDBFF where i < u.count && (0xDC00...0xDFFF).contains(u[i]):
                let scalar = 0x10000 + (UInt32(c - 0xD800) << 10) + UInt32(u[i] - 0xDC00)
                i += 1
                bytes += [UInt8(0xF0 | (scalar >> 18)), UInt8(0x80 | ((scalar >> 12) & 0x3F)),
                          UInt8(0x80 | ((scalar >> 6) & 0x3F)), UInt8(0x80 | (scalar & 0x3F))]
            case 0xD800...0xDFFF: hex4(c)   // unpaired
            default:
                bytes += [UInt8(0xE0 | (c >> 12)), UInt8(0x80 | ((c >> 6) & 0x3F)), UInt8(0x80 | (c & 0x3F))]
            }
        }
        bytes.append(0x22)
        out += String(decoding: bytes, as: UTF8.self)
    }
}
