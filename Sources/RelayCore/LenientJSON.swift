/// A JSON value as read by `LenientJSON`: the RFC 8259 grammar, with string contents kept as
/// UTF-16 code units so that a lone surrogate escape (`"\ud83d"`) survives decoding.
///
/// Foundation's decoders reject or replace a lone surrogate escape, which loses the half an
/// upstream split across two SSE chunks (upstream text never kills an answer,
/// docs/UPSTREAMS.md); this type keeps it so a
/// `SurrogateJoiner` can pair it with the next chunk's first unit.
public indirect enum JSONValue: Sendable, Equatable {
    /// `null`.
    case null
    /// `true` / `false`.
    case bool(Bool)
    /// A number, kept as its literal text (RFC 8259 §6 grammar, already validated).
    case number(String)
    /// A string, as UTF-16 code units after unescaping (may hold unpaired surrogates).
    case string(JSONString)
    /// An array, in order.
    case array([JSONValue])
    /// An object's members in document order (duplicates kept; lookups take the last, the
    /// behaviour of most parsers for RFC 8259 §4's non-unique names).
    case object([JSONMember])

    /// The member named `key` (the last one when repeated), or `nil` when this is not an
    /// object or has no such member.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        let k = Array(key.utf16)
        return members.last(where: { $0.name.units == k })?.value
    }

    /// The string's units when this is a string.
    public var stringUnits: JSONString? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// The string's text (lone surrogates replaced by U+FFFD) when this is a string.
    public var stringValue: String? { stringUnits?.text }

    /// The value as an `Int` when it is a number with an integral value that fits in `Int`
    /// (`12`, `-3`, `12.0`, `1e3`); `nil` otherwise (fractions, overflow, non-numbers).
    public var intValue: Int? {
        guard case .number(let literal) = self else { return nil }
        if let i = Int(literal) { return i }
        guard let d = Double(literal), d.rounded() == d, abs(d) < 9.007_199_254_740_992e15 else { return nil }
        return Int(d)
    }

    /// `true` for `null`.
    public var isNull: Bool { self == .null }
}

/// One object member: name and value.
public struct JSONMember: Sendable, Equatable {
    /// The member name (unescaped).
    public var name: JSONString
    /// The member value.
    public var value: JSONValue

    /// A member named `name` holding `value`.
    public init(name: JSONString, value: JSONValue) {
        self.name = name
        self.value = value
    }
}

/// An unescaped JSON string as UTF-16 code units, possibly with unpaired surrogates.
public struct JSONString: Sendable, Equatable {
    /// The code units, in order.
    public var units: [UInt16]

    /// Creates a string from code units.
    public init(units: [UInt16]) { self.units = units }

    /// Creates a string from Swift text (always well-formed).
    public init(_ text: String) { units = Array(text.utf16) }

    /// The text with each unpaired surrogate replaced by U+FFFD (Unicode §3.9, "U+FFFD
    /// substitution"), as Swift's UTF-16 decoding repairs it.
    public var text: String { String(decoding: units, as: UTF16.self) }
}

/// Errors from `LenientJSON.parse`: the byte offset and what was expected there.
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Offset in bytes from the start of the input.
    public var offset: Int
    /// What is wrong (`"expected a value"`, `"unterminated string"`, `"nesting deeper than 128"`).
    public var reason: String
    public var description: String { "\(reason) at byte \(offset)" }
}

/// A small JSON reader (RFC 8259) that keeps string escapes exact, for upstream stream
/// chunks. Pure Swift, no Foundation.
///
/// Differences from a strict reader, all on the side of keeping upstream text:
/// * `\uD800`–`\uDFFF` escapes that do not form a pair are kept as single units (RFC 8259 §8.2
///   allows such strings; §7 says their handling is unpredictable);
/// * bytes that are not valid UTF-8 inside a string become U+FFFD, one per maximal invalid
///   subpart (the WHATWG / Unicode §3.9 practice), instead of failing the document.
///
/// Strict where it matters for safety: control characters U+0000–U+001F must be escaped
/// inside strings (§7), only the §7 escapes are accepted, numbers follow the §6 grammar,
/// nesting is bounded by `maxDepth` (no unbounded recursion on hostile input), and only
/// whitespace (§2: space, tab, LF, CR) may follow the value.
public enum LenientJSON {
    /// Deepest accepted nesting of arrays and objects.
    public static let maxDepth = 128

