import XCTest
@testable import RelayAuth

final class JWTVerifierClaimsTests: XCTestCase {
    func testExpWithinLeewayAccepted() throws {
        XCTAssertEqual(try hsVerifier().verify(Forge.hs256(payload: claims(exp: now - 29)), now: now).exp, now - 29)
    }

    func testExpJustBeyondLeewayRejected() {
        assertRejected(hsVerifier(), Forge.hs256(payload: claims(exp: now - 31)), .expired)
    }

    func testExpExactlyAtLeewayBoundaryRejected() {
        // Valid iff now < exp + leeway (RFC 7519 §4.1.4 "on or after" exp means expired).
        assertRejected(hsVerifier(), Forge.hs256(payload: claims(exp: now - 30)), .expired)
    }

    func testZeroLeewayIsStrict() throws {
        let v = hsVerifier(leeway: 0)
        assertRejected(v, Forge.hs256(payload: claims(exp: now)), .expired)
        XCTAssertNoThrow(try v.verify(Forge.hs256(payload: claims(exp: now + 1)), now: now))
    }

    func testNbfWithinLeewayAccepted() throws {
        XCTAssertNoThrow(try hsVerifier().verify(Forge.hs256(payload: claims(extra: "\"nbf\":\(now + 30)")), now: now))
        XCTAssertNoThrow(try hsVerifier().verify(Forge.hs256(payload: claims(extra: "\"nbf\":\(now - 1000)")), now: now))
    }

    func testNbfJustBeyondLeewayRejected() {
        assertRejected(hsVerifier(), Forge.hs256(payload: claims(extra: "\"nbf\":\(now + 31)")), .notYetValid)
    }

    func testFractionalNumericDatesFloored() throws {
        let c = try hsVerifier().verify(Forge.hs256(payload: claims(exp: nil, extra: "\"exp\":\(now + 10).75,\"iat\":\(now).5")), now: now)
        XCTAssertEqual(c.exp, now + 10)
        XCTAssertEqual(c.issuedAt, now)
    }

    func testSessionIdFallback() throws {
        let c = try hsVerifier().verify(Forge.hs256(payload: claims(sid: nil, extra: #""session_id":"sess-legacy""#)), now: now)
        XCTAssertEqual(c.sid, "sess-legacy")
    }

    func testSidPreferredOverSessionId() throws {
        let c = try hsVerifier().verify(Forge.hs256(payload: claims(sid: "sess-a", extra: #""session_id":"sess-b""#)), now: now)
        XCTAssertEqual(c.sid, "sess-a")
    }

    func testNullTierIsAbsent() throws {
        XCTAssertNil(try hsVerifier().verify(Forge.hs256(payload: claims(extra: #""tier":null"#)), now: now).tier)
    }

    func testIssuerMatchAccepted() throws {
        let v = hsVerifier(issuer: "https://auth.example")
        XCTAssertNoThrow(try v.verify(Forge.hs256(payload: claims(extra: #""iss":"https://auth.example""#)), now: now))
    }

    func testAudienceAsStringAccepted() throws {
        let v = hsVerifier(audience: "stream-relay")
        XCTAssertNoThrow(try v.verify(Forge.hs256(payload: claims(extra: #""aud":"stream-relay""#)), now: now))
    }

    func testAudienceAsArrayAccepted() throws {
        let v = hsVerifier(audience: "stream-relay")
        XCTAssertNoThrow(try v.verify(Forge.hs256(payload: claims(extra: #""aud":["web","stream-relay"]"#)), now: now))
    }

    func testIssuerAndAudienceIgnoredWhenNotConfigured() throws {
        XCTAssertNoThrow(try hsVerifier().verify(Forge.hs256(payload: claims(extra: #""iss":"x","aud":"y""#)), now: now))
    }

    func testEveryAuthErrorKindIs401Unauthorized() {
        for k in AuthError.Kind.allCases {
            let e = AuthError(k, "r")
            XCTAssertEqual(e.apiError.status, 401)
            XCTAssertEqual(e.apiError.code, "unauthorized")
            XCTAssertTrue(e.wwwAuthenticate.hasPrefix("Bearer realm="))
        }
        XCTAssertEqual(AuthError(.expired, "r").apiError.message, "token expired")
        XCTAssertEqual(AuthError(.badSignature, "r").wwwAuthenticate, #"Bearer realm="stream-relay", error="invalid_token""#)
    }
}
