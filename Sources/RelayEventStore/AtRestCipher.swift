import COpenSSL

/// Why a stored value did not open (`AtRestCipher.open`). Its `message` is for logs and for
/// the client's `stored_data_unreadable` error: it names the kid and the key, never data.
public struct AtRestOpenError: Error, Equatable, Sendable, CustomStringConvertible {
    /// What went wrong.
    public enum Kind: Equatable, Sendable {
        /// Sealed under a kid this relay does not hold (`RELAY_ENCRYPTION_KEYS`).
        case unknownKid(String)
        /// The GCM tag did not verify: another key of the same kid, other associated data
        /// (the value was moved from another key), or altered bytes.
        case authenticationFailed(kid: String)
        /// Not a sealed value of a format this relay reads (truncated, bad base64, …).
        case malformed(SealedFormat.Malformed)
        /// A sealed value, and this relay has no keys (`RELAY_ENCRYPTION_KEYS` unset).
        case noKeys
        /// Plaintext where only sealed values are stored (a stream or record sealed at
        /// rest, `AtRestMode.sealed`): refused like a value under a wrong key.
        case unexpectedPlaintext
    }
    public let kind: Kind
    /// The Redis key the value was read from.
    public let key: String

    public init(_ kind: Kind, key: String) {
        self.kind = kind
        self.key = key
    }

    public var description: String {
        switch kind {
        case .unknownKid(let kid): return "\(key): sealed with kid \"\(kid)\", which RELAY_ENCRYPTION_KEYS does not list"
        case .authenticationFailed(let kid): return "\(key): the AES-GCM tag does not verify under kid \"\(kid)\" (another key, a moved value, or altered bytes)"
        case .malformed(let m): return "\(key): stored value is not readable (\(m))"
        case .noKeys: return "\(key): the value is sealed and RELAY_ENCRYPTION_KEYS is not set"
        case .unexpectedPlaintext: return "\(key): plaintext where only values sealed at rest are stored"
        }
    }
}

/// Seals and opens values at rest with AES-256-GCM through OpenSSL's EVP interface
/// (docs/DATA_MODEL.md §15): a fresh random 96-bit nonce per seal (`RAND_bytes`, drawn a
/// pool at a time), the
/// associated data the caller names (the value's own Redis key name), the format of
/// `SealedFormat`. New seals use the ring's current key; every key of the ring opens.
///
/// Owns one EVP cipher context per key and direction (the AES key schedule is made once,
/// each seal only sets its nonce: docs/BENCHMARKS.md measures both), so an instance is
/// confined to one thread: each worker has its own (`EventLog`).
public final class AtRestCipher {
    /// The keys.
    public let ring: AtRestKeyRing
    private let sealContext: OpaquePointer
    private let openContexts: [String: OpaquePointer]
    private let currentKid: [UInt8]
    /// Reused scratch for the binary form of a seal (loop thread).
    private var scratch: [UInt8] = []
    /// Random bytes for nonces, drawn from `RAND_bytes` a pool at a time (one call costs
    /// about as much as two seals: docs/BENCHMARKS.md); each seal takes the next 12 bytes,
    /// never used again. Refilled when used up. Loop thread.
    private var noncePool = [UInt8](repeating: 0, count: AtRestCipher.noncePoolBytes)
    private var noncePoolUsed = AtRestCipher.noncePoolBytes
    /// Bytes drawn from `RAND_bytes` at once: 341 nonces.
    static let noncePoolBytes = 12 * 341

    /// Values sealed, opened, and refused (`open` threw) since creation; the worker adds
    /// them to `/metrics` (`relay_at_rest_*_total`). Loop thread.
    public private(set) var seals = 0
    public private(set) var opens = 0
    public private(set) var openFailures = 0

    /// Why a cipher could not be made (OpenSSL refused a context: out of memory).
    public struct SetupError: Error, CustomStringConvertible {
        public let description: String
    }

