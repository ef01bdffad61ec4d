import Foundation

/// Signs webhook messages as the Standard Webhooks specification 1.0.0 says
/// ("Signature scheme", symmetric `v1`): the signed content is
/// `<webhook-id>.<webhook-timestamp>.<body>`, the signature HMAC-SHA256 (RFC 2104) of it
/// under the secret's key, sent as `webhook-signature: v1,<base64 of the 32 bytes>`
/// (standard base64 with padding, RFC 4648 §4).
///
/// The secret is written as the specification writes it, `whsec_<base64>`; the HMAC key
/// is the base64-decoded part (24 to 64 bytes, the specification's bounds).
public struct StandardWebhookSigner: Sendable {
    /// The HMAC key: the decoded bytes of the secret.
    private let key: [UInt8]

    /// The specification's bounds on the decoded key, bytes.
    public static let keyBytes = 24...64

    /// Parses `secret`, `whsec_<base64>`.
    /// - Throws: `StandardWebhookSecretError` when the prefix is missing, the rest is not
    ///   base64, or the decoded key is shorter than 24 or longer than 64 bytes.
    public init(secret: String) throws {
        guard secret.hasPrefix("whsec_") else { throw StandardWebhookSecretError("the secret must start with whsec_") }
        guard let decoded = Data(base64Encoded: String(secret.dropFirst(6))) else {
            throw StandardWebhookSecretError("the part after whsec_ must be base64 (RFC 4648 §4)")
        }
        guard Self.keyBytes.contains(decoded.count) else {
            throw StandardWebhookSecretError("the decoded secret must be 24 to 64 bytes, got \(decoded.count)")
        }
        key = Array(decoded)
    }

    /// The `webhook-signature` header value of one attempt: `v1,<base64>`.
    /// - Parameters:
    ///   - id: the `webhook-id` (the same on every attempt of a message).
    ///   - timestamp: the `webhook-timestamp`, Unix seconds of the attempt.
    ///   - body: the exact request body bytes.
    public func signature(id: String, timestamp: Int64, body: [UInt8]) -> String {
        var content = Array("\(id).\(timestamp).".utf8)
        content.append(contentsOf: body)
        let mac = OpenSSLShim.hmacSHA256(key: key, data: content)
        return "v1," + Data(mac).base64EncodedString()
    }
}

/// A `RELAY_COMPLETION_WEBHOOK_SECRET` that is not a Standard Webhooks secret.
public struct StandardWebhookSecretError: Error, CustomStringConvertible, Equatable {
    public let description: String
    public init(_ d: String) { description = d }
}
