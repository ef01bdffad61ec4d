/// The configured admin key (`RELAY_ADMIN_KEY`) for `/admin/*` routes, compared in
/// constant time.
///
/// Both the configured and the presented key are reduced to HMAC-SHA256 digests under a
/// random per-instance key (RFC 2104), and the two 32-byte digests are compared with
/// OpenSSL `CRYPTO_memcmp`. The time taken depends only on the presented key's length
/// (hashing it), never on the configured key or on where the two differ.
/// Immutable and `Sendable`; `description` never shows the key.
public struct AdminKey: Sendable, CustomStringConvertible {
    /// Minimum key length in bytes.
    public static let minimumBytes = 16

    private let macKey: [UInt8]
    private let digest: [UInt8]

    /// - Throws: ``AuthConfigurationError`` when `key` is shorter than 16 bytes.
    public init(_ key: String) throws {
        guard key.utf8.count >= Self.minimumBytes else {
            throw AuthConfigurationError("RELAY_ADMIN_KEY must be at least \(Self.minimumBytes) bytes")
        }
        var rng = SystemRandomNumberGenerator()
        macKey = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &rng) }
        digest = OpenSSLShim.hmacSHA256(key: macKey, data: Array(key.utf8))
    }

    /// The admin key from an environment value: nil when unset or empty (admin routes off).
    /// - Throws: ``AuthConfigurationError`` when set but too short.
    public static func fromEnvironment(_ value: String?) throws -> AdminKey? {
        guard let value, !value.isEmpty else { return nil }
        return try AdminKey(value)
    }

    /// True when `presented` (a bearer token already extracted) equals the configured key.
    public func matches(_ presented: String) -> Bool {
        let d = OpenSSLShim.hmacSHA256(key: macKey, data: Array(presented.utf8))
        return OpenSSLShim.constantTimeEqual(d, digest)
    }

    /// Checks the request's `Authorization` values (RFC 6750 bearer) against the key.
    /// - Throws: ``AuthError`` (401; `.badAdminKey` for a wrong key, or the ``BearerToken``
    ///   errors). Callers should answer every failure identically.
    public func authorize(authorizationValues: [String]) throws {
        let presented = try BearerToken.extract(authorizationValues: authorizationValues)
        guard matches(presented) else { throw AuthError(.badAdminKey, "admin key mismatch") }
    }

    public var description: String { "AdminKey(<redacted>)" }
}
