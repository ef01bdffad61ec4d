/// Verifies tokens against the keys of a JSON Web Key Set (RFC 7517) published by an
/// identity provider (docs/TOKENS.md), with the same shape and claim checks as ``JWTVerifier``.
///
/// Order of checks in `verify` (the token is never logged or echoed):
/// 1. length, compact form, header object (``TokenChecks``);
/// 2. `alg` is in the configured allow-list (a subset of ``JWKAlgorithm``): `none` and
///    every `HS*` are refused here, before any key is looked at, so a public key can never
///    be used as an HMAC secret; no `crit`;
/// 3. the key: by `kid` when the header has one (unknown: 401 `unknown_key`; the server
///    first parks such a request until a refetch, `keyLookup` and ``JWKSKeyStore``); without
///    `kid` only when the set holds exactly one key for
///    the `alg`; the key's `alg`, else its `kty`/`crv`, must fit the token's `alg`;
/// 4. libjwt verifies the signature with that key's PEM and must report the same `alg`;
/// 5. claims (`exp`, `nbf`, `sub`, `sid`, `iss`, `aud`).
///
/// Rotation: each call reads the store's current snapshot, so a key added to the set
/// verifies as soon as a refresh installed it, and a removed key stops verifying then.
/// Streams already admitted are not re-verified (their `exp` still ends them).
public struct JWKSVerifier: TokenVerifier, CustomStringConvertible {
    /// Where the current key set is.
    public let store: JWKSKeyStore
    /// The accepted `alg` values.
    public let algorithms: Set<JWKAlgorithm>
    private let checks: TokenChecks

    /// - Throws: ``AuthConfigurationError`` for an empty allow-list, an empty issuer or
    ///   audience, or a leeway outside 0...300 s.
    public init(store: JWKSKeyStore, algorithms: Set<JWKAlgorithm> = Set(JWKAlgorithm.allCases),
                issuer: String? = nil, audience: String? = nil, leewaySeconds: Int = 30) throws {
        guard !algorithms.isEmpty else { throw AuthConfigurationError("the JWKS algorithm list is empty") }
        checks = try TokenChecks(issuer: issuer, audience: audience, leewaySeconds: leewaySeconds)
        self.store = store
        self.algorithms = algorithms
    }

    /// Verifies `token` at `now` (unix seconds). Throws ``AuthError`` (always HTTP 401).
    public func verify(_ token: String, now: Int64) throws -> SessionClaims {
        var alg = JWKAlgorithm.rs256
        let header = try TokenChecks.open(token) { name in
            guard let a = JWKAlgorithm(rawValue: name), algorithms.contains(a) else {
                throw AuthError(.algorithmNotAllowed, "alg \(TokenChecks.printable(name)) not allowed with a JWKS")
            }
            alg = a
        }
        guard let snapshot = store.snapshot else {
            throw AuthError(.unknownKey, "no key set fetched yet")
        }
        let index: Int
        switch snapshot.keySet.select(kid: header.kid, alg: alg) {
        case .key(let i):
            index = i
        case .unknownKid:
            throw AuthError(.unknownKey, "kid not in the key set")
        case .algorithmMismatch:
            throw AuthError(.algorithmNotAllowed, "the key named by kid does not allow \(alg.rawValue)")
        case .ambiguous(let n):
            throw AuthError(.unknownKey, "token has no kid and the set has \(n) keys for \(alg.rawValue)")
        }
        guard let used = LibJWT.verifiedAlgorithm(token: token, key: snapshot.pems[index]) else {
            throw AuthError(.badSignature, "signature does not verify")
        }
        guard used == LibJWT.algorithm(alg) else {
            throw AuthError(.algorithmNotAllowed, "libjwt verified with an unexpected algorithm")
        }
        return try checks.check(header.claims, now: now)
    }

    /// Whether a token's key can be looked up in the current set (docs/TOKENS.md "Unknown kids").
    public enum KeyLookup: Sendable, Equatable {
        /// The set names the token's key, or the token fails before any key is looked at
        /// (shape, `alg`): `verify` decides now.
        case resolvable
        /// The token's header is well-formed with an allowed `alg` and names `kid`, which the
        /// current set lacks, or no set is loaded yet (`kid` may then be nil): the request may
        /// wait for a refetch (``JWKSKeyStore/unknownKid(_:nowMs:)``).
        case unknown(kid: String?)
    }

    /// Looks `token`'s key up in the current set, without verifying anything else.
    public func keyLookup(_ token: String) -> KeyLookup {
        let allowed = algorithms
        guard let header = try? TokenChecks.open(token, allowAlg: { name in
            guard let a = JWKAlgorithm(rawValue: name), allowed.contains(a) else {
                throw AuthError(.algorithmNotAllowed, "alg not allowed")
            }
        }) else { return .resolvable }
        guard let snapshot = store.snapshot else { return .unknown(kid: header.kid) }
        guard let kid = header.kid, !snapshot.keySet.keys.contains(where: { $0.kid == kid }) else { return .resolvable }
        return .unknown(kid: kid)
    }

    /// `JWKSVerifier(RS256,ES256, keys: 2, issuer: …)`; never shows key material.
    public var description: String {
        "JWKSVerifier(\(algorithms.map(\.rawValue).sorted().joined(separator: ",")), keys: \(store.snapshot?.keySet.keys.count ?? 0), issuer: \(checks.issuer ?? "-"), audience: \(checks.audience ?? "-"), leeway: \(checks.leewaySeconds) s)"
    }
}
