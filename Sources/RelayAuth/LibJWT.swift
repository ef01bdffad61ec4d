import CJWT

/// Thin wrappers over libjwt 1.10. Every `jwt_t` lives only inside one call, so these are
/// safe to use from any thread concurrently (OpenSSL 3 and jansson need no global locks).
///
/// libjwt 1.10 pitfalls these wrappers exist for (see the tests):
/// * `jwt_decode` trusts the header's `alg`; with a NULL key it skips verification and
///   reports `alg: none`; an HS256 token is verified by HMAC even when the key is an RSA
///   public key PEM (alg confusion). Callers must pin the algorithm themselves.
/// * `jwt_str_alg` is case-insensitive (`"hs256"` → HS256), unlike RFC 7515.
/// * `jwt_decode` accepts a non-object payload (`[1]`) and more than three segments.
/// * `jwt_get_grant_int` returns 0 with errno 0 for a string or fractional value.
/// * `alg: none` with a key given is refused by 1.10.2 (EINVAL), but only by libjwt's
///   own logic; the verifier refuses it before libjwt anyway.
/// * HMAC comparison used `strcmp` before Debian's 1.10.2-1+deb12u1 (CVE-2024-25189).
enum LibJWT {
    /// Verifies `token`'s signature with `key` (secret bytes or PEM text) and returns the
    /// algorithm libjwt used, or nil when libjwt rejects the token.
    static func verifiedAlgorithm(token: String, key: [UInt8]) -> jwt_alg_t? {
        precondition(!key.isEmpty, "libjwt skips verification without a key")
        var handle: OpaquePointer?
        let rc = key.withUnsafeBufferPointer { k in
            jwt_decode(&handle, token, k.baseAddress, Int32(k.count))
        }
        defer { if let handle { jwt_free(handle) } }
        guard rc == 0, let handle else { return nil }
        return jwt_get_alg(handle)
    }

    /// libjwt's code for a JWKS algorithm.
    static func algorithm(_ a: JWKAlgorithm) -> jwt_alg_t {
        switch a {
        case .rs256: return JWT_ALG_RS256
        case .rs384: return JWT_ALG_RS384
        case .rs512: return JWT_ALG_RS512
        case .es256: return JWT_ALG_ES256
        case .es384: return JWT_ALG_ES384
        }
    }

    /// Builds and signs a token from a claims JSON object text, with a `kid` header
    /// (RFC 7515 §4.1.4) when given.
    /// Throws `AuthConfigurationError` when libjwt refuses (bad key, bad JSON).
    static func encode(algorithm: jwt_alg_t, key: [UInt8], claimsJSON: String, kid: String? = nil) throws -> String {
        var handle: OpaquePointer?
        guard jwt_new(&handle) == 0, let handle else { throw AuthConfigurationError("libjwt: jwt_new failed") }
        defer { jwt_free(handle) }
        guard jwt_add_grants_json(handle, claimsJSON) == 0 else {
            throw AuthConfigurationError("libjwt: claims are not a JSON object")
        }
        let rc = key.withUnsafeBufferPointer { k in
            jwt_set_alg(handle, algorithm, k.baseAddress, Int32(k.count))
        }
        guard rc == 0 else { throw AuthConfigurationError("libjwt: jwt_set_alg failed (\(rc))") }
        if let kid, jwt_add_header(handle, "kid", kid) != 0 {
            throw AuthConfigurationError("libjwt: cannot add the kid header")
        }
        guard let out = jwt_encode_str(handle) else {
            throw AuthConfigurationError("libjwt: signing failed (bad key?)")
        }
        defer { cjwt_free_string(out) }
        return String(cString: out)
    }
}

/// OpenSSL helpers from the CJWT shim.
enum OpenSSLShim {
    /// HMAC-SHA256 (RFC 2104, FIPS 180-4) of `data` under `key`: 32 bytes.
    static func hmacSHA256(key: [UInt8], data: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        let ok = key.withUnsafeBufferPointer { k in
            data.withUnsafeBufferPointer { d in
                out.withUnsafeMutableBufferPointer { o in
                    cjwt_hmac_sha256(k.baseAddress, Int32(k.count), d.baseAddress, d.count, o.baseAddress)
                }
            }
        }
        precondition(ok == 1, "OpenSSL HMAC-SHA256 failed")
        return out
    }

    /// SHA-256 (FIPS 180-4) of `data`: 32 bytes.
    static func sha256(_ data: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        let ok = data.withUnsafeBufferPointer { d in out.withUnsafeMutableBufferPointer { o in cjwt_sha256(d.baseAddress, d.count, o.baseAddress) } }
        precondition(ok == 1, "OpenSSL SHA-256 failed")
        return out
    }

    /// Constant-time equality of two equal-length byte arrays (CRYPTO_memcmp).
    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        return a.withUnsafeBytes { pa in
            b.withUnsafeBytes { pb in cjwt_memcmp_const(pa.baseAddress, pb.baseAddress, a.count) == 0 }
        }
    }

    enum PublicKeyKind: Equatable { case unparseable, rsa(bits: Int), ecP256, ecOther, other }

    /// Parses a PEM `PUBLIC KEY` as libjwt does and reports what it is.
    static func publicKeyKind(pem: String) -> PublicKeyKind {
        var bits: Int32 = 0
        let bytes = Array(pem.utf8)
        let kind = bytes.withUnsafeBufferPointer { b in
            b.withMemoryRebound(to: CChar.self) { c in
                cjwt_public_key_kind(c.baseAddress, Int32(c.count), &bits)
            }
        }
        switch kind {
        case CJWT_KEY_RSA: return .rsa(bits: Int(bits))
        case CJWT_KEY_EC_P256: return .ecP256
        case CJWT_KEY_EC_OTHER: return .ecOther
        case CJWT_KEY_OTHER: return .other
        default: return .unparseable
        }
    }
}
