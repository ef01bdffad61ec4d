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

    /// Polls `condition` every 20 ms for up to `timeout` seconds.
    /// - Throws: `TestFailure("timed out waiting for <what>")`, which ends the test.
    func eventually(_ timeout: Double, _ what: String, _ condition: () throws -> Bool) throws {
        let until = Date().addingTimeInterval(timeout)
        while Date() < until {
            if try condition() { return }
            usleep(20_000)
        }
        throw TestFailure("timed out waiting for \(what)")
    }
}
