import XCTest
import RelayConfiguration

/// The JWKS options (docs/CONFIGURATION.md, docs/TOKENS.md): which URLs are accepted, the
/// algorithm allow-list, durations.
final class JWKSConfigTests: XCTestCase {
    private func load(_ env: [String: String]) throws -> RelayConfig {
        try RelayConfig.load(environment: env, arguments: [], defaultWorkers: 1)
    }

    func testURLSchemes() throws {
        for ok in ["https://idp.example/.well-known/jwks.json", "http://127.0.0.1:8081/jwks", "http://127.1.2.3/jwks",
                   "http://localhost:9/jwks", "http://[::1]:8081/jwks", "file:///etc/relay/jwks.json"] {
            XCTAssertEqual(try load(["RELAY_JWT_JWKS_URL": ok]).jwtJWKSURL, ok, ok)
        }
        for bad in ["http://idp.example/jwks", "http://127.0.0.1.evil.example/jwks", "http://10.0.0.1/jwks",
                    "ftp://idp.example/jwks", "file://relative/jwks.json", "idp.example/jwks", "", "https://"] {
            XCTAssertThrowsError(try load(["RELAY_JWT_JWKS_URL": bad]), bad) { e in
                XCTAssertTrue("\(e)".contains("RELAY_JWT_JWKS_URL"), "\(e)")
            }
        }
    }

    func testDefaultsAndDurations() throws {
        let c = try load([:])
        XCTAssertNil(c.jwtJWKSURL)
        XCTAssertEqual(c.jwtJWKSRefreshMs, 600_000)
        XCTAssertEqual(c.jwtJWKSMinIntervalMs, 60_000)
        XCTAssertEqual(c.jwtJWKSTimeoutMs, 10_000)
        XCTAssertEqual(c.jwtJWKSAlgorithms, "RS256,RS384,RS512,ES256,ES384")
        let d = try load(["RELAY_JWT_JWKS_REFRESH": "5m", "RELAY_JWT_JWKS_MIN_INTERVAL": "500ms", "RELAY_JWT_JWKS_TIMEOUT": "3s"])
        XCTAssertEqual([d.jwtJWKSRefreshMs, d.jwtJWKSMinIntervalMs, d.jwtJWKSTimeoutMs], [300_000, 500, 3000])
        XCTAssertThrowsError(try load(["RELAY_JWT_JWKS_MIN_INTERVAL": "10ms"]))
    }

    func testAlgorithmAllowList() throws {
        XCTAssertEqual(try load(["RELAY_JWT_JWKS_ALGORITHMS": "ES256, RS256"]).jwtJWKSAlgorithms, "ES256,RS256")
        for bad in ["HS256", "none", "RS256,HS256", "", "rs256", "RS256,"] {
            XCTAssertThrowsError(try load(["RELAY_JWT_JWKS_ALGORITHMS": bad]), bad)
        }
    }
}
