import RelayTestKit
import XCTest
@testable import RelayCluster
@testable import RelayEventStore
@testable import RelayRedis

/// Hash slots, the slot map, redirect classification, retry timing and refresh
/// coalescing of the Redis Cluster client (virtual clock, no Redis).
final class ClusterRoutingTests: XCTestCase {
    /// Vectors from the Redis Cluster spec (CRC16 "123456789" = 0x31C3) and from
    /// `CLUSTER KEYSLOT` on redis-server 7.0.15.
    func testHashSlotsMatchRedis() {
        XCTAssertEqual(HashSlot.crc16(Array("123456789".utf8)), 0x31C3)
        let vectors: [(String, Int)] = [
            ("123456789", 12739), ("foo", 12182), ("bar", 5061), ("somekey", 11058),
            ("{user1000}.following", 3443), ("{user1000}.followers", 3443),
            ("foo{}{bar}", 8363), ("foo{{bar}}", 4015), ("foo{bar}{zap}", 5061),
            ("relay:{abc:req1}:events", 182), ("relay:budget:{u:abc}:2026-12", 10053), ("é", 10180),
        ]
        for (k, slot) in vectors { XCTAssertEqual(HashSlot.of(k), slot, k) }
    }

    func testEveryKeyOfOneStreamSessionAndBudgetShareASlot() {
        let id = "0f3a9c:req-42"
        let stream = ["relay:{\(id)}:events", "relay:{\(id)}:meta", "relay:{\(id)}:live",
                      "relay:{\(id)}:text", "relay:{\(id)}:offsets", "relay:{\(id)}:lease"]
        XCTAssertEqual(Set(stream.map(HashSlot.of)).count, 1)
        let budget = "relay:budget:{u:0f3a9c}:2026-12"
        XCTAssertEqual(HashSlot.of(budget), HashSlot.of(budget + ":expiries"))
    }

    func testSlotMapFromRangesAndMoved() {
        let a = ClusterNode(host: "127.0.0.1", port: 7000), b = ClusterNode(host: "127.0.0.1", port: 7001)
        var m = ClusterSlotMap(ranges: [.init(start: 0, end: 8191, primary: a), .init(start: 8192, end: 16383, primary: b)])
        XCTAssertEqual(m.uncoveredSlots, 0)
        XCTAssertEqual(m.primaries, [a, b])
        XCTAssertEqual(m.primary(forSlot: 0), a)
        XCTAssertEqual(m.primary(forSlot: 8192), b)
        XCTAssertEqual(m.primary(forKey: "foo"), b)   // 12182
        XCTAssertNil(m.primary(forSlot: 16384))
        m.moved(slot: 12182, to: a)
        XCTAssertEqual(m.primary(forKey: "foo"), a)
        XCTAssertEqual(m.primary(forSlot: 12183), b)
        let partial = ClusterSlotMap(ranges: [.init(start: 0, end: 99, primary: a)])
        XCTAssertEqual(partial.uncoveredSlots, 16384 - 100)
        XCTAssertNil(partial.primary(forSlot: 100))
    }

    func testAPrimaryLeftWithNoSlotIsDropped() {
        let a = ClusterNode(host: "h", port: 1), b = ClusterNode(host: "h", port: 2)
        var m = ClusterSlotMap(ranges: [.init(start: 0, end: 16382, primary: a), .init(start: 16383, end: 16383, primary: b)])
        m.moved(slot: 16383, to: a)
        XCTAssertEqual(m.primaries, [a])
        XCTAssertEqual(m.primary(forSlot: 16383), a)
        XCTAssertEqual(m.primary(forSlot: 5), a)
    }

