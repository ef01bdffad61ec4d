import RelayCore

/// A read ticket (docs/PROTOCOL.md §2.5): a short-lived credential that admits only `GET` (and
/// `HEAD`) of one stream, for clients that cannot set `Authorization` (a browser's native
/// `EventSource`), carried in the query as `?ticket=`.
///
/// Text form: `rt1.<kid>.<ownerHash>.<requestId>.<sid>.<exp>.<mac>` where `kid` is the signing
/// key's id (8 hex digits, `ReadTicketKey.id`), `ownerHash` the `OwnerHash` of the token's
/// `sub` (24 hex digits; the `sub` itself never appears in a URL), `requestId` the client's
/// request id (16–64 of `[A-Za-z0-9_-]`), `sid` the session id in unpadded base64url (any
/// string a token may carry), `exp` unix seconds in decimal, and `mac` the unpadded base64url
/// HMAC-SHA256 (RFC 2104) under the key of everything before the last `.`. Every part has one
/// accepted spelling (lowercase hex, canonical base64url, decimal without leading zeros), so a
/// ticket has exactly one text. None of the parts
/// can contain `.`, so the text splits unambiguously; it is URL-safe as is (RFC 3986 §2.3).
public struct ReadTicket: Sendable, Equatable {
    /// `OwnerHash.of(sub)` of the token the ticket was issued for.
    public var ownerHash: String
    /// The client's request id (unscoped, as in the URL).
    public var requestID: String
    /// The session id: revocation is checked against it on every use.
    public var sid: String
    /// Unix seconds; refused once `now >= expiresAt`.
    public var expiresAt: Int64

    public init(ownerHash: String, requestID: String, sid: String, expiresAt: Int64) {
        self.ownerHash = ownerHash
        self.requestID = requestID
        self.sid = sid
        self.expiresAt = expiresAt
    }

    /// The ticket's text, signed with `key`.
    public func signed(with key: ReadTicketKey) -> String {
        let unsigned = "rt1.\(key.id).\(ownerHash).\(requestID).\(Base64URL.encode(Array(sid.utf8))).\(expiresAt)"
        return unsigned + "." + Base64URL.encode(OpenSSLShim.hmacSHA256(key: key.secret, data: Array(unsigned.utf8)))
    }

    /// Why a ticket is refused (each is `401 unauthorized` on the wire, message `invalid ticket`
    /// or `ticket expired`).
    public enum Refusal: Error, Equatable, Sendable {
        /// Not the ticket grammar (also: longer than `maxLength`).
        case malformed
        /// The `kid` names no key this instance knows (it may reload the key and try again).
        case unknownKey(String)
        /// The MAC does not match.
        case badSignature
        /// `now >= exp`.
        case expired
    }

    /// The longest ticket text accepted, bytes (a sid of up to 1 KiB fits).
    public static let maxLength = 2048

