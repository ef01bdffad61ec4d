import XCTest
import RelayConfiguration

/// `REDIS_URL=redis+cluster://…` and the refusal of `rediss://`.
final class ClusterURLTests: XCTestCase {
    func testClusterSeedsParse() throws {
        XCTAssertEqual(try RedisEndpoint.parse("redis+cluster://10.0.0.1:7000,10.0.0.2:7001"),
                       .cluster(seeds: [.init(host: "10.0.0.1", port: 7000), .init(host: "10.0.0.2", port: 7001)]))
        XCTAssertEqual(try RedisEndpoint.parse("redis+cluster://r:6379").description, "redis+cluster://r:6379")
        for bad in ["redis+cluster://", "redis+cluster://h", "redis+cluster://h:0", "redis+cluster://h:1,", "redis+cluster://:7000"] {
            XCTAssertThrowsError(try RedisEndpoint.parse(bad), bad)
        }
    }

    func testTLSIsRefusedWithThePointerToTheSidecarRecipe() {
        XCTAssertThrowsError(try RedisEndpoint.parse("rediss://cache.example:6380")) { e in
            let text = String(describing: e)
            XCTAssertTrue(text.contains("stunnel4"), text)
            XCTAssertTrue(text.contains("Managed Redis with TLS"), text)
        }
    }
}
