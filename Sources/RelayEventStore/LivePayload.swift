import RelayCore
import RelayRedis

/// The live channel's message format (docs/DATA_MODEL.md §7, `relay:{id}:live`): `<seq> <event JSON>`,
/// published by `StreamAppender` once an event is stored (and `Scripts.expireLease`) and read by every worker's pub/sub dispatch.
public enum LivePayload {
    /// The message of one stored event: `<seq> <event JSON>` (what `parse` reads back;
    /// `Scripts.expireLease` builds the same in Lua; the append path writes the same
    /// bytes straight into its `PUBLISH`, `RESPCommand.add(seq:space:)`).
    public static func message(seq: UInt64, json: String) -> String {
        var j = json
        return j.withUTF8 { src in
            let digits = ASCIIDecimal.digits(seq)
            let total = digits + 1 + src.count
            return String(unsafeUninitializedCapacity: total) { out in
                let base = out.baseAddress!
                ASCIIDecimal.write(seq, digits: digits, to: UnsafeMutableRawPointer(base))
                base[digits] = 0x20
                if let s = src.baseAddress, src.count > 0 { (base + digits + 1).initialize(from: s, count: src.count) }
                return total
            }
        }
    }

    /// Parses one live message into its event; `nil` when the seq is missing, longer
    /// than 20 digits or not all digits.
    public static func parse(_ p: [UInt8]) -> SequencedEvent? {
        guard let sp = p.firstIndex(of: 0x20), sp > 0, sp <= 20 else { return nil }
        var seq: UInt64 = 0
        for b in p[..<sp] {
            guard b >= 0x30 && b <= 0x39 else { return nil }
            seq = seq &* 10 &+ UInt64(b - 0x30)
        }
        return SequencedEvent(seq: seq, json: String(decoding: p[(sp + 1)...], as: UTF8.self))
    }
}
