import XCTest
import RelayConfiguration

/// The shipped examples' `CHANGE-ME` placeholders are found in every secret-bearing setting,
/// whatever their case, and nowhere else.
final class PlaceholderSecretsTests: XCTestCase {
    func testEverySecretStillHoldingThePlaceholderIsNamed() throws {
        var c = RelayConfig()
        XCTAssertEqual(PlaceholderSecrets.found(in: c), [])
        c.jwtSecret = "CHANGE-ME-jwt-secret-at-least-32-random-bytes"
        c.adminKey = "prefix-change-me"
        c.upstreamAPIKey = "sk-real"
        c.encryptionKeys = "k1:Change-Me"
        c.redis = try RedisEndpoint.parse("redis://CHANGE-ME-redis-host:6379/0")
        XCTAssertEqual(PlaceholderSecrets.found(in: c), ["RELAY_JWT_SECRET", "RELAY_ADMIN_KEY", "RELAY_ENCRYPTION_KEYS", "REDIS_URL"])
        let m = PlaceholderSecrets.message(["RELAY_JWT_SECRET"])
        XCTAssertTrue(m.hasPrefix("RELAY_JWT_SECRET still holds the CHANGE-ME placeholder"), m)
        XCTAssertTrue(m.contains("openssl rand -base64 48"), m)
    }
}
