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

    /// A JSON string literal of `s`'s units: well-formed runs escaped by `JSONText`, each
    /// unpaired surrogate as `\uXXXX`.
    private static func appendQuoted(_ s: JSONString, to out: inout String) {
        out += "\""
        var run: [UInt16] = []
        func flush() {
            guard !run.isEmpty else { return }
            JSONText.appendEscaped(String(decoding: run, as: UTF16.self), to: &out)
            run.removeAll(keepingCapacity: true)
        }
        var i = 0
        let u = s.units
        while i < u.count {
            let c = u[i]
            if UTF16.isLeadSurrogate(c), i + 1 < u.count, UTF16.isTrailSurrogate(u[i + 1]) {
                run.append(c)
                run.append(u[i + 1])
                i += 2
            } else if UTF16.isLeadSurrogate(c) || UTF16.isTrailSurrogate(c) {
                flush()
                let hex = String(c, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                i += 1
            } else {
                run.append(c)
                i += 1
            }
        }
        flush()
        out += "\""
    }
}
