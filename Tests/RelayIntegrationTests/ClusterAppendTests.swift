import Foundation
import RelayConfiguration
import RelayCore
import RelayLoop
import RelayRedis
import RelayTestKit
import RelayTestSupport
import XCTest
import RelayCluster
import RelayEventStore

/// The append commands written straight in RESP (`RESPCommand`) on a
/// Redis Cluster: `ClusterClient` reads each command's arguments back from the bytes and
/// resends them after `ASK` / `TRYAGAIN` / `MOVED` while the stream's slot migrates key
/// by key under a running appender. Odd deltas (multi-byte UTF-8, NUL, CR LF, RESP
/// markers, U+2028) must be stored byte-exact, each event once and in order, with the
/// lossless-resume text intact, read from the slot's new primary.
final class ClusterAppendTests: RedisClusterTestCase {
    /// Deltas whose bytes differ from their characters, with the RESP and SSE markers.
    static let odd = ["a\u{0}b", "\r\n", "$3\r\n", "*2\r\n", "👩‍👩‍👧‍👦", " مَرْحَبًا", "\u{2028}", "\u{2029}", "e\u{301}",
                      "🇸🇦", "\u{FFFF}", "\"\\", "\t", String(repeating: "é", count: 300), "x"]

    /// The delta of event `seq`.
    static let delta: @Sendable (Int) -> String = { seq in ClusterAppendTests.odd[seq % ClusterAppendTests.odd.count] + "\(seq)" }

    /// A slot handed over on its old owner only (`CLUSTER SETSLOT … NODE <new>`), the new
    /// owner not told yet: the two redirect to each other (`MOVED` ping-pong), as they do
    /// for a moment while a migration's `SETSLOT NODE` reaches the nodes one at a time.
    /// Commands sent meanwhile wait (backoff from the second redirect on, within the
    /// outage grace) instead of failing after a few immediate redirects, and once the new
    /// owner takes the slot they are answered, in the order they were sent.
    func testCommandsWaitOutTwoPrimariesRedirectingToEachOtherAndStayInOrder() throws {
        let h = try ClusterHarness(url: cluster.url)
        addTeardownBlock { h.stop() }
        try eventually(10, "the cluster client to connect") { h.connections.value > 0 }
        let key = "relay:test:{ping-pong}:k"
        let slot = HashSlot.of(key)
        let from = try cluster.primaryPort(forSlot: slot)
        let to = try XCTUnwrap(try cluster.primaries(askingPort: from).keys.first { $0 != from })
        let toID = try cluster.nodeID(port: to)
        try cluster.cli(from, ["CLUSTER", "SETSLOT", String(slot), "NODE", toID])
        XCTAssertTrue(try cluster.cli(to, ["SET", key, "direct"]).hasPrefix("MOVED"), "the new owner still redirects to the old one")
        XCTAssertTrue(try cluster.cli(from, ["SET", key, "direct"]).hasPrefix("MOVED"), "the old owner redirects to the new one")

        let got = LockedBox<[String]>([])
        nonisolated(unsafe) let client = h.client
        h.run {
            for i in 0..<5 {
                client.send(["SET", key, "v\(i)"]) { r in got.mutate { $0.append(r.errorMessage ?? r.string ?? "?") } }
            }
        }
        // The window in which the two nodes disagree (longer than 5 immediate redirects).
        try consistently(for: 0.4, "nothing answered while the nodes redirect to each other (\(got.value))") { got.value.isEmpty }
        try cluster.cli(to, ["CLUSTER", "SETSLOT", String(slot), "NODE", toID])
        try eventually(10, "the replies") { got.value.count == 5 }
        XCTAssertEqual(got.value, Array(repeating: "OK", count: 5))
        XCTAssertEqual(try cluster.cli(to, ["GET", key]), "v4", "written in the order sent")
        let counters = try h.counters()
        XCTAssertGreaterThan(counters.moved, 10, "each command was redirected more than twice: \(counters)")
    }

