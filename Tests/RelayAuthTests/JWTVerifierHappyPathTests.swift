import Foundation
import XCTest
import RelayCore
@testable import RelayAuth

final class JWTVerifierHappyPathTests: XCTestCase {
    func testHS256MintedTokenVerifies() throws {
        let t = try TokenMinter.hs256(secret: TestKeys.secret, sub: "user-1", sid: "sess-1", tier: "pro", ttlSeconds: 600, now: now)
        let c = try hsVerifier().verify(t, now: now)
        XCTAssertEqual(c, SessionClaims(sub: "user-1", sid: "sess-1", tier: "pro", exp: now + 600, issuedAt: now))
    }

    func testHS256HandSignedTokenVerifies() throws {
        let c = try hsVerifier().verify(Forge.hs256(payload: claims()), now: now)
        XCTAssertEqual(c.sub, "user-1")
        XCTAssertEqual(c.sid, "sess-1")
        XCTAssertNil(c.tier)
        XCTAssertNil(c.issuedAt)
    }

    func testRS256SignedByLibjwtVerifies() throws {
        let t = Forge.libjwt(.rs256, claims: claims(extra: #""tier":"free","iat":1749999990"#))
        let c = try rsVerifier().verify(t, now: now)
        XCTAssertEqual(c, SessionClaims(sub: "user-1", sid: "sess-1", tier: "free", exp: now + 600, issuedAt: 1_749_999_990))
    }

    func testRS256SignedByOpenSSLCLIVerifies() throws {
        let c = try rsVerifier().verify(Forge.rs256(payload: claims()), now: now)
        XCTAssertEqual(c.sub, "user-1")
    }

    func testES256SignedByLibjwtVerifies() throws {
        let t = Forge.libjwt(.es256, claims: claims())
        XCTAssertEqual(Base64URL.decode(Array(Forge.parts(t)[2].utf8))?.count, 64, "libjwt 1.10 emits R||S")
        XCTAssertEqual(try esVerifier().verify(t, now: now).sid, "sess-1")
    }

    func testES256SignedByOpenSSLCLIVerifies() throws {
        XCTAssertEqual(try esVerifier().verify(Forge.es256(payload: claims()), now: now).sub, "user-1")
    }

    func testUnicodeClaimsRoundTrip() throws {
        let t = try TokenMinter.hs256(secret: TestKeys.secret, sub: "مستخدم \"1\"", sid: "s/😀", tier: nil, ttlSeconds: 60, now: now)
        let c = try hsVerifier().verify(t, now: now)
        XCTAssertEqual(c.sub, "مستخدم \"1\"")
        XCTAssertEqual(c.sid, "s/😀")
    }

    func testUnknownClaimsAndHeaderParametersIgnored() throws {
        let t = Forge.hs256(header: #"{"alg":"HS256","typ":"JWT","kid":"k1"}"#,
                            payload: claims(extra: #""scope":["a"],"nested":{"x":1},"jti":"j""#))
        XCTAssertEqual(try hsVerifier().verify(t, now: now).sub, "user-1")
    }

    func testSharedVerifierIsUsableFromManyThreads() throws {
        let v = rsVerifier(), h = hsVerifier()
        let rs = Forge.libjwt(.rs256, claims: claims())
        let hs = Forge.hs256(payload: claims())
        let bad = Forge.hs256(payload: claims(), key: TestKeys.otherSecret)
        let failures = LockedBox(0)
        DispatchQueue.concurrentPerform(iterations: 400) { i in
            switch i % 3 {
            case 0: if (try? v.verify(rs, now: now))?.sub != "user-1" { failures.mutate { $0 += 1 } }
            case 1: if (try? h.verify(hs, now: now))?.sub != "user-1" { failures.mutate { $0 += 1 } }
            default: if (try? h.verify(bad, now: now)) != nil { failures.mutate { $0 += 1 } }
            }
        }
        XCTAssertEqual(failures.value, 0)
    }
}
