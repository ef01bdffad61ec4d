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

    /// Writes `v` as exactly `digits` ASCII digits (`digits(v)`) at `out`.
    @inlinable
    public static func write(_ v: UInt64, digits: Int, to out: UnsafeMutableRawPointer) {
        var x = v
        var i = digits
        while i > 0 {
            i -= 1
            out.storeBytes(of: UInt8(truncatingIfNeeded: x % 10) &+ 0x30, toByteOffset: i, as: UInt8.self)
            x /= 10
        }
    }
}
