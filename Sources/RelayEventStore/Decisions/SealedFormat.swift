/// The layout of a value sealed at rest (docs/DATA_MODEL.md §15), version 1. A sealed value
/// is ASCII text, so it travels wherever the relay passes strings (stream fields, pub/sub
/// payloads, Lua script arguments, cluster resends):
///
///     "~" base64( version 0x01 | kid length k (1–32) | kid (ASCII) | nonce (12) | ciphertext (n) | GCM tag (16) )
///
/// with standard padded base64 (RFC 4648 §4). `~` is not in the base64 alphabet and never
/// starts an event's JSON (`{`), so a sealed value is told from plaintext by its first byte,
/// and several sealed values can follow one another in one Redis string (the text key: one
/// record per text write; each record ends where the next `~` or the string ends).
/// The ciphertext is as long as the plaintext (GCM is a counter mode), so a record's
/// length is a function of its plaintext length and kid (`sealedLength`).
///
/// Pure: the framing and base64 only; the cipher is `AtRestCipher`.
public enum SealedFormat {
    /// First byte of every sealed value: `~`.
    public static let marker: UInt8 = 0x7E
    /// The version this relay writes and reads.
    public static let version: UInt8 = 0x01
    /// Bytes of the GCM nonce (NIST SP 800-38D §8.2.2: 96-bit random IVs).
    public static let nonceBytes = 12
    /// Bytes of the GCM tag (the full 128 bits).
    public static let tagBytes = 16

    /// Bytes of the binary form (before base64) of a plaintext of `n` bytes sealed under a
    /// kid of `kidBytes` bytes.
    public static func binaryLength(plaintextBytes n: Int, kidBytes: Int) -> Int { 2 + kidBytes + nonceBytes + n + tagBytes }

    /// Bytes of the sealed text of a plaintext of `n` bytes under a kid of `kidBytes` bytes:
    /// the marker plus padded base64.
    public static func sealedLength(plaintextBytes n: Int, kidBytes: Int) -> Int {
        1 + (binaryLength(plaintextBytes: n, kidBytes: kidBytes) + 2) / 3 * 4
    }

    /// One parsed binary sealed value: ranges into the bytes it was read from.
    public struct Parsed: Equatable, Sendable {
        public var kid: String
        public var nonce: Range<Int>
        public var ciphertext: Range<Int>
        public var tag: Range<Int>
    }

    /// Why bytes are not a sealed value.
    public enum Malformed: Error, Equatable, Sendable, CustomStringConvertible {
        /// The first byte is not `marker` (plaintext, or another format).
        case notSealed
        /// Not valid padded base64 after the marker.
        case badBase64
        /// A version this relay does not read.
        case unknownVersion(UInt8)
        /// Shorter than its header says.
        case truncated
        /// The kid is empty, too long or not printable ASCII.
        case badKid

        public var description: String {
            switch self {
            case .notSealed: return "not a sealed value"
            case .badBase64: return "not valid base64"
            case .unknownVersion(let v): return "unknown sealed format version \(v)"
            case .truncated: return "truncated"
            case .badKid: return "bad kid"
            }
        }
    }

    /// Whether `bytes` starts like a sealed value (its first byte is `marker`).
    public static func looksSealed<C: Collection>(_ bytes: C) -> Bool where C.Element == UInt8 {
        bytes.first == marker
    }

    /// Parses the binary form (after base64).
    /// - Throws: `Malformed`.
    public static func parse(_ b: [UInt8]) throws(Malformed) -> Parsed {
        guard b.count >= 2 else { throw .truncated }
        guard b[0] == version else { throw .unknownVersion(b[0]) }
        let k = Int(b[1])
        guard k >= 1, k <= 32 else { throw .badKid }
        guard b.count >= 2 + k + nonceBytes + tagBytes else { throw .truncated }
        for j in 2..<(2 + k) where b[j] < 0x21 || b[j] >= 0x7F { throw .badKid }
        let nonce = (2 + k)..<(2 + k + nonceBytes)
        let tag = (b.count - tagBytes)..<b.count
        return Parsed(kid: String(decoding: b[2..<(2 + k)], as: UTF8.self), nonce: nonce,
                      ciphertext: nonce.upperBound..<tag.lowerBound, tag: tag)
    }

