import Foundation
import XCTest
@testable import RelayAuth

/// One test per attack on and bad input to a bearer token (alg `none`, algorithm confusion,
/// forged and truncated signatures, bad claims; docs/TOKENS.md, RFC 7515, RFC 7519,
/// RFC 8725); every token is built here.
final class JWTVerifierAttackTests: XCTestCase {
    // MARK: alg none

    func testAlgNoneUnsignedRejectedByEveryAlgorithm() {
        let t = Forge.b64(#"{"alg":"none","typ":"JWT"}"#) + "." + Forge.b64(claims()) + "."
        assertRejected(hsVerifier(), t, .algorithmNotAllowed)
        assertRejected(rsVerifier(), t, .algorithmNotAllowed)
        assertRejected(esVerifier(), t, .algorithmNotAllowed)
    }

    func testAlgNoneWithASignatureRejected() {
        let input = Forge.signingInput(#"{"alg":"none"}"#, claims())
        // A real HMAC under the configured secret over a `none` header must not help either.
        let t = input + "." + Forge.b64(OpenSSLShim.hmacSHA256(key: TestKeys.secret, data: Array(input.utf8)))
        assertRejected(hsVerifier(), t, .algorithmNotAllowed)
    }

    func testAlgNoneCaseVariantsRejected() {
        for alg in ["None", "NONE", "nOnE"] {
            assertRejected(hsVerifier(), Forge.hs256(header: #"{"alg":"\#(alg)"}"#, payload: claims()), .algorithmNotAllowed)
        }
    }

    // MARK: other algorithms

    func testRS256TokenRejectedByHS256Verifier() {
        assertRejected(hsVerifier(), Forge.libjwt(.rs256, claims: claims()), .algorithmNotAllowed)
    }

    func testES256TokenRejectedByRS256Verifier() {
        assertRejected(rsVerifier(), Forge.libjwt(.es256, claims: claims()), .algorithmNotAllowed)
    }

    func testRS256TokenRejectedByES256Verifier() {
        assertRejected(esVerifier(), Forge.libjwt(.rs256, claims: claims()), .algorithmNotAllowed)
    }

    func testHS512WithTheSameSecretRejectedByHS256Verifier() {
        assertRejected(hsVerifier(), Forge.libjwt(.hs512(TestKeys.secret), claims: claims()), .algorithmNotAllowed)
    }

    func testLowercaseAlgRejectedAlthoughLibjwtAcceptsIt() {
        let t = Forge.hs256(header: #"{"alg":"hs256"}"#, payload: claims())
        // Pitfall: libjwt's jwt_str_alg is case-insensitive, so libjwt alone verifies this.
        XCTAssertNotNil(LibJWT.verifiedAlgorithm(token: t, key: TestKeys.secret))
        assertRejected(hsVerifier(), t, .algorithmNotAllowed)
    }

    func testMissingOrNonStringAlgRejected() {
        assertRejected(hsVerifier(), Forge.hs256(header: #"{"typ":"JWT"}"#, payload: claims()), .malformedToken)
        assertRejected(hsVerifier(), Forge.hs256(header: #"{"alg":["HS256"]}"#, payload: claims()), .malformedToken)
    }

    func testCritHeaderRejected() {
        assertRejected(hsVerifier(), Forge.hs256(header: #"{"alg":"HS256","crit":["exp"],"exp":1}"#, payload: claims()), .algorithmNotAllowed)
    }

    // MARK: algorithm confusion

    func testHS256SignedWithRSAPublicKeyPEMAsSecretRejected() {
        let pem = Array(TestKeys.rsa.publicPEM.utf8)
        let t = Forge.hs256(payload: claims(sub: "attacker"), key: pem)
        // Pitfall: libjwt 1.10 alone accepts this with the RS256 verifier's key.
        XCTAssertNotNil(LibJWT.verifiedAlgorithm(token: t, key: pem))
        assertRejected(rsVerifier(), t, .algorithmNotAllowed)
    }

    func testHS256SignedWithECPublicKeyPEMAsSecretRejected() {
        let t = Forge.hs256(payload: claims(sub: "attacker"), key: Array(TestKeys.ec.publicPEM.utf8))
        assertRejected(esVerifier(), t, .algorithmNotAllowed)
    }

    // MARK: tampering and signatures

    func testTamperedHeaderRejected() {
        let p = Forge.parts(Forge.hs256(payload: claims()))
        let t = Forge.b64(#"{"alg":"HS256","typ":"JWT","kid":"x"}"#) + "." + p[1] + "." + p[2]
        assertRejected(hsVerifier(), t, .badSignature)
    }

    func testTamperedPayloadRejected() {
        for make in [{ Forge.hs256(payload: claims()) }, { Forge.rs256(payload: claims()) }, { Forge.es256(payload: claims()) }] {
            let p = Forge.parts(make())
            let t = p[0] + "." + Forge.b64(claims(sub: "admin")) + "." + p[2]
            let v = p[0] == Forge.b64(#"{"alg":"HS256","typ":"JWT"}"#) ? hsVerifier()
                : p[0] == Forge.b64(#"{"alg":"RS256","typ":"JWT"}"#) ? rsVerifier() : esVerifier()
            assertRejected(v, t, .badSignature)
        }
    }

    func testSignatureUnderAnotherSecretRejected() {
        assertRejected(hsVerifier(), Forge.hs256(payload: claims(), key: TestKeys.otherSecret), .badSignature)
    }

    func testSignatureUnderAnotherRSAKeyRejected() {
        assertRejected(rsVerifier(), Forge.rs256(payload: claims(), key: TestKeys.rsaOther), .badSignature)
    }

    func testSignatureUnderAnotherECKeyRejected() {
        assertRejected(esVerifier(), Forge.es256(payload: claims(), key: TestKeys.ecOther), .badSignature)
    }

    func testFlippedSignatureByteRejected() {
        for (v, t) in [(hsVerifier(), Forge.hs256(payload: claims())), (rsVerifier(), Forge.rs256(payload: claims())),
                       (esVerifier(), Forge.es256(payload: claims()))] {
            let p = Forge.parts(t)
            var sig = Base64URL.decode(Array(p[2].utf8))!
            sig[sig.count / 2] ^= 0x01
            assertRejected(v, p[0] + "." + p[1] + "." + Forge.b64(sig), .badSignature)
        }
    }

    func testTruncatedSignatureRejected() {
        let p = Forge.parts(Forge.hs256(payload: claims()))
        let sig = Base64URL.decode(Array(p[2].utf8))!
        assertRejected(hsVerifier(), p[0] + "." + p[1] + "." + Forge.b64(Array(sig.prefix(16))), .badSignature)
    }

    // MARK: exp / nbf

    func testMissingExpRejected() {
        assertRejected(hsVerifier(), Forge.hs256(payload: claims(exp: nil)), .invalidClaims)
    }

    func testPastExpBeyondLeewayRejected() {
        assertRejected(hsVerifier(), Forge.hs256(payload: claims(exp: now - 31)), .expired)
        assertRejected(hsVerifier(), Forge.hs256(payload: claims(exp: 0)), .expired)
    }

    func testExpAsStringRejected() {
        assertRejected(hsVerifier(), Forge.hs256(payload: claims(exp: nil, extra: #""exp":"\#(now + 600)""#)), .invalidClaims)
    }

    func testExpAsBoolOrNullRejected() {
        assertRejected(hsVerifier(), Forge.hs256(payload: claims(exp: nil, extra: #""exp":true"#)), .invalidClaims)
        assertRejected(hsVerifier(), Forge.hs256(payload: claims(exp: nil, extra: #""exp":null"#)), .invalidClaims)
    }

    func testExpOutOfRangeRejectedWithoutTrapping() {
        assertRejected(hsVerifier(), Forge.hs256(payload: claims(exp: nil, extra: #""exp":1e300"#)), .invalidClaims)
        assertRejected(hsVerifier(), Forge.hs256(payload: claims(exp: Int64.max)), .invalidClaims)
        assertRejected(hsVerifier(), Forge.hs256(payload: claims(exp: Int64.min)), .invalidClaims)
    }

    func testFutureNbfRejected() {
        assertRejected(hsVerifier(), Forge.hs256(payload: claims(extra: "\"nbf\":\(now + 31)")), .notYetValid)
    }

    func testNbfAsStringRejected() {
        assertRejected(hsVerifier(), Forge.hs256(payload: claims(extra: "\"nbf\":\"\(now)\"")), .invalidClaims)
    }

    // MARK: sub / sid

    func testMissingSubRejected() {
        assertRejected(hsVerifier(), Forge.hs256(payload: claims(sub: nil)), .invalidClaims)
    }

    func testEmptySubRejected() {
        assertRejected(hsVerifier(), Forge.hs256(payload: claims(sub: "")), .invalidClaims)
    }

    func testNonStringSubRejected() {
        assertRejected(hsVerifier(), Forge.hs256(payload: claims(sub: nil, extra: #""sub":42"#)), .invalidClaims)
    }

    func testMissingSidAndSessionIdRejected() {
        assertRejected(hsVerifier(), Forge.hs256(payload: claims(sid: nil)), .invalidClaims)
    }

    func testEmptySidRejected() {
        assertRejected(hsVerifier(), Forge.hs256(payload: claims(sid: "")), .invalidClaims)
        assertRejected(hsVerifier(), Forge.hs256(payload: claims(sid: nil, extra: #""session_id":"""#)), .invalidClaims)
    }

    func testNonStringTierRejected() {
        assertRejected(hsVerifier(), Forge.hs256(payload: claims(extra: #""tier":1"#)), .invalidClaims)
    }

    // MARK: payload shape and encoding

    func testNonObjectPayloadRejected() {
        // Pitfall: libjwt 1.10 decodes a signed `[1]` payload without complaint.
        let array = Forge.hs256(payload: "[1]")
        XCTAssertNotNil(LibJWT.verifiedAlgorithm(token: array, key: TestKeys.secret))
        assertRejected(hsVerifier(), array, .malformedToken)
        for payload in [#""just a string""#, "42", "null", "true", "not json", #"{"sub":"u""#, ""] {
            assertRejected(hsVerifier(), Forge.hs256(payload: payload), .malformedToken)
        }
    }

    func testNonObjectHeaderRejected() {
        let input = Forge.b64(#"["HS256"]"#) + "." + Forge.b64(claims())
        let t = input + "." + Forge.b64(OpenSSLShim.hmacSHA256(key: TestKeys.secret, data: Array(input.utf8)))
        assertRejected(hsVerifier(), t, .malformedToken)
    }

    func testInvalidBase64urlRejected() {
        let p = Forge.parts(Forge.hs256(payload: claims()))
        let cases = [
            p[0] + "." + "!!!!" + "." + p[2],                    // not in the alphabet
            p[0] + "." + p[1] + "=" + "." + p[2],                // padding
            p[0] + "." + p[1] + "." + p[2] + "==",
            p[0].replacingOccurrences(of: "J", with: "+") + "." + p[1] + "." + p[2], // base64, not base64url
            p[0] + " ." + p[1] + "." + p[2],                     // whitespace
            p[0] + "." + p[1] + "." + "A",                       // impossible length (4n+1)
            p[0] + "." + p[1] + "é" + "." + p[2],                // non-ASCII
        ]
        for t in cases { assertRejected(hsVerifier(), t, .malformedToken) }
    }

    func testNonCanonicalBase64urlSignatureRejected() {
        // A 32-byte signature is 43 chars whose last char carries 2 unused bits; setting them
        // decodes to the same bytes in a lenient decoder. The token must still be refused.
        let p = Forge.parts(Forge.hs256(payload: claims()))
        var sig = Array(p[2].utf8)
        let v = Base64URL.value(of: sig[42])!
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        sig[42] = alphabet[Int(v | 0x01)]
        if sig[42] == Array(p[2].utf8)[42] { sig[42] = alphabet[Int(v | 0x02)] }
        assertRejected(hsVerifier(), p[0] + "." + p[1] + "." + String(decoding: sig, as: UTF8.self), .malformedToken)
    }

    func testWrongSegmentCountRejected() {
        let p = Forge.parts(Forge.hs256(payload: claims()))
        assertRejected(hsVerifier(), p[0] + "." + p[1], .malformedToken)
        assertRejected(hsVerifier(), p[0], .malformedToken)
        assertRejected(hsVerifier(), p.joined(separator: ".") + ".", .malformedToken)
        assertRejected(hsVerifier(), p.joined(separator: ".") + "." + p[2], .malformedToken)
        assertRejected(hsVerifier(), "..", .malformedToken)
        assertRejected(hsVerifier(), "." + p[1] + "." + p[2], .malformedToken)
    }

    func testOneByteTokenRejected() {
        for t in ["a", ".", "=", " "] { assertRejected(hsVerifier(), t, .malformedToken) }
    }

    func testEmptyTokenRejected() {
        assertRejected(hsVerifier(), "", .malformedToken)
    }

    func testHundredKilobyteTokenRejectedBeforeParsing() {
        // A validly signed token that is just too big (padding claim), and 100 KB of junk.
        let big = Forge.hs256(payload: claims(extra: "\"pad\":\"\(String(repeating: "x", count: 100 * 1024))\""))
        assertRejected(hsVerifier(), big, .malformedToken)
        assertRejected(hsVerifier(), String(repeating: "A", count: 100 * 1024), .malformedToken)
    }

    func testTokenJustOverCapRejectedAndUnderCapParsed() {
        // Validly signed tokens around the 8 KiB cap (padding claim of 6100 vs 6000 bytes).
        let over = Forge.hs256(payload: claims(extra: "\"pad\":\"\(String(repeating: "x", count: 6100))\""))
        XCTAssertGreaterThan(over.utf8.count, JWTVerifier.maxTokenBytes)
        assertRejected(hsVerifier(), over, .malformedToken)
        let under = Forge.hs256(payload: claims(extra: "\"pad\":\"\(String(repeating: "x", count: 6000))\""))
        XCTAssertLessThanOrEqual(under.utf8.count, JWTVerifier.maxTokenBytes)
        XCTAssertNoThrow(try hsVerifier().verify(under, now: now))
    }

    // MARK: issuer / audience

    func testIssuerMismatchRejected() {
        let v = hsVerifier(issuer: "https://auth.example")
        assertRejected(v, Forge.hs256(payload: claims(extra: #""iss":"https://evil.example""#)), .issuerMismatch)
        assertRejected(v, Forge.hs256(payload: claims(extra: #""iss":"HTTPS://AUTH.EXAMPLE""#)), .issuerMismatch)
        assertRejected(v, Forge.hs256(payload: claims()), .issuerMismatch)
    }

    func testAudienceMismatchRejected() {
        let v = hsVerifier(audience: "stream-relay")
        assertRejected(v, Forge.hs256(payload: claims(extra: #""aud":"other""#)), .audienceMismatch)
        assertRejected(v, Forge.hs256(payload: claims(extra: #""aud":["a","b"]"#)), .audienceMismatch)
        assertRejected(v, Forge.hs256(payload: claims(extra: #""aud":[]"#)), .audienceMismatch)
        assertRejected(v, Forge.hs256(payload: claims()), .audienceMismatch)
    }

    func testAudienceOfWrongTypeRejected() {
        assertRejected(hsVerifier(audience: "stream-relay"), Forge.hs256(payload: claims(extra: #""aud":1"#)), .invalidClaims)
        assertRejected(hsVerifier(audience: "stream-relay"), Forge.hs256(payload: claims(extra: #""aud":["stream-relay",1]"#)), .invalidClaims)
    }
}
