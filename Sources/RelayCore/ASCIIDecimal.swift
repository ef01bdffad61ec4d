/// Non-negative integers as ASCII decimal digits, written in place: the lengths in the
/// Redis protocol's headers (RESP `*<n>` / `$<n>`) and the SSE `id:` of a framed event,
/// built per event without an intermediate `String`.
public enum ASCIIDecimal {
    /// How many decimal digits `v` has (1 for 0). Compares with powers of ten (no
    /// division: this runs for every RESP header and SSE id, several times per event).
    @inlinable
    public static func digits(_ v: UInt64) -> Int {
        var n = 1
        var p: UInt64 = 10
        while n < 20 && v >= p {
            n += 1
            p &*= 10
        }
        return n
    }

    /// Writes `v` as exactly `digits` ASCII digits (`digits(v)`) at `out`: two digits
    /// per division, from a table of "00"…"99" (half the divisions of one digit at a
    /// time; a bench token's 16-digit timestamp and every RESP length go through here).
    @inlinable
    public static func write(_ v: UInt64, digits: Int, to out: UnsafeMutableRawPointer) {
        var x = v
        var i = digits
        let table = pairs.utf8Start
        while i >= 2 {
            let pair = Int(truncatingIfNeeded: x % 100)
            x /= 100
            i -= 2
            out.storeBytes(of: table[pair &* 2], toByteOffset: i, as: UInt8.self)
            out.storeBytes(of: table[pair &* 2 &+ 1], toByteOffset: i + 1, as: UInt8.self)
        }
        if i == 1 { out.storeBytes(of: UInt8(truncatingIfNeeded: x % 10) &+ 0x30, toByteOffset: 0, as: UInt8.self) }
    }

    /// "00" "01" … "99" as 200 ASCII bytes (a literal: no lazy initialization to check).
    @usableFromInline
    static var pairs: StaticString { "00010203040506070809101112131415161718192021222324252627282930313233343536373839404142434445464748495051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899" }
}
