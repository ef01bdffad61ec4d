// A deterministic stand-in for RelayAuth's OpenSSLShim in fuzz builds, which compile Swift
// sources only (no C module). The targets that use it fuzz parsers, not HMAC: any fixed
// 32-byte function of (key, data) keeps their sign/verify invariants meaningful.

enum OpenSSLShim {
    /// 32 bytes from FNV-1a over key and data, four lanes: not a MAC, only deterministic.
    static func hmacSHA256(key: [UInt8], data: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        for lane in 0..<4 {
            var h: UInt64 = 0xcbf2_9ce4_8422_2325 &+ UInt64(lane)
            for b in key + [0xFF] + data {
                h = (h ^ UInt64(b)) &* 0x0000_0100_0000_01B3
            }
            for i in 0..<8 { out.append(UInt8(truncatingIfNeeded: h >> (8 * UInt64(i)))) }
        }
        return out
    }

    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool { a == b }
}