    func testRedirectClassification() {
        XCTAssertEqual(ClusterRedirect(error: "MOVED 3999 127.0.0.1:6381"),
                       .moved(slot: 3999, node: ClusterNode(host: "127.0.0.1", port: 6381)))
        XCTAssertEqual(ClusterRedirect(error: "ASK 3999 10.0.0.2:7002"),
                       .ask(slot: 3999, node: ClusterNode(host: "10.0.0.2", port: 7002)))
        XCTAssertEqual(ClusterRedirect(error: "MOVED 1 ::1:7000"), .moved(slot: 1, node: ClusterNode(host: "::1", port: 7000)))
        XCTAssertEqual(ClusterRedirect(error: "MOVED 1 ?:7000"), .refreshThenRetry)
        XCTAssertEqual(ClusterRedirect(error: "MOVED 99999 h:1"), .none, "slot out of range is not a redirect")
        XCTAssertEqual(ClusterRedirect(error: "TRYAGAIN Multiple keys request during rehashing of slot"), .retryLater)
        XCTAssertEqual(ClusterRedirect(error: "CLUSTERDOWN The cluster is down"), .retryLater)
        XCTAssertEqual(ClusterRedirect(error: "NOSCRIPT No matching script"), .none)
        XCTAssertEqual(ClusterRedirect(error: nil), .none)
    }

    func testRetriesBackOffAndStopAtTheGrace() {
        let clock = VirtualClock()
        let p = ClusterRetryPolicy(firstMs: 20, maxMs: 500, graceMs: 2_000)
        let first = clock.loopMs
        XCTAssertEqual(p.delay(attempt: 1, firstFailureMs: first, nowMs: clock.loopMs), 20)
        XCTAssertEqual(p.delay(attempt: 2, firstFailureMs: first, nowMs: clock.loopMs), 40)
        XCTAssertEqual(p.delay(attempt: 6, firstFailureMs: first, nowMs: clock.loopMs), 500, "capped")
        XCTAssertEqual(p.delay(attempt: 60, firstFailureMs: first, nowMs: clock.loopMs), 500, "no overflow")
        clock.advance(by: 1_500)
        XCTAssertEqual(p.delay(attempt: 7, firstFailureMs: first, nowMs: clock.loopMs), 500)
        clock.advance(by: 1)
        XCTAssertNil(p.delay(attempt: 8, firstFailureMs: first, nowMs: clock.loopMs), "past the grace: give the error back")
    }

    func testTheFirstRedirectIsFollowedAtOnceFurtherOnesAfterTheBackoff() {
        let p = ClusterRetryPolicy(graceMs: 2_000)
        XCTAssertEqual(p.immediateRedirects, 1, "MOVED then resend at once; a second redirect means the nodes disagree")
        XCTAssertEqual(p.maxRedirects, 16, "a ping-pong is waited out within the grace, not ended after 5 hops")
        // 15 backed-off redirects take longer than the grace: the grace ends them first.
        let waited = (1...15).compactMap { p.delay(attempt: $0, firstFailureMs: 0, nowMs: 0) }.reduce(0, +)
        XCTAssertGreaterThan(waited, p.graceMs)
    }

    /// The grace bound the client relies on: a command's last resend is pushed while
    /// `nowMs + delay ≤ first + grace`, and the queue adds at most `maxMs` of head-of-line
    /// wait, so its answer comes no later than `grace + maxMs` after its first failure.
    func testTheGraceBoundsEachCommandToGracePlusOneBackoffStep() {
        let p = ClusterRetryPolicy(graceMs: 2_000)
        let clock = VirtualClock()
        let first = clock.loopMs
        var attempt = 1
        var lastPush = first
        while let d = p.delay(attempt: attempt, firstFailureMs: first, nowMs: clock.loopMs) {
            lastPush = clock.loopMs
            clock.advance(by: Int64(d) + 1)   // resent when due, failed again 1 ms later
            attempt += 1
        }
        XCTAssertLessThanOrEqual(lastPush + p.maxMs - first, p.graceMs + p.maxMs)
        XCTAssertLessThanOrEqual(clock.loopMs - first, p.graceMs + p.maxMs + UInt64(attempt), "answered within grace + maxMs")
        XCTAssertGreaterThan(attempt, p.immediateRedirects)
    }