    /// Parses one JSON text.
    /// - Throws: `JSONParseError` when `bytes` is not one JSON value.
    public static func parse<C: Collection>(_ bytes: C) throws(JSONParseError) -> JSONValue where C.Element == UInt8 {
        let buffer = Array(bytes)
        return try buffer.withUnsafeBufferPointer { (p) throws(JSONParseError) -> JSONValue in
            var r = Reader(p: p)
            r.skipWhitespace()
            let v = try r.value(depth: 0)
            r.skipWhitespace()
            if r.i != p.count { throw r.error("unexpected bytes after the value") }
            return v
        }
    }

    /// Parses the UTF-8 of `text`.
    public static func parse(_ text: String) throws(JSONParseError) -> JSONValue {
        try parse(text.utf8)
    }

    private struct Reader {
        let p: UnsafeBufferPointer<UInt8>
        var i = 0

        func error(_ reason: String) -> JSONParseError { JSONParseError(offset: i, reason: reason) }

        mutating func skipWhitespace() {
            while i < p.count, p[i] == 0x20 || p[i] == 0x09 || p[i] == 0x0A || p[i] == 0x0D { i += 1 }
        }

        mutating func value(depth: Int) throws(JSONParseError) -> JSONValue {
            guard i < p.count else { throw error("expected a value") }
            switch p[i] {
            case UInt8(ascii: "{"):
                guard depth < LenientJSON.maxDepth else { throw error("nesting deeper than \(LenientJSON.maxDepth)") }
                return try object(depth: depth + 1)
            case UInt8(ascii: "["):
                guard depth < LenientJSON.maxDepth else { throw error("nesting deeper than \(LenientJSON.maxDepth)") }
                return try array(depth: depth + 1)
            case UInt8(ascii: "\""):
                return .string(try string())
            case UInt8(ascii: "t"):
                try literal("true")
                return .bool(true)
            case UInt8(ascii: "f"):
                try literal("false")
                return .bool(false)
            case UInt8(ascii: "n"):
                try literal("null")
                return .null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                return try number()
            default:
                throw error("expected a value")
            }
        }

        mutating func literal(_ word: StaticString) throws(JSONParseError) {
            let n = word.utf8CodeUnitCount
            guard p.count - i >= n else { throw error("expected \(word)") }
            let w = word.utf8Start
            for k in 0..<n where p[i + k] != w[k] { throw error("expected \(word)") }
            i += n
        }

        mutating func object(depth: Int) throws(JSONParseError) -> JSONValue {
            i += 1  // {
            var members: [JSONMember] = []
            skipWhitespace()
            if i < p.count, p[i] == UInt8(ascii: "}") {
                i += 1
                return .object(members)
            }
            while true {
                skipWhitespace()
                guard i < p.count, p[i] == UInt8(ascii: "\"") else { throw error("expected a member name") }
                let name = try string()
                skipWhitespace()
                guard i < p.count, p[i] == UInt8(ascii: ":") else { throw error("expected ':'") }
                i += 1
                skipWhitespace()
                let v = try value(depth: depth)
                members.append(JSONMember(name: name, value: v))
                skipWhitespace()
                guard i < p.count else { throw error("unterminated object") }
                if p[i] == UInt8(ascii: ",") { i += 1; continue }
                if p[i] == UInt8(ascii: "}") { i += 1; return .object(members) }
                throw error("expected ',' or '}'")
            }
        }

        mutating func array(depth: Int) throws(JSONParseError) -> JSONValue {
            i += 1  // [
            var items: [JSONValue] = []
            skipWhitespace()
            if i < p.count, p[i] == UInt8(ascii: "]") {
                i += 1
                return .array(items)
            }
            while true {
                skipWhitespace()
                items.append(try value(depth: depth))
                skipWhitespace()
                guard i < p.count else { throw error("unterminated array") }
                if p[i] == UInt8(ascii: ",") { i += 1; continue }
                if p[i] == UInt8(ascii: "]") { i += 1; return .array(items) }
                throw error("expected ',' or ']'")
            }
        }

