import Foundation
import RelayConfiguration
import RelayLoop
import RelayRedis
import RelayTestKit
import XCTest
import RelayEventStore

/// Pub/sub idle unsubscribe against a real `redis-server` — `PubSub` on its own
/// event loop thread, as a worker runs it. A channel nobody uses any more is
/// `UNSUBSCRIBE`d after `idleUnsubscribeMs` (at the next sweep, every 5 s); a channel
/// still in use stays subscribed. Observed from Redis itself (`PUBSUB NUMSUB`).
final class PubSubIdleUnsubscribeTests: RelayTestCase {
    /// Subscribers Redis counts on `channel`.
    func subscribers(_ channel: String) throws -> Int {
        let out = try redis.cli("PUBSUB", "NUMSUB", channel)
        return Int(out.split(separator: "\n").last ?? "") ?? -1
    }

    func testAnIdleChannelIsUnsubscribedAndOneInUseIsNot() throws {
        let loop = try EventLoop()
        let connection = RedisConnection(loop: loop, endpoint: try RedisEndpoint.parse(redis.url), role: .pubsub)
        nonisolated(unsafe) let pubsub = PubSub(loop: loop, connection: connection)
        pubsub.idleUnsubscribeMs = 200
        nonisolated(unsafe) let conn = connection
        let thread = Thread { loop.run() }
        thread.start()
        defer {
            loop.post { conn.close(); loop.stop() }
            XCTAssertTrue(pollUntil(timeout: 5) { thread.isFinished }, "the loop thread ended")
        }
        let idle = "relay:test:idle-\(UUID().uuidString.prefix(8))", kept = "relay:test:kept-\(UUID().uuidString.prefix(8))"
        loop.post {
            conn.connect()
            pubsub.subscribe(idle) {}
            pubsub.subscribe(kept) {}
        }
        try eventually(5, "both channels subscribed in Redis") { try subscribers(idle) == 1 && subscribers(kept) == 1 }
        let released = Date()
        loop.post { pubsub.release(idle) }
        try eventually(12, "the idle channel to be unsubscribed (sweep every 5 s)") { try subscribers(idle) == 0 }
        print(String(format: "pub/sub: idle channel unsubscribed %.1f s after its release", Date().timeIntervalSince(released)))
        XCTAssertEqual(try subscribers(kept), 1, "a channel still in use stays subscribed")
    }
}
