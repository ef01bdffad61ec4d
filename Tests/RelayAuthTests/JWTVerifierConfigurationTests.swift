import XCTest
@testable import RelayAuth
import RelayConfiguration

final class JWTVerifierConfigurationTests: XCTestCase {
    private func assertConfigError(_ f: @autoclosure () throws -> JWTVerifier, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try f(), file: file, line: line) { XCTAssertTrue($0 is AuthConfigurationError, "\($0)", file: file, line: line) }
    }

    func testShortHS256SecretRefused() {
        assertConfigError(try JWTVerifier(algorithm: .hs256(secret: Array("short".utf8))))
        assertConfigError(try JWTVerifier(algorithm: .hs256(secret: [])))
    }

    func testRS256NeedsRSAKeyOfAtLeast2048Bits() {
        assertConfigError(try JWTVerifier(algorithm: .rs256(publicKeyPEM: TestKeys.rsa1024.publicPEM)))
        assertConfigError(try JWTVerifier(algorithm: .rs256(publicKeyPEM: TestKeys.ec.publicPEM)))
    }

    func testES256NeedsP256Key() {
        assertConfigError(try JWTVerifier(algorithm: .es256(publicKeyPEM: TestKeys.ecP384.publicPEM)))
        assertConfigError(try JWTVerifier(algorithm: .es256(publicKeyPEM: TestKeys.rsa.publicPEM)))
    }

    func testUnreadablePEMRefused() {
        assertConfigError(try JWTVerifier(algorithm: .rs256(publicKeyPEM: "not a pem")))
        assertConfigError(try JWTVerifier(algorithm: .rs256(publicKeyPEM: "")))
        // A private key is not a PUBLIC KEY; libjwt 1.10 would not read it for verification.
        assertConfigError(try JWTVerifier(algorithm: .rs256(publicKeyPEM: TestKeys.rsaPrivatePEM)))
    }

    func testLeewayAndClaimsSettingsValidated() {
        assertConfigError(try JWTVerifier(algorithm: .hs256(secret: TestKeys.secret), leewaySeconds: -1))
        assertConfigError(try JWTVerifier(algorithm: .hs256(secret: TestKeys.secret), leewaySeconds: 301))
        assertConfigError(try JWTVerifier(algorithm: .hs256(secret: TestKeys.secret), issuer: ""))
        assertConfigError(try JWTVerifier(algorithm: .hs256(secret: TestKeys.secret), audience: ""))
    }

    func testAlgorithmDescriptionNeverShowsTheSecret() {
        let alg = JWTAlgorithm.hs256(secret: TestKeys.secret)
        let secretText = String(decoding: TestKeys.secret, as: UTF8.self)
        for text in ["\(alg)", String(reflecting: alg), "\(try! JWTVerifier(algorithm: alg))"] {
            XCTAssertFalse(text.contains(secretText), text)
            XCTAssertFalse(text.contains("48, 49"), text)
        }
        XCTAssertEqual(alg.name, "HS256")
    }
}