        /// RFC 8259 §6: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
        mutating func number() throws(JSONParseError) -> JSONValue {
            let start = i
            if p[i] == UInt8(ascii: "-") { i += 1 }
            guard i < p.count, isDigit(p[i]) else { throw error("expected a digit") }
            if p[i] == UInt8(ascii: "0") {
                i += 1
            } else {
                while i < p.count, isDigit(p[i]) { i += 1 }
            }
            if i < p.count, p[i] == UInt8(ascii: ".") {
                i += 1
                guard i < p.count, isDigit(p[i]) else { throw error("expected a digit after '.'") }
                while i < p.count, isDigit(p[i]) { i += 1 }
            }
            if i < p.count, p[i] == UInt8(ascii: "e") || p[i] == UInt8(ascii: "E") {
                i += 1
                if i < p.count, p[i] == UInt8(ascii: "+") || p[i] == UInt8(ascii: "-") { i += 1 }
                guard i < p.count, isDigit(p[i]) else { throw error("expected an exponent digit") }
                while i < p.count, isDigit(p[i]) { i += 1 }
            }
            return .number(String(decoding: UnsafeBufferPointer(rebasing: p[start..<i]), as: UTF8.self))
        }

        func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }

        /// RFC 8259 §7. Unescaped runs are UTF-8 decoded with U+FFFD repair; a run always ends
        /// at an ASCII byte (`"` or `\`), so per-run decoding equals whole-string decoding.
        mutating func string() throws(JSONParseError) -> JSONString {
            i += 1  // opening quote
            var units: [UInt16] = []
            var run = i
            while i < p.count {
                let b = p[i]
                if b == UInt8(ascii: "\"") {
                    flush(from: run, into: &units)
                    i += 1
                    return JSONString(units: units)
                }
                if b == UInt8(ascii: "\\") {
                    flush(from: run, into: &units)
                    try escape(into: &units)
                    run = i
                    continue
                }
                if b < 0x20 { throw error("unescaped control character in a string") }
                i += 1
            }
            throw error("unterminated string")
        }

        func flush(from start: Int, into units: inout [UInt16]) {
            guard start < i else { return }
            let run = UnsafeBufferPointer(rebasing: p[start..<i])
            if !run.contains(where: { $0 >= 0x80 }) {
                units.append(contentsOf: run.lazy.map { UInt16($0) })
            } else {
                units.append(contentsOf: String(decoding: run, as: UTF8.self).utf16)
            }
        }

        mutating func escape(into units: inout [UInt16]) throws(JSONParseError) {
            i += 1  // backslash
            guard i < p.count else { throw error("unterminated escape") }
            let c = p[i]
            i += 1
            switch c {
            case UInt8(ascii: "\""): units.append(0x22)
            case UInt8(ascii: "\\"): units.append(0x5C)
            case UInt8(ascii: "/"): units.append(0x2F)
            case UInt8(ascii: "b"): units.append(0x08)
            case UInt8(ascii: "f"): units.append(0x0C)
            case UInt8(ascii: "n"): units.append(0x0A)
            case UInt8(ascii: "r"): units.append(0x0D)
            case UInt8(ascii: "t"): units.append(0x09)
            case UInt8(ascii: "u"):
                guard p.count - i >= 4 else { throw error("short \\u escape") }
                var v: UInt16 = 0
                for _ in 0..<4 {
                    let h = p[i]
                    let d: UInt16
                    switch h {
                    case 0x30...0x39: d = UInt16(h - 0x30)
                    case 0x41...0x46: d = UInt16(h - 0x41 + 10)
                    case 0x61...0x66: d = UInt16(h - 0x61 + 10)
                    default: throw error("bad hex digit in \\u escape")
                    }
                    v = v << 4 | d
                    i += 1
                }
                units.append(v)  // a surrogate half stays as it is (see the type's notes)
            default:
                i -= 1
                throw error("unknown escape")
            }
        }
    }
}
