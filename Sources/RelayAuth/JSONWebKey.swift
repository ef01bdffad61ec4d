import Foundation

/// One JSON Web Key (RFC 7517 §4) as published in a key set, parsed and checked but not
/// yet turned into an OpenSSL key (``JWKKeyBuilder`` does that). Pure: no C.
///
/// Accepted: `kty` `RSA` (`n`, `e`, RFC 7518 §6.3.1) with a modulus of at least 2048 bits
/// (RFC 7518 §3.3), or `kty` `EC` (`crv` `P-256`/`P-384`, `x`, `y` of exactly the field size,
/// RFC 7518 §6.2.1); `use`, when present, must be `sig`; `key_ops`, when present, must
/// contain `verify` (or `sign` for a private key); `alg`, when present, must be one of
/// ``JWKAlgorithm`` and fit the key type and curve. Private parameters (`d`, and `p`, `q`,
/// `dp`, `dq`, `qi` for RSA) are kept only when `allowPrivate` is set (`mint-token --jwk`);
/// a verifying key set never needs them.
public struct JSONWebKey: Sendable, Equatable {
    /// `kty` (RFC 7518 §6.1).
    public enum KeyType: String, Sendable, Equatable { case rsa = "RSA", ec = "EC" }
    /// `crv` (RFC 7518 §6.2.1.1) with its field size in bytes.
    public enum Curve: String, Sendable, Equatable {
        case p256 = "P-256", p384 = "P-384"
        /// Bytes of `x`, `y` and `d`.
        public var fieldBytes: Int { self == .p256 ? 32 : 48 }
        /// OpenSSL's group name.
        var openSSLGroup: String { rawValue }
    }

    /// The key material, big-endian unsigned integers (RFC 7518 §2 "Base64urlUInt").
    public enum Material: Sendable, Equatable {
        /// RSA modulus `n` (leading zero bytes removed) and public exponent `e`.
        case rsa(n: [UInt8], e: [UInt8])
        /// EC point (`x`, `y`) on `curve`.
        case ec(curve: Curve, x: [UInt8], y: [UInt8])
    }

    /// `kid`, the key id a token's header names (RFC 7517 §4.5); `nil` when absent.
    public let kid: String?
    /// The public material.
    public let material: Material
    /// `alg` (RFC 7517 §4.4) when the key pins one.
    public let alg: JWKAlgorithm?
    /// Private parameters in RFC 7518 §6.3.2 / §6.2.2 order: RSA `d p q dp dq qi`
    /// (CRT ones may be empty), EC `d`. Empty for a public key.
    public let privateParameters: [[UInt8]]

    /// `RSA` or `EC`.
    public var keyType: KeyType {
        if case .rsa = material { return .rsa }
        return .ec
    }

    /// RSA modulus size in bits (0 for EC keys).
    public var modulusBits: Int {
        guard case .rsa(let n, _) = material, let first = n.first else { return 0 }
        return (n.count - 1) * 8 + (8 - first.leadingZeroBitCount)
    }

    /// The algorithms this key may verify: its `alg` when it has one, else every
    /// algorithm of its type (RSA: RS256/384/512) or curve (P-256: ES256, P-384: ES384).
    public var algorithms: [JWKAlgorithm] {
        if let alg { return [alg] }
        return JWKAlgorithm.allCases.filter { $0.keyType == keyType && ($0.curve == nil || curveOf == $0.curve) }
    }

    private var curveOf: Curve? {
        if case .ec(let c, _, _) = material { return c }
        return nil
    }

