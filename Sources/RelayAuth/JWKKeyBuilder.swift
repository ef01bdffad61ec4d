import COpenSSL
import Foundation

/// Turns JWK parameters into keys libjwt can use, through OpenSSL 3.
///
/// Why PEM: libjwt 1.10 verifies and signs RS* and ES* only from a PEM key
/// (`PEM_read_bio_PUBKEY` / `PEM_read_bio_PrivateKey`), and it already handles the
/// ECDSA `R || S` ⇄ DER conversion and the digest choice. So the key is built once per
/// fetched set with `EVP_PKEY_fromdata` (`OSSL_PARAM_BLD`, the OpenSSL 3 way; no deprecated
/// `RSA_*`/`EC_KEY_*`), checked (`EVP_PKEY_public_check`: EC point on the curve, sane RSA
/// values), written once with `PEM_write_bio_PUBKEY`, and every verification goes through
/// the same libjwt path the relay's PEM setup uses. Verifying with the `EVP_PKEY` directly
/// would need a second signature code path (and its own `R || S` handling) for no gain.
///
/// Stateless; safe from any thread (OpenSSL 3 needs no global locks).
public enum JWKKeyBuilder {
    /// The PEM `PUBLIC KEY` (SubjectPublicKeyInfo) of `key`.
    /// - Throws: ``JSONWebKey/Rejected`` when OpenSSL refuses the parameters (an EC
    ///   point not on the curve, an even RSA modulus, …).
    public static func publicPEM(_ key: JSONWebKey) throws -> String {
        switch key.material {
        case .rsa(let n, let e):
            var bits: Int32 = 0
            let pem = withParams([n, e]) { srossl_rsa_pem($0, 0, &bits) }
            guard let pem else { throw JSONWebKey.Rejected(kid: key.kid, reason: "OpenSSL refused the RSA parameters") }
            return pem
        case .ec(let curve, let x, let y):
            let pem = withParams([x, y]) { srossl_ec_pem(curve.openSSLGroup, $0, 0) }
            guard let pem else { throw JSONWebKey.Rejected(kid: key.kid, reason: "the EC point is not on \(curve.rawValue)") }
            return pem
        }
    }

    /// The PEM `PRIVATE KEY` (PKCS #8) of a private JWK, for signing.
    /// - Throws: ``JSONWebKey/Rejected`` for a public key or parameters that do not form
    ///   a valid key pair (`EVP_PKEY_pairwise_check`).
    public static func privatePEM(_ key: JSONWebKey) throws -> String {
        guard key.isPrivate else { throw JSONWebKey.Rejected(kid: key.kid, reason: "not a private key (no d)") }
        let pem: String?
        switch key.material {
        case .rsa(let n, let e):
            var bits: Int32 = 0
            pem = withParams([n, e] + key.privateParameters) { srossl_rsa_pem($0, 1, &bits) }
        case .ec(let curve, let x, let y):
            pem = withParams([x, y] + key.privateParameters) { srossl_ec_pem(curve.openSSLGroup, $0, 1) }
        }
        guard let pem else { throw JSONWebKey.Rejected(kid: key.kid, reason: "the private parameters do not form a valid key pair") }
        return pem
    }

    /// What ``generate(_:kid:)`` makes.
    public enum Kind: String, Sendable, CaseIterable {
        /// RSA 2048 bits, e = 65537, `alg` RS256.
        case rsa
        /// EC P-256, `alg` ES256.
        case ec
        /// EC P-384, `alg` ES384.
        case ec384

        var code: Int32 {
            switch self {
            case .rsa: return 1
            case .ec: return 2
            case .ec384: return 3
            }
        }
    }

    /// Generates a private JWK (tests, demos, `mint-token --new-jwk`).
    /// - Parameter kid: the key id; a random one when nil.
    /// - Throws: ``AuthConfigurationError`` when OpenSSL cannot generate the key.
    public static func generate(_ kind: Kind, kid: String? = nil) throws -> JSONWebKey {
        var p = srossl_params()
        guard srossl_generate(kind.code, &p) == 1 else {
            freeParams(&p)
            throw AuthConfigurationError("OpenSSL could not generate a \(kind.rawValue) key")
        }
        let values = readParams(&p)
        freeParams(&p)
        let names: [String]
        var json: [String: Any] = ["kid": kid ?? UUID().uuidString.lowercased(), "use": "sig"]
        switch kind {
        case .rsa:
            names = ["n", "e", "d", "p", "q", "dp", "dq", "qi"]
            json["kty"] = "RSA"
            json["alg"] = "RS256"
        case .ec, .ec384:
            names = ["x", "y", "d"]
            json["kty"] = "EC"
            json["crv"] = kind == .ec ? "P-256" : "P-384"
            json["alg"] = kind == .ec ? "ES256" : "ES384"
        }
        for (name, v) in zip(names, values) { json[name] = Base64URL.encode(v) }
        do {
            return try JSONWebKey(json: json, allowPrivate: true)
        } catch {
            throw AuthConfigurationError("generated key is unusable: \(error)")
        }
    }

    // MARK: srossl_params plumbing

    /// Calls `body` with an `srossl_params` pointing into one contiguous copy of `arrays`
    /// (at most 8; empty arrays become length 0) and returns its PEM string (freed here).
    private static func withParams(_ arrays: [[UInt8]], _ body: (UnsafePointer<srossl_params>) -> UnsafeMutablePointer<CChar>?) -> String? {
        precondition(arrays.count <= Int(SROSSL_MAX_PARAMS))
        let flat = arrays.flatMap { $0 }
        return flat.withUnsafeBufferPointer { buf -> String? in
            var p = srossl_params()
            var offset = 0
            withUnsafeMutableBytes(of: &p.data) { dataRaw in
                withUnsafeMutableBytes(of: &p.len) { lenRaw in
                    let data = dataRaw.bindMemory(to: UnsafePointer<UInt8>?.self)
                    let len = lenRaw.bindMemory(to: Int.self)
                    for (i, a) in arrays.enumerated() {
                        data[i] = a.isEmpty ? nil : buf.baseAddress! + offset
                        len[i] = a.count
                        offset += a.count
                    }
                }
            }
            guard let out = withUnsafePointer(to: &p, body) else { return nil }
            defer { srossl_free(out) }
            return String(cString: out)
        }
    }

    private static func readParams(_ p: inout srossl_params) -> [[UInt8]] {
        var out: [[UInt8]] = []
        withUnsafeBytes(of: &p.data) { dataRaw in
            withUnsafeBytes(of: &p.len) { lenRaw in
                let data = dataRaw.bindMemory(to: UnsafePointer<UInt8>?.self)
                let len = lenRaw.bindMemory(to: Int.self)
                for i in 0..<Int(SROSSL_MAX_PARAMS) {
                    guard let d = data[i], len[i] > 0 else { continue }
                    out.append(Array(UnsafeBufferPointer(start: d, count: len[i])))
                }
            }
        }
        return out
    }

    private static func freeParams(_ p: inout srossl_params) {
        withUnsafeBytes(of: &p.data) { dataRaw in
            for d in dataRaw.bindMemory(to: UnsafePointer<UInt8>?.self) where d != nil {
                srossl_free(UnsafeMutableRawPointer(mutating: d))
            }
        }
    }
}
