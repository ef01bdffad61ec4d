import Foundation
import XCTest
@testable import RelayAuth

final class TokenMinterTests: XCTestCase {
    private func decodeJSON(_ segment: String) throws -> [String: Any] {
        try XCTUnwrap(JSONSerialization.jsonObject(with: Data(XCTUnwrap(Base64URL.decode(Array(segment.utf8))))) as? [String: Any])
    }

    func testHeaderAndClaimsShape() throws {
        let t = try TokenMinter.hs256(secret: TestKeys.secret, sub: "u", sid: "s", tier: "pro", ttlSeconds: 3600, now: now)
        let p = Forge.parts(t)
        XCTAssertEqual(p.count, 3)
        let header = try decodeJSON(p[0])
        XCTAssertEqual(header["alg"] as? String, "HS256")
        XCTAssertEqual(header["typ"] as? String, "JWT")
        let body = try decodeJSON(p[1])
        XCTAssertEqual(Set(body.keys), ["sub", "sid", "tier", "iat", "exp"])
        XCTAssertEqual((body["exp"] as? NSNumber)?.int64Value, now + 3600)
        XCTAssertEqual((body["iat"] as? NSNumber)?.int64Value, now)
    }

    func testNilTierOmitsClaim() throws {
        let t = try TokenMinter.hs256(secret: TestKeys.secret, sub: "u", sid: "s", tier: nil, ttlSeconds: 60, now: now)
        XCTAssertNil(try decodeJSON(Forge.parts(t)[1])["tier"])
        XCTAssertNil(try hsVerifier().verify(t, now: now).tier)
    }

    func testMintedTokenExpiresAfterTTLPlusLeeway() throws {
        let t = try TokenMinter.hs256(secret: TestKeys.secret, sub: "u", sid: "s", tier: nil, ttlSeconds: 60, now: now)
        XCTAssertNoThrow(try hsVerifier().verify(t, now: now + 60 + 29))
        assertRejected(hsVerifier(), t, .expired, at: now + 60 + 30)
    }

    func testMintedTokenRejectedUnderAnotherSecret() throws {
        let t = try TokenMinter.hs256(secret: TestKeys.otherSecret, sub: "u", sid: "s", tier: nil, ttlSeconds: 60, now: now)
        assertRejected(hsVerifier(), t, .badSignature)
    }

    func testInvalidInputsRefused() {
        let s = TestKeys.secret
        XCTAssertThrowsError(try TokenMinter.hs256(secret: Array("short".utf8), sub: "u", sid: "s", tier: nil, ttlSeconds: 60, now: now))
        XCTAssertThrowsError(try TokenMinter.hs256(secret: s, sub: "", sid: "s", tier: nil, ttlSeconds: 60, now: now))
        XCTAssertThrowsError(try TokenMinter.hs256(secret: s, sub: "u", sid: "", tier: nil, ttlSeconds: 60, now: now))
        XCTAssertThrowsError(try TokenMinter.hs256(secret: s, sub: "u", sid: "s", tier: "", ttlSeconds: 60, now: now))
        XCTAssertThrowsError(try TokenMinter.hs256(secret: s, sub: "u", sid: "s", tier: nil, ttlSeconds: 0, now: now))
        XCTAssertThrowsError(try TokenMinter.hs256(secret: s, sub: "u", sid: "s", tier: nil, ttlSeconds: 31_536_001, now: now))
    }
}