    /// - Throws: `SetupError` when OpenSSL cannot make a context.
    public init(ring: AtRestKeyRing) throws(SetupError) {
        self.ring = ring
        currentKid = Array(ring.currentKid.utf8)
        var opens: [String: OpaquePointer] = [:]
        for kid in ring.kids {
            guard let c = ring.keys[kid]!.withUnsafeBufferPointer({ srossl_gcm_new($0.baseAddress, 0) }) else {
                for (_, c) in opens { srossl_gcm_free(c) }
                throw SetupError(description: "OpenSSL could not make an AES-256-GCM context for kid \(kid)")
            }
            opens[kid] = c
        }
        guard let s = ring.keys[ring.currentKid]!.withUnsafeBufferPointer({ srossl_gcm_new($0.baseAddress, 1) }) else {
            for (_, c) in opens { srossl_gcm_free(c) }
            throw SetupError(description: "OpenSSL could not make an AES-256-GCM context for kid \(ring.currentKid)")
        }
        sealContext = s
        openContexts = opens
    }

    deinit {
        srossl_gcm_free(sealContext)
        for (_, c) in openContexts { srossl_gcm_free(c) }
    }

    /// Seals `plaintext` with the current key; `aad` is the associated data (the Redis
    /// key name the value is stored under). Returns the sealed text (`SealedFormat`),
    /// `SealedFormat.sealedLength(plaintextBytes:kidBytes:)` bytes of ASCII.
    /// Never reuses a nonce: if the system's random source fails the process stops
    /// (a precondition) rather than seal with a predictable nonce.
    public func seal(_ plaintext: UnsafeBufferPointer<UInt8>, aad: String) -> String {
        let n = plaintext.count
        let k = currentKid.count
        let total = SealedFormat.binaryLength(plaintextBytes: n, kidBytes: k)
        if scratch.count < total { scratch = [UInt8](repeating: 0, count: max(total, 2 * scratch.count)) }
        seals += 1
        return scratch.withUnsafeMutableBufferPointer { out -> String in
            let b = out.baseAddress!
            b[0] = SealedFormat.version
            b[1] = UInt8(k)
            currentKid.withUnsafeBufferPointer { (b + 2).update(from: $0.baseAddress!, count: k) }
            let nonce = b + 2 + k
            if noncePoolUsed + SealedFormat.nonceBytes > noncePool.count {
                let ok = noncePool.withUnsafeMutableBufferPointer { srossl_random($0.baseAddress, Int32($0.count)) }
                precondition(ok == 1, "RAND_bytes failed: refusing to seal with a predictable nonce")
                noncePoolUsed = 0
            }
            noncePool.withUnsafeMutableBufferPointer { pool in
                nonce.update(from: pool.baseAddress! + noncePoolUsed, count: SealedFormat.nonceBytes)
                // Spent: wiped, so no nonce stays in memory to be taken twice.
                (pool.baseAddress! + noncePoolUsed).update(repeating: 0, count: SealedFormat.nonceBytes)
            }
            noncePoolUsed += SealedFormat.nonceBytes
            let ct = nonce + SealedFormat.nonceBytes
            var a = aad
            let ok = a.withUTF8 { ad in
                srossl_gcm_seal(sealContext, nonce, ad.baseAddress, Int32(ad.count),
                                plaintext.baseAddress, Int32(n), ct, ct + n)
            }
            precondition(ok == 1, "EVP AES-256-GCM seal failed")
            return SealedFormat.text(ofBinary: UnsafeBufferPointer(start: b, count: total))
        }
    }

    /// `seal(_:aad:)` of a string's UTF-8.
    public func seal(_ plaintext: String, aad: String) -> String {
        var p = plaintext
        return p.withUTF8 { seal($0, aad: aad) }
    }

    /// `seal(_:aad:)` of bytes.
    public func seal(_ plaintext: [UInt8], aad: String) -> String {
        plaintext.withUnsafeBufferPointer { seal($0, aad: aad) }
    }

    /// Opens one sealed text (`~` + base64) stored under `aad`; returns the plaintext.
    /// - Throws: `AtRestOpenError` (`key` = `aad`): malformed, an unknown kid, or a tag
    ///   that does not verify. Counted in `openFailures`.
    public func open(_ sealed: UnsafeBufferPointer<UInt8>, aad: String) throws(AtRestOpenError) -> [UInt8] {
        let bin: [UInt8]
        let p: SealedFormat.Parsed
        do {
            bin = try SealedFormat.binary(ofText: sealed)
            p = try SealedFormat.parse(bin)
        } catch {
            openFailures += 1
            throw AtRestOpenError(.malformed(error), key: aad)
        }
        guard let ctx = openContexts[p.kid] else {
            openFailures += 1
            throw AtRestOpenError(.unknownKid(p.kid), key: aad)
        }
        let n = p.ciphertext.count
        var out = [UInt8](repeating: 0, count: max(n, 1))
        var a = aad
        let ok = bin.withUnsafeBufferPointer { b in
            out.withUnsafeMutableBufferPointer { o in
                a.withUTF8 { ad in
                    srossl_gcm_open(ctx, b.baseAddress! + p.nonce.lowerBound, ad.baseAddress, Int32(ad.count),
                                    b.baseAddress! + p.ciphertext.lowerBound, Int32(n),
                                    b.baseAddress! + p.tag.lowerBound, o.baseAddress)
                }
            }
        }
        guard ok == 1 else {
            openFailures += 1
            throw AtRestOpenError(.authenticationFailed(kid: p.kid), key: aad)
        }
        opens += 1
        if n == 0 { out.removeAll() }
        return out
    }

