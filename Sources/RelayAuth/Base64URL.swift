/// Strict base64url without padding (RFC 4648 §5, as used by RFC 7515 §2).
///
/// Decoding accepts only `A–Z a–z 0–9 - _`, no `=`, no whitespace, and only the
/// canonical encoding (unused trailing bits must be zero), so one byte string has
/// exactly one accepted text: a token cannot be altered without changing its bytes.
enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// 6-bit value of a base64url character, or nil.
    @inline(__always)
    static func value(of c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): return c - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): return c - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0") + 52
        case UInt8(ascii: "-"): return 62
        case UInt8(ascii: "_"): return 63
        default: return nil
        }
    }

    /// Encodes bytes as unpadded base64url.
    static func encode<C: Collection>(_ bytes: C) -> String where C.Element == UInt8 {
        var out = [UInt8]()
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var it = bytes.makeIterator()
        while let b0 = it.next() {
            let b1 = it.next(), b2 = it.next()
            out.append(alphabet[Int(b0 >> 2)])
            out.append(alphabet[Int((b0 & 0x03) << 4 | (b1 ?? 0) >> 4)])
            if let b1 { out.append(alphabet[Int((b1 & 0x0F) << 2 | (b2 ?? 0) >> 6)]) }
            if let b2 { out.append(alphabet[Int(b2 & 0x3F)]) }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes canonical unpadded base64url; nil on any other input (including empty).
    static func decode<C: Collection>(_ text: C) -> [UInt8]? where C.Element == UInt8 {
        let n = text.count
        if n == 0 || n % 4 == 1 { return nil }
        var out = [UInt8]()
        out.reserveCapacity(n * 3 / 4)
        var acc: UInt32 = 0
        var bits = 0
        for c in text {
            guard let v = value(of: c) else { return nil }
            acc = (acc << 6) | UInt32(v)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: acc >> UInt32(bits)))
                acc &= (1 << UInt32(bits)) - 1
            }
        }
        // Non-canonical: leftover bits must be zero.
        if acc != 0 { return nil }
        return out
    }
}
