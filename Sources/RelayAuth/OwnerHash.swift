/// The namespace of a user's keys in Redis (docs/DATA_MODEL.md §1): a hash of the token's `sub`, so
/// request ids, per-session limits and budgets of different users never collide and
/// key names carry no user id in clear.
public enum OwnerHash {
    /// HMAC-SHA256 (RFC 2104) of `sub` under a fixed domain-separation key, first 12
    /// bytes as 24 lowercase hex digits (96 bits: a collision needs ~2^48 users).
    public static func of(_ sub: String) -> String {
        let mac = OpenSSLShim.hmacSHA256(key: Array("streamrelay-owner-v1".utf8), data: Array(sub.utf8))
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(24)
        for b in mac.prefix(12) {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 15)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
