import Foundation
import RelayTestSupport
import XCTest

/// Base class: a real Redis Cluster of three primaries (each with a replica) per test,
/// started in `setUp` and stopped in `tearDown`.
class RedisClusterTestCase: XCTestCase {
    var cluster: RedisCluster!

    override func setUpWithError() throws {
        cluster = try RedisCluster(primaries: 3)
    }

    override func tearDown() {
        cluster?.stop()
        cluster = nil
    }

}
