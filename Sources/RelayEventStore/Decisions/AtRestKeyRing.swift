import Foundation

/// The keys that seal stored answers at rest (`RELAY_ENCRYPTION_KEYS`, docs/DATA_MODEL.md §15):
/// comma-separated `kid:base64` pairs, each key 32 bytes (AES-256), the first one current.
/// New seals use the current key; every listed key still opens what it sealed, so a
/// rotation lists the new key first and keeps the old one until its data has expired
/// (`RELAY_BUFFER_TTL`).
///
/// Pure: `parse` reads the text; reading a `file:///path` is the caller's (`FileURLSetting`).
public struct AtRestKeyRing: Sendable, Equatable {
    /// The kid new seals are made with (the first of the list).
    public let currentKid: String
    /// Every key by kid: 32 bytes each.
    public let keys: [String: [UInt8]]
    /// The kids in the order given (the current one first).
    public let kids: [String]

    /// Bytes of an AES-256 key.
    public static let keyBytes = 32
    /// Longest kid, bytes (it is stored in every sealed value's header).
    public static let maxKidBytes = 32

    /// Why a key list was refused: each names what to fix.
    public struct ParseError: Error, Equatable, CustomStringConvertible {
        public let message: String
        public init(_ message: String) { self.message = message }
        public var description: String { message }
    }

    /// Parses `kid:base64,kid:base64,…` (spaces and newlines around entries are ignored,
    /// so a key file may hold one pair a line). A kid is 1–32 of `A–Z a–z 0–9 . _ -`; the
    /// key standard base64 (RFC 4648 §4, padded) of exactly 32 bytes.
    /// - Throws: `ParseError` for an empty list, an entry without `:`, a bad kid, bad
    ///   base64, a key that is not 32 bytes, or a kid given twice. The message never
    ///   contains key material.
    public static func parse(_ text: String) throws(ParseError) -> AtRestKeyRing {
        var keys: [String: [UInt8]] = [:]
        var kids: [String] = []
        let entries = text.split(whereSeparator: { $0 == "," || $0 == "\n" || $0 == "\r" })
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
        guard !entries.isEmpty else {
            throw ParseError("RELAY_ENCRYPTION_KEYS is empty: give kid:base64-of-32-bytes pairs, comma-separated, the current key first")
        }
        for (i, entry) in entries.enumerated() {
            guard let colon = entry.firstIndex(of: ":") else {
                throw ParseError("RELAY_ENCRYPTION_KEYS entry \(i + 1) is not kid:base64 (no ':')")
            }
            let kid = String(entry[..<colon])
            let b64 = entry[entry.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            guard isValidKid(kid) else {
                throw ParseError("RELAY_ENCRYPTION_KEYS entry \(i + 1): kid must be 1-\(maxKidBytes) of A-Z a-z 0-9 . _ -, got \"\(kid.prefix(40))\"")
            }
            guard keys[kid] == nil else {
                throw ParseError("RELAY_ENCRYPTION_KEYS: kid \"\(kid)\" is given twice")
            }
            guard let data = Data(base64Encoded: b64) else {
                throw ParseError("RELAY_ENCRYPTION_KEYS: the key of kid \"\(kid)\" is not valid base64 (RFC 4648 §4, with padding)")
            }
            guard data.count == keyBytes else {
                throw ParseError("RELAY_ENCRYPTION_KEYS: the key of kid \"\(kid)\" is \(data.count) bytes; AES-256 needs exactly \(keyBytes)")
            }
            keys[kid] = [UInt8](data)
            kids.append(kid)
        }
        return AtRestKeyRing(currentKid: kids[0], keys: keys, kids: kids)
    }

    /// Whether `kid` is 1–32 bytes of `A–Z a–z 0–9 . _ -`.
    public static func isValidKid(_ kid: String) -> Bool {
        let u = kid.utf8
        guard !u.isEmpty, u.count <= maxKidBytes else { return false }
        return u.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x2E || b == 0x5F || b == 0x2D
        }
    }

    private init(currentKid: String, keys: [String: [UInt8]], kids: [String]) {
        self.currentKid = currentKid
        self.keys = keys
        self.kids = kids
    }
}
