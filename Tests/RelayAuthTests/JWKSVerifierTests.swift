import Foundation
import Synchronization
import XCTest
@testable import RelayAuth

/// ``JWKSVerifier`` against an in-memory key store: both keys of a set verify, the attacks
/// on a key set (docs/TOKENS.md) are 401, tokens naming unknown `kid`s wait for one shared
/// refetch.
final class JWKSVerifierTests: XCTestCase {
    static let rsa = JWKTests.rsa
    static let ec = JWKTests.ec
    static let rsa2 = try! JWKKeyBuilder.generate(.rsa, kid: "r2")

    /// A virtual monotonic clock, ms.
    final class Clock: Sendable {
        let ms = Mutex<Int64>(1_000)
        func advance(_ d: Int64) { ms.withLock { $0 += d } }
    }

    private func store(_ keys: [JSONWebKey], clock: Clock = Clock(), minInterval: Int = 60_000) throws -> JWKSKeyStore {
        let s = JWKSKeyStore(minimumRefetchIntervalMs: minInterval, nowMs: { clock.ms.withLock { $0 } })
        try s.install(snapshot(keys))
        return s
    }

    private func snapshot(_ keys: [JSONWebKey]) throws -> JWKSnapshot {
        try JWKSnapshot(document: Array(JSONSerialization.data(withJSONObject: ["keys": keys.map(\.publicJSON)])))
    }

    private func mint(_ key: JSONWebKey, alg: JWKAlgorithm? = nil) throws -> String {
        try TokenMinter.jwk(key, algorithm: alg, sub: "user-1", sid: "sess-1", tier: nil, ttlSeconds: 600, now: now)
    }

