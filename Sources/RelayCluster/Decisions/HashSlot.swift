/// Redis Cluster hash slots (Redis Cluster specification, "Keys distribution model"
/// and "Hash tags"): `HASH_SLOT = CRC16(key) mod 16384`, where CRC16 is the XMODEM
/// variant (polynomial 0x1021, initial value 0, no reflection), and only the part
/// between the first `{` and the next `}` is hashed when that part is not empty.
public enum HashSlot {
    /// Number of hash slots in a Redis Cluster.
    public static let count = 16_384

    /// CRC16/XMODEM of `bytes` (spec test vector: `"123456789"` → `0x31C3`).
    public static func crc16<C: Collection>(_ bytes: C) -> UInt16 where C.Element == UInt8 {
        var crc: UInt16 = 0
        for b in bytes {
            crc = (crc << 8) ^ table[Int(UInt8(truncatingIfNeeded: crc >> 8) ^ b)]
        }
        return crc
    }

    /// The hash slot (0…16383) of a key or shard channel name, honouring hash tags:
    /// `{user1000}.following` and `{user1000}.followers` share a slot; `foo{}{bar}`
    /// hashes the whole key (empty first tag); `foo{{bar}}` hashes `{bar`.
    public static func of(_ key: String) -> Int {
        let bytes = Array(key.utf8)
        return of(bytes: bytes)
    }

    /// `of(_:)` on raw key bytes.
    public static func of(bytes: [UInt8]) -> Int {
        if let open = bytes.firstIndex(of: UInt8(ascii: "{")),
           let close = bytes[(open + 1)...].firstIndex(of: UInt8(ascii: "}")), close > open + 1 {
            return Int(crc16(bytes[(open + 1)..<close])) & (count - 1)
        }
        return Int(crc16(bytes)) & (count - 1)
    }

    private static let table: [UInt16] = (0..<256).map { i -> UInt16 in
        var c = UInt16(i) << 8
        for _ in 0..<8 { c = (c & 0x8000) != 0 ? (c << 1) ^ 0x1021 : c << 1 }
        return c
    }
}
