/// Non-negative integers as ASCII decimal digits, written in place: the lengths in the
/// Redis protocol's headers (RESP `*<n>` / `$<n>`) and the SSE `id:` of a framed event,
/// built per event without an intermediate `String`.
public enum ASCIIDecimal {
    /// How many decimal digits `v` has (1 for 0).
    public static func digits(_ v: UInt64) -> Int {
        var n = 1
        var x = v
        while x >= 10 { x /= 10; n += 1 }
        return n
    }

    /// Writes `v` as exactly `digits` ASCII digits (`digits(v)`) at `out`.
    public static func write(_ v: UInt64, digits: Int, to out: UnsafeMutableRawPointer) {
        var x = v
        for i in stride(from: digits - 1, through: 0, by: -1) {
            out.storeBytes(of: UInt8(truncatingIfNeeded: x % 10) &+ 0x30, toByteOffset: i, as: UInt8.self)
            x /= 10
        }
    }
}
