import XCTest
@testable import RelayAuth

final class AdminKeyTests: XCTestCase {
    let configured = "admin-key-0123456789-abcdef"

    func testMatchesExactKeyOnly() throws {
        let k = try AdminKey(configured)
        XCTAssertTrue(k.matches(configured))
        XCTAssertFalse(k.matches(configured + "x"))
        XCTAssertFalse(k.matches(String(configured.dropLast())))
        XCTAssertFalse(k.matches(""))
        XCTAssertFalse(k.matches(configured.uppercased()))
        XCTAssertFalse(k.matches("admin-key-0123456789-abcdeF"))
    }

    func testTwoInstancesOfTheSameKeyAgree() throws {
        // Per-instance random MAC keys must not change the answer: twenty instances (each
        // with its own MAC key) all accept the key and all refuse a near miss.
        let instances = try (0..<20).map { _ in try AdminKey(configured) }
        XCTAssertTrue(instances.allSatisfy { $0.matches(configured) })
        XCTAssertTrue(instances.allSatisfy { !$0.matches(configured + "x") && !$0.matches(String(configured.dropLast())) })
    }

    func testShortKeyRefused() {
        XCTAssertThrowsError(try AdminKey("short")) { XCTAssertTrue($0 is AuthConfigurationError) }
    }

    func testFromEnvironment() throws {
        XCTAssertNil(try AdminKey.fromEnvironment(nil))
        XCTAssertNil(try AdminKey.fromEnvironment(""))
        XCTAssertTrue(try XCTUnwrap(AdminKey.fromEnvironment(configured)).matches(configured))
        XCTAssertThrowsError(try AdminKey.fromEnvironment("tiny"))
    }

    func testAuthorizeUsesBearer() throws {
        let k = try AdminKey(configured)
        XCTAssertNoThrow(try k.authorize(authorizationValues: ["Bearer \(configured)"]))
        XCTAssertThrowsError(try k.authorize(authorizationValues: ["Bearer wrong-key-0123456789"])) {
            XCTAssertEqual(($0 as? AuthError)?.kind, .badAdminKey)
            XCTAssertEqual(($0 as? AuthError)?.apiError.status, 401)
        }
        XCTAssertThrowsError(try k.authorize(authorizationValues: ["Basic \(configured)"]))
        XCTAssertThrowsError(try k.authorize(authorizationValues: []))
    }

    func testDescriptionRedacted() throws {
        let k = try AdminKey(configured)
        XCTAssertFalse("\(k)".contains(configured))
        XCTAssertFalse(String(reflecting: k).contains(configured))
    }
}
