/// A stream's request id: 16–64 characters of `[A-Za-z0-9_-]` (docs/PROTOCOL.md §3). Used in
/// URLs and Redis keys (`relay:{id}:events`), so the alphabet is strict.
public struct RequestID: Sendable, Hashable, CustomStringConvertible {
    /// The id text.
    public let value: String

    /// Validates `text`.
    /// - Throws: `APIError` 400 `invalid_request` when it is shorter than 16, longer
    ///   than 64, or has a character outside `[A-Za-z0-9_-]`.
    public init(validating text: Substring) throws {
        guard text.utf8.count >= 16, text.utf8.count <= 64 else {
            throw APIError.invalidRequest("request id must be 16 to 64 characters")
        }
        for b in text.utf8 {
            let ok = (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x2D || b == 0x5F
            guard ok else { throw APIError.invalidRequest("request id may contain only A-Z a-z 0-9 _ -") }
        }
        value = String(text)
    }

    /// Validates `text`; see `init(validating: Substring)`.
    public init(validating text: String) throws { try self.init(validating: text[...]) }

    /// A fresh random id: 32 characters of `[A-Za-z0-9]`.
    public static func random() -> RequestID {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        var g = SystemRandomNumberGenerator()
        let s = String((0..<32).map { _ in alphabet[Int(g.next() % UInt64(alphabet.count))] })
        return RequestID(unchecked: s)
    }

    private init(unchecked: String) { value = unchecked }

    /// The Redis-side name of this client id in its owner's namespace (docs/DATA_MODEL.md §1):
    /// `<ownerHash>:<id>`, used inside the hash tag of the stream's keys
    /// (`relay:{<ownerHash>:<id>}:events`), as the registries' key and on
    /// `relay:cancel`. Another user's identical id names another stream.
    /// - Parameter ownerHash: `OwnerHash.of(sub)` (hex, no `:`, `{` or `}`).
    public func scoped(by ownerHash: String) -> RequestID {
        RequestID(unchecked: ownerHash + ":" + value)
    }

    /// The client's id inside a scoped one (the part after the owner hash); itself when
    /// not scoped.
    public var clientValue: String {
        guard let colon = value.firstIndex(of: ":") else { return value }
        return String(value[value.index(after: colon)...])
    }

    public var description: String { value }
}

/// The resume position a client sends in `Last-Event-ID` (WHATWG HTML §9.2) or
/// `?lastEventId=`: the `seq` of the last event it received, `0` for none.
public enum LastEventID {
    /// Parses a decimal seq of at most 19 digits (fits `UInt64`), ASCII digits only.
    /// Surrounding spaces are tolerated; an empty value means `0`.
    /// - Throws: `APIError` 400 `invalid_last_event_id` for anything else (signs,
    ///   letters, 40-digit numbers).
    public static func parse(_ text: String) throws -> UInt64 {
        let t = text.trimmingSpaces()
        if t.isEmpty { return 0 }
        guard t.utf8.count <= 19, t.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let v = UInt64(t) else {
            throw APIError.invalidLastEventID("Last-Event-ID must be a non-negative integer (the seq of the last event received)")
        }
        return v
    }
}

extension String {
    /// The string without leading and trailing ASCII spaces and tabs.
    func trimmingSpaces() -> String {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" { s.removeFirst() }
        while let l = s.last, l == " " || l == "\t" { s.removeLast() }
        return String(s)
    }
}
