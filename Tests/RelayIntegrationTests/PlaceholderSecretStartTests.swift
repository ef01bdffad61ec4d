import Foundation
import RelayTestSupport
import XCTest

/// `serve` refuses the shipped examples' placeholder secrets before it starts anything.
final class PlaceholderSecretStartTests: RelayTestCase {
    func testServeRefusesTheExamplesPlaceholderJWTSecretNamingIt() throws {
        let r = try ToolProcess.run(TestPaths.relayBinary, ["serve"], environment: ChildEnvironment.minimal(
            ["RELAY_JWT_SECRET": "CHANGE-ME-jwt-secret-at-least-32-random-bytes"]), timeout: 20)
        XCTAssertEqual(r.status, 2, r.output)
        XCTAssertTrue(r.output.contains("RELAY_JWT_SECRET still holds the CHANGE-ME placeholder of .env.example / deploy/k8s/secret.yaml"), r.output)
    }
}