    /// Why a JWK is not usable.
    public struct Rejected: Error, Sendable, Equatable, CustomStringConvertible {
        /// The key's `kid` when it has a string one.
        public var kid: String?
        /// What is wrong (no key material in it).
        public var reason: String
        public var description: String { "key \(kid.map { "\"\($0)\"" } ?? "(no kid)"): \(reason)" }
    }

    /// Parses one JWK object.
    /// - Parameter allowPrivate: keep `d` (and RSA's CRT parameters); required for signing.
    /// - Throws: ``Rejected`` naming the first problem.
    public init(json: [String: Any], allowPrivate: Bool = false) throws {
        let kid = json["kid"] as? String
        func reject(_ r: String) -> Rejected { Rejected(kid: kid, reason: r) }
        func uint(_ name: String, size: Int? = nil) throws -> [UInt8] {
            guard let s = json[name] as? String, let raw = Base64URL.decode(Array(s.utf8)), !raw.isEmpty else {
                throw reject("\(name) missing or not base64url")
            }
            if let size {
                guard raw.count == size else { throw reject("\(name) must be \(size) bytes, got \(raw.count)") }
                return raw
            }
            let trimmed = Array(raw.drop { $0 == 0 })
            guard !trimmed.isEmpty else { throw reject("\(name) is zero") }
            return trimmed
        }
        if json["kid"] != nil, kid == nil { throw reject("kid is not a string") }
        if let use = json["use"] {
            guard use as? String == "sig" else { throw reject("use is not \"sig\"") }
        }
        let hasPrivate = json["d"] != nil
        if hasPrivate, !allowPrivate { throw reject("a private key (d) in a public key set") }
        if let ops = json["key_ops"] {
            guard let list = ops as? [String], list.contains("verify") || (allowPrivate && list.contains("sign")) else {
                throw reject("key_ops does not allow verify")
            }
        }
        var alg: JWKAlgorithm?
        if let a = json["alg"] {
            guard let s = a as? String, let parsed = JWKAlgorithm(rawValue: s) else {
                throw reject("alg is not one of \(JWKAlgorithm.allCases.map(\.rawValue).joined(separator: ","))")
            }
            alg = parsed
        }
        guard let kty = json["kty"] as? String, let type = KeyType(rawValue: kty) else {
            throw reject("kty must be RSA or EC")
        }
        var priv: [[UInt8]] = []
        // The curve and modulus size come from locals, not from `material` read back in
        // this initializer: reading it here crashed the Swift 6.3 optimizer (release
        // builds: "Found ownership error" in SIL verification).
        var keyCurve: Curve?
        var rsaBits = 0
        switch type {
        case .rsa:
            let n = try uint("n"), e = try uint("e")
            material = .rsa(n: n, e: e)
            if let first = n.first { rsaBits = (n.count - 1) * 8 + (8 - first.leadingZeroBitCount) }
            guard e.count <= 8 else { throw reject("e longer than 64 bits") }
            if hasPrivate {
                priv = [try uint("d")]
                let crt = ["p", "q", "dp", "dq", "qi"]
                if crt.contains(where: { json[$0] != nil }) {
                    for name in crt { priv.append(try uint(name)) }
                } else {
                    priv += Array(repeating: [], count: 5)
                }
            }
        case .ec:
            guard let c = json["crv"] as? String, let curve = Curve(rawValue: c) else {
                throw reject("crv must be P-256 or P-384")
            }
            material = .ec(curve: curve, x: try uint("x", size: curve.fieldBytes), y: try uint("y", size: curve.fieldBytes))
            keyCurve = curve
            if hasPrivate { priv = [try uint("d", size: curve.fieldBytes)] }
        }
        self.kid = kid
        self.alg = alg
        privateParameters = priv
        if let alg {
            guard alg.keyType == type else { throw reject("alg \(alg.rawValue) does not fit kty \(type.rawValue)") }
            if let need = alg.curve, need != keyCurve {
                throw reject("alg \(alg.rawValue) needs crv \(need.rawValue)")
            }
        }
        if type == .rsa, rsaBits < JWTAlgorithm.minimumRSABits {
            throw reject("RSA modulus has \(rsaBits) bits; at least \(JWTAlgorithm.minimumRSABits) required (RFC 7518 §3.3)")
        }
    }

    /// Whether this key holds private parameters (so it can sign).
    public var isPrivate: Bool { !privateParameters.isEmpty }

    /// The public JWK as a JSON object (`kty`, `kid`, `alg`, `use: sig`, and `n`/`e` or
    /// `crv`/`x`/`y`), for publishing a generated key.
    public var publicJSON: [String: Any] {
        var o: [String: Any] = ["kty": keyType.rawValue, "use": "sig"]
        if let kid { o["kid"] = kid }
        if let alg { o["alg"] = alg.rawValue }
        switch material {
        case .rsa(let n, let e):
            o["n"] = Base64URL.encode(n)
            o["e"] = Base64URL.encode(e)
        case .ec(let c, let x, let y):
            o["crv"] = c.rawValue
            o["x"] = Base64URL.encode(x)
            o["y"] = Base64URL.encode(y)
        }
        return o
    }

    /// The private JWK as a JSON object: ``publicJSON`` plus `d` (and `p q dp dq qi`).
    public var privateJSON: [String: Any] {
        var o = publicJSON
        let names = keyType == .rsa ? ["d", "p", "q", "dp", "dq", "qi"] : ["d"]
        for (name, value) in zip(names, privateParameters) where !value.isEmpty { o[name] = Base64URL.encode(value) }
        return o
    }
}
