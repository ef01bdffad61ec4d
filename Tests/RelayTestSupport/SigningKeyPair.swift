import Foundation

/// An RS256 or ES256 key pair made by `openssl genpkey` in a temp directory, and JWTs
/// signed with it by `openssl dgst -sha256 -sign` — independently of the relay's own
/// code (RFC 7515 compact serialization; RFC 7518 §3.3 RS256, §3.4 ES256 with the
/// signature as the 64-byte R‖S, not DER). For relays started with
/// `RELAY_JWT_PUBLIC_KEY` (docs/TOKENS.md).
public final class SigningKeyPair: @unchecked Sendable {
    /// The JWS `alg` of the pair.
    public enum Algorithm: String, Sendable { case rs256 = "RS256", es256 = "ES256" }

    public let algorithm: Algorithm
    public let directory: URL
    /// PEM of the private key (PKCS #8).
    public let privateKeyPath: String
    /// PEM of the public key (SubjectPublicKeyInfo): the value of `RELAY_JWT_PUBLIC_KEY`.
    public let publicKeyPath: String

    /// Generates the pair (RSA 2048 bits, or EC P-256).
    /// - Throws: `TestFailure` when openssl fails or is not installed.
    public init(_ algorithm: Algorithm) throws {
        self.algorithm = algorithm
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("jwt-keys-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        privateKeyPath = directory.appendingPathComponent("private.pem").path
        publicKeyPath = directory.appendingPathComponent("public.pem").path
        let params = algorithm == .rs256 ? ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"]
                                         : ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"]
        try Self.openssl(["genpkey"] + params + ["-out", privateKeyPath])
        try Self.openssl(["pkey", "-in", privateKeyPath, "-pubout", "-out", publicKeyPath])
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    /// A compact JWS over `claims` (a JSON object), header `{"alg":…,"typ":"JWT"}`.
    /// - Throws: `TestFailure` when openssl fails.
    public func token(claims: [String: Any]) throws -> String {
        let header = #"{"alg":"\#(algorithm.rawValue)","typ":"JWT"}"#
        let payload = try JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys])
        let input = Self.base64URL(Data(header.utf8)) + "." + Self.base64URL(payload)
        var signature = try Self.openssl(["dgst", "-sha256", "-sign", privateKeyPath], input: Data(input.utf8))
        if algorithm == .es256 { signature = try Self.rawECDSA(der: [UInt8](signature)) }
        return input + "." + Self.base64URL(signature)
    }

    /// A token for `sub`/`sid` valid `ttl` seconds from now, with `iss`/`aud` when given.
    public func token(sub: String = "alice", sid: String = "s-" + UUID().uuidString, iss: String? = nil,
                      aud: String? = nil, ttl: Int = 3600) throws -> String {
        let now = Int(Date().timeIntervalSince1970)
        var claims: [String: Any] = ["sub": sub, "sid": sid, "iat": now, "exp": now + ttl]
        if let iss { claims["iss"] = iss }
        if let aud { claims["aud"] = aud }
        return try token(claims: claims)
    }

    /// base64url without padding (RFC 7515 §2).
    public static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// ECDSA-Sig-Value `SEQUENCE { r INTEGER, s INTEGER }` (DER) → R‖S, 32 bytes each.
    static func rawECDSA(der: [UInt8]) throws -> Data {
        var i = 2                       // SEQUENCE tag and (short) length
        if der.count > 1, der[1] & 0x80 != 0 { i += Int(der[1] & 0x7f) }
        var out: [UInt8] = []
        for _ in 0..<2 {
            guard i + 2 <= der.count, der[i] == 0x02 else { throw TestFailure("not an ECDSA DER signature") }
            let len = Int(der[i + 1])
            var int = Array(der[(i + 2)..<(i + 2 + len)])
            while int.count > 32, int.first == 0 { int.removeFirst() }
            out += [UInt8](repeating: 0, count: 32 - int.count) + int
            i += 2 + len
        }
        return Data(out)
    }

    @discardableResult
    static func openssl(_ args: [String], input: Data? = nil) throws -> Data {
        let r = try ToolProcess.run(TestPaths.which("openssl"), args, input: input, timeout: 30)
        guard r.status == 0 else { throw TestFailure("openssl \(args.joined(separator: " ")) failed: \(r.stderr)") }
        return r.stdoutData
    }
}