    /// `open(_:aad:)` of a string's UTF-8.
    public func open(_ sealed: String, aad: String) throws(AtRestOpenError) -> [UInt8] {
        var s = sealed
        let r = s.withUTF8 { u in Result { () throws(AtRestOpenError) -> [UInt8] in try open(u, aad: aad) } }
        return try r.get()
    }
}

/// The one way every reader opens a stored value (docs/DATA_MODEL.md §15): events, text
/// records, stored requests, retained answers and the completion webhook's final event, by
/// the stream's `AtRestMode`.
public enum AtRestValue {
    /// The plaintext of a stored value of a stream in `mode`.
    /// - Throws: `AtRestOpenError`: `.unexpectedPlaintext` for plaintext in a sealed
    ///   stream, `.noKeys` for a sealed value without a cipher, or what `AtRestCipher.open`
    ///   throws.
    public static func open(_ stored: String, key: String, mode: AtRestMode, cipher: AtRestCipher?) throws(AtRestOpenError) -> String {
        switch mode.read(looksSealed: stored.utf8.first == SealedFormat.marker) {
        case .asIs: return stored
        case .refuse: throw AtRestOpenError(.unexpectedPlaintext, key: key)
        case .open:
            guard let cipher else { throw AtRestOpenError(.noKeys, key: key) }
            let bytes = try cipher.open(stored, aad: key)
            guard let s = String(validating: bytes, as: UTF8.self) else {
                throw AtRestOpenError(.malformed(.badBase64), key: key)
            }
            return s
        }
    }

    /// `open(_:key:mode:cipher:)` of bytes (a retained answer's record).
    /// - Throws: `AtRestOpenError`.
    public static func open(bytes stored: [UInt8], key: String, mode: AtRestMode, cipher: AtRestCipher?) throws(AtRestOpenError) -> [UInt8] {
        switch mode.read(looksSealed: SealedFormat.looksSealed(stored)) {
        case .asIs: return stored
        case .refuse: throw AtRestOpenError(.unexpectedPlaintext, key: key)
        case .open:
            guard let cipher else { throw AtRestOpenError(.noKeys, key: key) }
            return try stored.withUnsafeBufferPointer { b throws(AtRestOpenError) in try cipher.open(b, aad: key) }
        }
    }

    /// The plaintext of a whole text key of a stream in `mode`: in a sealed stream its
    /// records (`SealedFormat.records`) opened in order, each under `aad(start)` at the
    /// plaintext offset it continues; in a plain stream the bytes as they are.
    /// - Throws: `AtRestOpenError` (`key`: the text key's name).
    public static func openText(_ stored: [UInt8], key: String, mode: AtRestMode, cipher: AtRestCipher?,
                                aad: (Int) -> String) throws(AtRestOpenError) -> [UInt8] {
        guard mode == .sealed, !stored.isEmpty else { return stored }
        guard SealedFormat.looksSealed(stored) else { throw AtRestOpenError(.unexpectedPlaintext, key: key) }
        guard let cipher else { throw AtRestOpenError(.noKeys, key: key) }
        let records: [Range<Int>]
        do { records = try SealedFormat.records(stored) } catch { throw AtRestOpenError(.malformed(error), key: key) }
        var plain: [UInt8] = []
        try stored.withUnsafeBufferPointer { b throws(AtRestOpenError) in
            for r in records {
                plain.append(contentsOf: try cipher.open(UnsafeBufferPointer(rebasing: b[r]), aad: aad(plain.count)))
            }
        }
        return plain
    }
}