    private func assertRejected(_ v: JWKSVerifier, _ token: String, _ kind: AuthError.Kind, _ what: String,
                                file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try v.verify(token, now: now), what, file: file, line: line) { e in
            XCTAssertEqual((e as? AuthError)?.kind, kind, "\(what): \(e)", file: file, line: line)
            XCTAssertEqual((e as? AuthError)?.apiError.status, 401, what, file: file, line: line)
        }
    }

    func testTokensOfBothKeysVerify() throws {
        let v = try JWKSVerifier(store: try store([Self.rsa, Self.ec]))
        XCTAssertEqual(try v.verify(try mint(Self.rsa), now: now).sub, "user-1")
        XCTAssertEqual(try v.verify(try mint(Self.ec), now: now).sid, "sess-1")
    }

    func testRSAKeyWithoutAlgVerifiesRS384AndRS512() throws {
        var j = Self.rsa.privateJSON
        j["alg"] = nil
        let k = try JSONWebKey(json: j, allowPrivate: true)
        let v = try JWKSVerifier(store: try store([k]))
        for alg in [JWKAlgorithm.rs256, .rs384, .rs512] {
            XCTAssertNoThrow(try v.verify(try mint(k, alg: alg), now: now), alg.rawValue)
        }
        let p384 = try JWKKeyBuilder.generate(.ec384)
        XCTAssertNoThrow(try JWKSVerifier(store: try store([p384])).verify(try mint(p384), now: now))
    }

    func testHS256WithThePublicKeyAsSecretIsRefused() throws {
        let v = try JWKSVerifier(store: try store([Self.rsa]))
        guard case .rsa(let n, _) = Self.rsa.material else { return XCTFail() }
        let pem = Array(try JWKKeyBuilder.publicPEM(Self.rsa).utf8)
        for secret in [n, pem] {
            let t = Forge.hs256(header: #"{"alg":"HS256","typ":"JWT","kid":"r1"}"#, payload: claims(), key: secret)
            assertRejected(v, t, .algorithmNotAllowed, "HS256 with public material as secret")
        }
    }

    func testAlgNoneIsRefused() throws {
        let v = try JWKSVerifier(store: try store([Self.rsa]))
        let body = Forge.b64(#"{"alg":"none","kid":"r1"}"#) + "." + Forge.b64(claims())
        assertRejected(v, body + ".", .algorithmNotAllowed, "alg none, empty signature")
        let real = Forge.parts(try mint(Self.rsa))[2]
        assertRejected(v, body + "." + real, .algorithmNotAllowed, "alg none with a signature")
    }

    func testKidOfAnECKeyWithAnRS256HeaderIsRefused() throws {
        let v = try JWKSVerifier(store: try store([Self.rsa, Self.ec]))
        let pem = try JWKKeyBuilder.privatePEM(Self.rsa)
        let forged = try LibJWT.encode(algorithm: LibJWT.algorithm(.rs256), key: Array(pem.utf8), claimsJSON: claims(), kid: "e1")
        assertRejected(v, forged, .algorithmNotAllowed, "RS256 header naming an EC key")
    }

    func testKeysEmbeddedInTheTokenAreNeverTrusted() throws {
        // RFC 7515 §4.1.3 `jwk` (and `jku`/`x5u`) header parameters name the attacker's own
        // key: the verifier only ever uses the fetched set.
        let v = try JWKSVerifier(store: try store([Self.rsa]))
        let attacker = try JWKKeyBuilder.generate(.rsa, kid: "r1")
        let jwk = String(decoding: try JSONSerialization.data(withJSONObject: attacker.publicJSON), as: UTF8.self)
        let path = TestKeys.dir.appendingPathComponent("attacker-\(UUID().uuidString).pem").path
        try JWKKeyBuilder.privatePEM(attacker).write(toFile: path, atomically: true, encoding: .utf8)
        let pair = TestKeys.Pair(privatePath: path, publicPEM: try JWKKeyBuilder.publicPEM(attacker))
        let header = #"{"alg":"RS256","kid":"r1","jwk":\#(jwk),"jku":"https://evil.example/jwks"}"#
        // Signed correctly by the attacker over that very header.
        let forged = Forge.rs256(header: header, payload: claims(), key: pair)
        XCTAssertNoThrow(try JWTVerifier(algorithm: .rs256(publicKeyPEM: pair.publicPEM)).verify(forged, now: now),
                         "control: the signature is valid under the embedded key")
        assertRejected(v, forged, .badSignature, "jwk/jku header with the attacker's key")
    }

    func testWrongKeyAndTamperingFailTheSignature() throws {
        let v = try JWKSVerifier(store: try store([Self.rsa, Self.ec]))
        // Signed by r2 but claiming to be r1.
        let pem = try JWKKeyBuilder.privatePEM(Self.rsa2)
        let t = try LibJWT.encode(algorithm: LibJWT.algorithm(.rs256), key: Array(pem.utf8), claimsJSON: claims(), kid: "r1")
        assertRejected(v, t, .badSignature, "signed by another key")
        var p = Forge.parts(try mint(Self.ec))
        p[1] = Forge.b64(claims(sub: "mallory"))
        assertRejected(v, p.joined(separator: "."), .badSignature, "payload swapped")
    }

    func testNoKidNeedsExactlyOneKeyOfTheAlgorithm() throws {
        let one = try JWKSVerifier(store: try store([Self.rsa, Self.ec]))
        let pem = Array(try JWKKeyBuilder.privatePEM(Self.rsa).utf8)
        let noKid = try LibJWT.encode(algorithm: LibJWT.algorithm(.rs256), key: pem, claimsJSON: claims())
        XCTAssertNoThrow(try one.verify(noKid, now: now))
        let two = try JWKSVerifier(store: try store([Self.rsa, Self.rsa2]))
        assertRejected(two, noKid, .unknownKey, "no kid, two RSA keys")
    }

    func testAllowListIsEnforced() throws {
        let v = try JWKSVerifier(store: try store([Self.rsa, Self.ec]), algorithms: [.es256])
        assertRejected(v, try mint(Self.rsa), .algorithmNotAllowed, "RS256 not in the list")
        XCTAssertNoThrow(try v.verify(try mint(Self.ec), now: now))
        XCTAssertThrowsError(try JWKSVerifier(store: try store([Self.rsa]), algorithms: []))
    }

    func testClaimsAreStillChecked() throws {
        let v = try JWKSVerifier(store: try store([Self.rsa]), issuer: "https://idp.example")
        assertRejected(v, try mint(Self.rsa), .issuerMismatch, "no iss")
        let expired = try TokenMinter.jwk(Self.rsa, sub: "u", sid: "s", tier: nil, ttlSeconds: 1, now: now - 100)
        let plain = try JWKSVerifier(store: try store([Self.rsa]))
        assertRejected(plain, expired, .expired, "expired")
    }

    func testNoSetYetIsUnauthorized() throws {
        let v = try JWKSVerifier(store: JWKSKeyStore(minimumRefetchIntervalMs: 1000))
        assertRejected(v, try mint(Self.rsa), .unknownKey, "before the first fetch")
    }

    func testRotationFollowsTheInstalledSnapshot() throws {
        let s = try store([Self.rsa])
        let v = try JWKSVerifier(store: s)
        let old = try mint(Self.rsa), new = try mint(Self.rsa2)
        assertRejected(v, new, .unknownKey, "new key before the refresh")
        s.install(try snapshot([Self.rsa, Self.rsa2]))
        XCTAssertNoThrow(try v.verify(new, now: now))
        XCTAssertNoThrow(try v.verify(old, now: now))
        s.install(try snapshot([Self.rsa2]))
        assertRejected(v, old, .unknownKey, "removed key after the refresh")
        XCTAssertNoThrow(try v.verify(new, now: now))
    }

    func testUnknownKidFloodWantsOneFetchAndEveryTokenWaitsForIt() throws {
        let clock = Clock()
        let s = try store([Self.rsa], clock: clock, minInterval: 1_000)
        let asked = Mutex(0)
        s.setRefetchHandler { asked.withLock { $0 += 1 } }
        let v = try JWKSVerifier(store: s)
        let strangers = try (0..<5).map { try JWKKeyBuilder.generate(.ec, kid: "stranger-\($0)") }
        let tokens = try strangers.map { try TokenMinter.jwk($0, sub: "u", sid: "s", tier: nil, ttlSeconds: 60, now: now) }
        XCTAssertEqual(v.keyLookup(try mint(Self.rsa)), .resolvable)
        XCTAssertEqual(v.keyLookup(tokens[0]), .unknown(kid: "stranger-0"))
        XCTAssertEqual(v.keyLookup("not.a.token"), .resolvable, "a malformed token never waits")
        // Many threads at once, every token naming a different unknown kid: all wait, one fetch wanted.
        let waiting = Mutex(0)
        let at = now
        DispatchQueue.concurrentPerform(iterations: 200) { i in
            XCTAssertNil(try? v.verify(tokens[i % 5], now: at))
            if case .unknown(let kid) = v.keyLookup(tokens[i % 5]), s.unknownKid(kid, nowMs: clock.ms.withLock { $0 }) == .wait {
                waiting.withLock { $0 += 1 }
            }
        }
        XCTAssertEqual(waiting.withLock { $0 }, 200)
        XCTAssertEqual(asked.withLock { $0 }, 1)
        XCTAssertEqual(s.wantedFetchInMs(), 0, "no fetch yet: it may start now")
        XCTAssertTrue(s.fetchStarted())
        XCTAssertNil(s.wantedFetchInMs(), "in flight")
        let ended = Mutex<[JWKSKeyStore.FetchEnd]>([])
        let h = s.addFetchEndHandler { e in ended.withLock { $0.append(e) } }
        s.install(try snapshot([Self.rsa, strangers[0]]))
        s.fetchEnded(installed: true)
        XCTAssertEqual(ended.withLock { $0 }, [JWKSKeyStore.FetchEnd(startedMs: 1_000, installed: true)])
        XCTAssertEqual(s.unknownKid("stranger-0", nowMs: 1_000), .known)
        XCTAssertNoThrow(try v.verify(tokens[0], now: now))
        s.confirmedUnknown("stranger-1")
        XCTAssertEqual(s.unknownKid("stranger-1", nowMs: 1_001), .refuse, "confirmed unknown: refused without a fetch")
        XCTAssertEqual(s.unknownKid("stranger-2", nowMs: 1_001), .wait)
        XCTAssertEqual(s.wantedFetchInMs(), 1_000, "one interval after the previous start")
        XCTAssertEqual(asked.withLock { $0 }, 2)
        s.removeFetchEndHandler(h)
        XCTAssertEqual(s.refetchesRequested, 2)
    }

    func testDescriptionShowsNoKeyMaterial() throws {
        let v = try JWKSVerifier(store: try store([Self.rsa]))
        guard case .rsa(let n, _) = Self.rsa.material else { return XCTFail() }
        XCTAssertFalse("\(v)".contains(Base64URL.encode(n).prefix(20)))
        XCTAssertTrue("\(v)".contains("keys: 1"))
    }
}

/// ``JWKSRefreshPolicy``.
final class JWKSRefreshPolicyTests: XCTestCase {
    func testMaxAgeParsing() {
        XCTAssertEqual(JWKSRefreshPolicy.maxAgeSeconds(cacheControl: "public, max-age=3600"), 3600)
        XCTAssertEqual(JWKSRefreshPolicy.maxAgeSeconds(cacheControl: "Max-Age=\"60\", must-revalidate"), 60)
        XCTAssertNil(JWKSRefreshPolicy.maxAgeSeconds(cacheControl: "no-cache"))
        XCTAssertNil(JWKSRefreshPolicy.maxAgeSeconds(cacheControl: "max-age=60, no-store"))
        XCTAssertNil(JWKSRefreshPolicy.maxAgeSeconds(cacheControl: "max-age=-1"))
        XCTAssertNil(JWKSRefreshPolicy.maxAgeSeconds(cacheControl: "max-age=abc"))
        XCTAssertNil(JWKSRefreshPolicy.maxAgeSeconds(cacheControl: nil))
    }

    func testNextRefresh() {
        let p = JWKSRefreshPolicy(refreshMs: 600_000, minimumIntervalMs: 60_000)
        XCTAssertEqual(p.nextRefreshMs(cacheControl: nil), 600_000)
        XCTAssertEqual(p.nextRefreshMs(cacheControl: "max-age=3600"), 3_600_000)
        XCTAssertEqual(p.nextRefreshMs(cacheControl: "max-age=0"), 60_000, "floored at the minimum interval")
        XCTAssertEqual(p.nextRefreshMs(cacheControl: "max-age=99999999999"), JWKSRefreshPolicy.maxIntervalMs)
    }

    func testRetries() {
        let p = JWKSRefreshPolicy(refreshMs: 600_000, minimumIntervalMs: 60_000)
        XCTAssertEqual((1...8).map { p.retryMs(consecutiveFailures: $0, haveSet: false) },
                       [250, 500, 1000, 2000, 2000, 2000, 2000, 2000], "before the first set: capped at 2 s")
        XCTAssertEqual(p.retryMs(consecutiveFailures: 1, haveSet: true), 60_000)
        XCTAssertEqual(JWKSRefreshPolicy(refreshMs: 500, minimumIntervalMs: 60_000).retryMs(consecutiveFailures: 3, haveSet: true), 500)
    }
}