    /// The key id named by `text`, or nil when `text` is not the ticket grammar's prefix.
    public static func keyID(of text: String) -> String? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 7, parts[0] == "rt1", parts[1].utf8.count == 8 else { return nil }
        return String(parts[1])
    }

    /// Verifies `text` with whichever of `keys` its `kid` names, at `now` (unix seconds).
    /// - Throws: `Refusal`.
    public static func verify(_ text: String, keys: [ReadTicketKey], now: Int64) throws(Refusal) -> ReadTicket {
        guard text.utf8.count <= maxLength else { throw .malformed }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 7, parts[0] == "rt1" else { throw .malformed }
        let kid = String(parts[1]), owner = String(parts[2]), rid = String(parts[3])
        guard kid.utf8.count == 8, kid.utf8.allSatisfy(isLowerHex),
              owner.utf8.count == 24, owner.utf8.allSatisfy(isLowerHex),
              (16...64).contains(rid.utf8.count), rid.utf8.allSatisfy(isIDByte),
              let sidBytes = Base64URL.decode(parts[4].utf8), !sidBytes.isEmpty,
              let sid = String(validating: sidBytes, as: UTF8.self),
              (1...18).contains(parts[5].utf8.count), parts[5].utf8.first != 0x30,   // canonical: no leading zero
              parts[5].utf8.allSatisfy({ (0x30...0x39).contains($0) }),
              let exp = Int64(parts[5]),
              let mac = Base64URL.decode(parts[6].utf8), mac.count == 32 else { throw .malformed }
        guard let key = keys.first(where: { $0.id == kid }) else { throw .unknownKey(kid) }
        let unsigned = text.utf8.prefix(text.utf8.count - parts[6].utf8.count - 1)
        guard OpenSSLShim.constantTimeEqual(OpenSSLShim.hmacSHA256(key: key.secret, data: Array(unsigned)), mac) else {
            throw .badSignature
        }
        guard now < exp else { throw .expired }
        return ReadTicket(ownerHash: owner, requestID: rid, sid: sid, expiresAt: exp)
    }

    private static func isLowerHex(_ b: UInt8) -> Bool {
        (0x30...0x39).contains(b) || (0x61...0x66).contains(b)
    }

    private static func isIDByte(_ b: UInt8) -> Bool {
        (0x30...0x39).contains(b) || (0x41...0x5A).contains(b) || (0x61...0x7A).contains(b) || b == 0x2D || b == 0x5F
    }
}

/// A read-ticket signing key (docs/PROTOCOL.md §2.5): 32 random bytes shared by every
/// instance through Redis (`relay:read-ticket-key`, docs/DATA_MODEL.md), and its id.
public struct ReadTicketKey: Sendable, Equatable {
    /// The key bytes (32).
    public let secret: [UInt8]
    /// 8 lowercase hex digits: the first 4 bytes of HMAC-SHA256(secret, "kid"). Names the key
    /// in a ticket without revealing it.
    public let id: String

    /// - Precondition: `secret` has at least 32 bytes.
    public init(secret: [UInt8]) {
        precondition(secret.count >= 32, "a read-ticket key has at least 32 bytes")
        self.secret = secret
        let d = OpenSSLShim.hmacSHA256(key: secret, data: Array("kid".utf8))
        let digits = Array("0123456789abcdef".utf8)
        id = String(decoding: d.prefix(4).flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] }, as: UTF8.self)
    }

    /// The key from its stored form (64 lowercase or uppercase hex digits), or nil.
    public init?(hex: String) {
        let u = Array(hex.utf8)
        guard u.count == 64 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(32)
        for i in stride(from: 0, to: 64, by: 2) {
            guard let b = UInt8(String(decoding: u[i..<i + 2], as: UTF8.self), radix: 16) else { return nil }
            bytes.append(b)
        }
        self.init(secret: bytes)
    }

    /// The stored form: 64 lowercase hex digits.
    public var hex: String {
        let digits = Array("0123456789abcdef".utf8)
        return String(decoding: secret.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] }, as: UTF8.self)
    }

    /// A fresh random key (the system's CSPRNG, getrandom(2)).
    public static func random() -> ReadTicketKey {
        var g = SystemRandomNumberGenerator()
        return ReadTicketKey(secret: (0..<32).map { _ in UInt8.random(in: 0...255, using: &g) })
    }
}

/// The read-ticket keys this process knows: the current one (signs) and the one before it
/// (still verifies, so a rotation does not cut tickets already handed out). Shared by every
/// worker; any thread.
public final class ReadTicketKeys: Sendable {
    private let box = LockedBox<(current: ReadTicketKey?, previous: ReadTicketKey?)>((nil, nil))

    public init() {}

    /// The key new tickets are signed with; nil until the first load from Redis.
    public var current: ReadTicketKey? { box.value.current }

    /// Every key a ticket may name (current first).
    public var all: [ReadTicketKey] {
        let v = box.value
        return [v.current, v.previous].compactMap { $0 }
    }

    /// Installs `key` as read from Redis: a different key becomes current and the current one
    /// previous; the same key changes nothing.
    public func install(_ key: ReadTicketKey) {
        box.mutate { v in
            guard v.current != key else { return }
            v.previous = v.current
            v.current = key
        }
    }
}