    /// The sealed values one after another in `text` (a text key's records): the byte
    /// ranges of each, marker included. Empty for empty text.
    /// - Throws: `Malformed.notSealed` when `text` does not start with the marker.
    public static func records(_ text: [UInt8]) throws(Malformed) -> [Range<Int>] {
        guard !text.isEmpty else { return [] }
        guard text[0] == marker else { throw .notSealed }
        var out: [Range<Int>] = []
        var start = 0
        for i in 1..<text.count where text[i] == marker {
            out.append(start..<i)
            start = i
        }
        out.append(start..<text.count)
        return out
    }

    // MARK: base64 (RFC 4648 §4, padded)

    private static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let reverse: [UInt8] = {
        var t = [UInt8](repeating: 0xFF, count: 256)
        for (i, c) in alphabet.enumerated() { t[Int(c)] = UInt8(i) }
        return t
    }()

    /// `~` and the padded base64 of `bin`, as a string.
    public static func text(ofBinary bin: UnsafeBufferPointer<UInt8>) -> String {
        let n = bin.count
        let total = 1 + (n + 2) / 3 * 4
        return String(unsafeUninitializedCapacity: total) { out in
            alphabet.withUnsafeBufferPointer { a in
                out[0] = marker
                var o = 1, i = 0
                while i + 3 <= n {
                    let v = UInt32(bin[i]) << 16 | UInt32(bin[i + 1]) << 8 | UInt32(bin[i + 2])
                    out[o] = a[Int(v >> 18)]; out[o + 1] = a[Int(v >> 12 & 63)]
                    out[o + 2] = a[Int(v >> 6 & 63)]; out[o + 3] = a[Int(v & 63)]
                    i += 3; o += 4
                }
                let rest = n - i
                if rest > 0 {
                    let v = UInt32(bin[i]) << 16 | (rest == 2 ? UInt32(bin[i + 1]) << 8 : 0)
                    out[o] = a[Int(v >> 18)]; out[o + 1] = a[Int(v >> 12 & 63)]
                    out[o + 2] = rest == 2 ? a[Int(v >> 6 & 63)] : 0x3D
                    out[o + 3] = 0x3D
                }
            }
            return total
        }
    }

    /// The binary form inside a sealed text (`~` + padded, canonical base64).
    /// - Throws: `Malformed.notSealed` without the marker, `.badBase64` otherwise.
    public static func binary(ofText t: UnsafeBufferPointer<UInt8>) throws(Malformed) -> [UInt8] {
        guard t.first == marker else { throw .notSealed }
        let n = t.count - 1
        guard n > 0, n % 4 == 0 else { throw .badBase64 }
        var out = [UInt8]()
        out.reserveCapacity(n / 4 * 3)
        var i = 1
        let r = reverse
        while i < t.count {
            let c0 = r[Int(t[i])], c1 = r[Int(t[i + 1])]
            let p2 = t[i + 2] == 0x3D, p3 = t[i + 3] == 0x3D
            let last = i + 4 == t.count
            guard c0 != 0xFF, c1 != 0xFF, !p2 || (p3 && last), !p3 || last else { throw .badBase64 }
            let c2 = p2 ? 0 : r[Int(t[i + 2])], c3 = p3 ? 0 : r[Int(t[i + 3])]
            guard c2 != 0xFF, c3 != 0xFF else { throw .badBase64 }
            // Canonical only (RFC 4648 §3.5): the bits a pad leaves unused are zero.
            guard !p2 || c1 & 0x0F == 0, p2 || !p3 || c2 & 0x03 == 0 else { throw .badBase64 }
            let v = UInt32(c0) << 18 | UInt32(c1) << 12 | UInt32(c2) << 6 | UInt32(c3)
            out.append(UInt8(v >> 16))
            if !p2 { out.append(UInt8(v >> 8 & 0xFF)) }
            if !p3 { out.append(UInt8(v & 0xFF)) }
            i += 4
        }
        return out
    }
}
