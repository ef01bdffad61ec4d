import XCTest
@testable import RelayAuth

final class BearerTokenTests: XCTestCase {
    private func assertFails(_ values: [String], _ kind: AuthError.Kind, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try BearerToken.extract(authorizationValues: values), file: file, line: line) { e in
            guard let e = e as? AuthError else { return XCTFail("\(e)", file: file, line: line) }
            XCTAssertEqual(e.kind, kind, e.reason, file: file, line: line)
            XCTAssertEqual(e.apiError.status, 401, file: file, line: line)
            XCTAssertFalse(e.reason.contains("secret-token-value"), file: file, line: line)
        }
    }

    func testExtractsBearerToken() throws {
        XCTAssertEqual(try BearerToken.extract(authorizationValues: ["Bearer abc.def.ghi"]), "abc.def.ghi")
    }

    func testSchemeIsCaseInsensitive() throws {
        for scheme in ["bearer", "BEARER", "bEaReR"] {
            XCTAssertEqual(try BearerToken.extract(authorizationValues: ["\(scheme) a-b_c~d+e/f"]), "a-b_c~d+e/f")
        }
    }

    func testToken68PaddingAllowedOnlyAtEnd() throws {
        XCTAssertEqual(try BearerToken.extract(authorizationValues: ["Bearer abc=="]), "abc==")
        assertFails(["Bearer a=b"], .malformedAuthorization)
        assertFails(["Bearer ==="], .malformedAuthorization)
    }

    func testSurroundingWhitespaceIgnored() throws {
        XCTAssertEqual(try BearerToken.extract(authorizationValues: [" Bearer tok \t"]), "tok")
    }

    func testMissingHeader() { assertFails([], .missingCredentials) }

    func testEmptyHeader() {
        assertFails([""], .missingCredentials)
        assertFails(["   "], .missingCredentials)
    }

    func testDuplicateHeadersRejected() {
        assertFails(["Bearer secret-token-value", "Bearer secret-token-value"], .malformedAuthorization)
        assertFails(["Bearer a", "Basic b"], .malformedAuthorization)
    }

    func testOtherSchemesRejected() {
        assertFails(["Basic dXNlcjpwYXNz"], .malformedAuthorization)
        assertFails(["Digest username=\"x\""], .malformedAuthorization)
        assertFails(["Token secret-token-value"], .malformedAuthorization)
        assertFails(["Bearers secret-token-value"], .malformedAuthorization)
        assertFails(["secret-token-value"], .malformedAuthorization)
    }

    func testEmptyTokenRejected() {
        assertFails(["Bearer"], .malformedAuthorization)
        assertFails(["Bearer "], .malformedAuthorization)
    }

    func testExactlyOneSpaceRequired() {
        assertFails(["Bearer  secret-token-value"], .malformedAuthorization)
        assertFails(["Bearer\tsecret-token-value"], .malformedAuthorization)
    }

    func testNonToken68CharactersRejected() {
        assertFails(["Bearer a b"], .malformedAuthorization)
        assertFails(["Bearer a,Bearer b"], .malformedAuthorization)
        assertFails(["Bearer \"quoted\""], .malformedAuthorization)
        assertFails(["Bearer tok\u{0}"], .malformedAuthorization)
        assertFails(["Bearer tokén"], .malformedAuthorization)
    }
}