    func testAppendsFollowRedirectsWithTheirArgumentsIntactWhileTheSlotMigrates() throws {
        let h = try ClusterHarness(url: cluster.url)
        defer { h.stop() }
        try eventually(15, "the cluster client to connect") { h.connections.value > 0 }
        let id = try RequestID(validating: "clusterappend" + UUID().uuidString.replacingOccurrences(of: "-", with: ""))
        let k = StreamKeys(id)
        let slot = HashSlot.of(k.meta)
        let from = try cluster.primaryPort(forSlot: slot)
        let to = try XCTUnwrap(try cluster.primaries(askingPort: from).keys.first { $0 != from })

        let created = LockedBox<Bool?>(nil)
        let drained = LockedBox(0)
        let failure = LockedBox<String?>(nil)
        let acknowledged = LockedBox<[UInt64]>([])
        let appender = LockedBox<StreamAppender?>(nil)
        // Freed on the loop thread before `h.stop()` (defers run in reverse): not from the
        // test thread while the loop runs (libevent has no locking).
        defer { h.run { appender.value = nil } }
        nonisolated(unsafe) let log = h.log
        let loop = h.loop
        h.run {
            log.create(id, owner: "o", sid: "s", instance: "test", nowMs: 1, budgetKey: "", promptEstimate: 0) { r in
                created.value = (try? r.get()) ?? false
            }
            let a = StreamAppender(log: log, loop: loop, id: id)
            a.onDrained = { drained.mutate { $0 += 1 } }
            a.onPermanentFailure = { f in failure.value = "\(f)" }
            a.onAcknowledged = { seq, _ in acknowledged.mutate { $0.append(seq) } }
            appender.value = a
        }
        try eventually(10, "the stream to be created") { created.value == true }

        // Deltas 1 … total: a batch every 10 ms on the loop while the slot migrates.
        let total = 400
        let delta = Self.delta
        let sent = LockedBox(0)
        let feeder = Thread {
            var seq = 1
            while seq <= total {
                let batch = Array(seq..<min(total + 1, seq + 4))
                h.run {
                    for s in batch {
                        let t = delta(s)
                        appender.value!.append(seq: UInt64(s), event: .delta(t))
                    }
                    sent.value = batch.last!
                }
                seq += batch.count
                usleep(10_000)   // pacing on purpose: a batch every 10 ms while the slot migrates
            }
        }
        feeder.start()
        try eventually(10, "appends under way") { sent.value >= 40 }
        let moved = try cluster.migrate(slot: slot, to: to, pauseMs: 150)
        XCTAssertGreaterThanOrEqual(moved, 3, "the stream's keys were moved one by one")
        try eventually(20, "every delta queued") { sent.value == total }
        let doneJSON = StreamEvent.done(finishReason: "stop", usage: Usage(promptTokens: 1, completionTokens: total)).json
        h.run { appender.value!.append(seq: UInt64(total + 1), event: try! StreamEvent(json: doneJSON)) }
        try eventually(20, "the appender to drain after the final event") {
            failure.value != nil || (drained.value > 0 && acknowledged.value.last == UInt64(total + 1))
        }
        XCTAssertNil(failure.value)
        XCTAssertEqual(acknowledged.value, Array(1...UInt64(total + 1)), "each event acknowledged once, in order")

        // Read back through the cluster client (from the slot's new primary).
        let stored = LockedBox<[SequencedEvent]?>(nil)
        let caughtUp = LockedBox<[SequencedEvent]?>(nil)
        let textRead = LockedBox(false)
        h.run {
            log.range(id, after: 0) { r in stored.value = (try? r.get()) ?? [] }
            log.catchUp(id, from: 0, to: UInt64(total)) { r in
                caughtUp.value = (try? r.get()) ?? nil
                textRead.value = true
            }
        }
        try eventually(10, "the read-back") { stored.value != nil && textRead.value }
        let expected = (1...total).map { SequencedEvent(seq: UInt64($0), json: StreamEvent.delta(delta($0)).json) }
            + [SequencedEvent(seq: UInt64(total + 1), json: doneJSON)]
        XCTAssertEqual(stored.value?.count, expected.count)
        for (got, want) in zip(stored.value ?? [], expected) where got != want {
            XCTFail("seq \(want.seq): stored \(got.seq) \(Array(got.json.utf8).count) bytes, sent \(Array(want.json.utf8).count) bytes")
            break
        }
        XCTAssertEqual(caughtUp.value, Array(expected.prefix(total)),
                       "the lossless-resume text gives every delta back byte-exact, at its own seq")
        XCTAssertEqual(try cluster.primaryPort(forSlot: slot), to)
        XCTAssertEqual(try cluster.cli(to, ["EXISTS", k.events]), "1")
        // Every seq's end offset as written: binary `SETRANGE`s (bytes ≥ 0x80 are not
        // UTF-8), resent after redirects as their own bytes (`ClusterClient` keeps them).
        var ends: [String] = []
        var end = 0
        for seq in 1...total {
            end += delta(seq).utf8.count
            ends.append(String(end))
        }
        XCTAssertTrue(ends.contains { (Int($0) ?? 0) & 0x80 != 0 }, "some offset has a byte that is not UTF-8")
        let read = try cluster.cli(to, ["BITFIELD", k.offsets] + (1...total).flatMap { ["GET", "u32", "#\($0)"] })
        XCTAssertEqual(read.split(separator: "\n").map(String.init), ends, "each seq's u32 end offset")
        let counters = try h.counters()
        XCTAssertGreaterThan(counters.ask + counters.moved + counters.retried, 0, "the appends did run into the migration: \(counters)")
        print("cluster append: \(moved) keys moved, \(counters)")
    }
}