    func testRefreshesAreCoalescedAndSpaced() {
        let clock = VirtualClock()
        var r = TopologyRefresh(minIntervalMs: 100)
        XCTAssertEqual(r.request(.startup, nowMs: clock.loopMs), .refreshNow)
        XCTAssertEqual(r.request(.moved, nowMs: clock.loopMs), .coalesced)
        XCTAssertEqual(r.request(.moved, nowMs: clock.loopMs), .coalesced)
        clock.advance(by: 30)
        XCTAssertTrue(r.finished(), "a MOVED arrived meanwhile: refresh again")
        XCTAssertEqual(r.request(.moved, nowMs: clock.loopMs), .refreshAfter(70))
        clock.advance(by: 70)
        XCTAssertEqual(r.request(.moved, nowMs: clock.loopMs), .refreshNow)
        XCTAssertFalse(r.finished())
    }

    func testRouting() {
        XCTAssertEqual(ClusterRouting.of(["EVALSHA", "abc", "2", "relay:{x}:meta", "relay:{x}:lease", "a"]), .slot(HashSlot.of("x")))
        XCTAssertEqual(ClusterRouting.of(["EVAL", "return 1", "0"]), .anyNode)
        XCTAssertEqual(ClusterRouting.of(["SCRIPT", "LOAD", "return 1"]), .allPrimaries)
        XCTAssertEqual(ClusterRouting.of(["PUBLISH", "relay:cancel", "id"]), .anyNode)
        XCTAssertEqual(ClusterRouting.of(["XRANGE", "relay:{y}:events", "(0-0", "+"]), .slot(HashSlot.of("y")))
        XCTAssertEqual(ClusterRouting.of(["del", "relay:{z}:meta", "relay:{z}:lease"]), .slot(HashSlot.of("z")))
        XCTAssertEqual(ClusterRouting.of([]), .anyNode)
    }
}

/// `AppendQueue` after a failover that lost acknowledged appends.
final class AppendQueueFailoverTests: XCTestCase {
    func testAStoreBehindAnAcknowledgedSeqFailsInsteadOfResendingForever() {
        var q = AppendQueue<Int>()
        _ = q.enqueue(seq: 1, 1)
        _ = q.enqueue(seq: 2, 2)
        XCTAssertEqual(q.replied(seq: 1, .stored), .send)
        XCTAssertEqual(q.nextGroup().map(\.seq), [2])
        XCTAssertEqual(q.replied(seq: 2, .stored), .drained)
        _ = q.enqueue(seq: 3, 3)
        // The primary failed over: 3's reply is lost, and the promoted replica only had seq 1.
        XCTAssertEqual(q.replied(seq: 3, .retryable), .verify)
        let (_, next) = q.verified(StoredTail(state: "running", topSeq: 1, entries: [])) { "\($0)" == $1 }
        XCTAssertEqual(next, .failed)
        XCTAssertEqual(q.failure, .storeWentBack(topSeq: 1))
    }
}

/// `ChannelTable.dropped`: a sharded channel lost by its shard is subscribed again.
final class ChannelTableDroppedTests: XCTestCase {
    func testADroppedChannelIsResubscribedAndItsSubscribersReRead() {
        var t = ChannelTable<String>()
        XCTAssertEqual(t.subscribe("ch", connected: true, ready: "a").send, .subscribe("ch"))
        XCTAssertEqual(t.confirmedSubscribe("ch").count, 1)
        XCTAssertEqual(t.dropped("ch"), .subscribe("ch"))
        XCTAssertEqual(t.state(of: "ch"), .subscribing)
        XCTAssertEqual(t.dropped("ch"), .subscribe("ch"), "dropped again before the confirmation")
        let wakes = t.confirmedSubscribe("ch")
        XCTAssertEqual(wakes.count, 1, "one re-read, not one per drop")
        guard case .resubscribed? = wakes.first else { return XCTFail("resubscribed") }
    }

    func testAnUnwantedDroppedChannelIsForgotten() {
        var t = ChannelTable<String>(idleUnsubscribeMs: 10)
        _ = t.subscribe("ch", connected: true, ready: "a")
        _ = t.confirmedSubscribe("ch")
        t.release("ch", nowMs: 0)
        XCTAssertEqual(t.sweep(nowMs: 10), [.unsubscribe("ch")])
        XCTAssertNil(t.dropped("ch"))
        XCTAssertNil(t.state(of: "ch"))
        XCTAssertEqual(t.wanted, [])
    }
}
