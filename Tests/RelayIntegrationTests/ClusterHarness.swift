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

/// A `ClusterClient` on its own loop thread, as a worker runs it, and an `EventLog` over
/// it (a lossless, sharded log: `maxLen` 1,000, TTL 60,000 ms). Everything is posted to
/// the loop; `connections` counts the client's `onConnect`s.
final class ClusterHarness: @unchecked Sendable {
    let loop: EventLoop
    let client: ClusterClient
    /// The event log over `client`.
    let log: EventLog
    let connections = LockedBox(0)
    private let thread: Thread

    /// - Parameters:
    ///   - url: a `redis+cluster://` URL (seeds).
    ///   - graceMs: the client's outage grace (ms): how long a command waits out redirects
    ///     and lost connections before it is answered with an error.
    ///   - loadScripts: whether `log.connected()` runs on each connect (it loads the log's
    ///     scripts, `SCRIPT LOAD` on every primary: off for tests that count the client's
    ///     commands and connections).
    init(url: String, graceMs: UInt64 = 10_000, loadScripts: Bool = true) throws {
        loop = try EventLoop()
        client = ClusterClient(loop: loop, endpoint: try RedisEndpoint.parse(url), outageGraceMs: graceMs)
        log = EventLog(connection: client, settings: EventStoreSettings(maxLen: 1000, ttlMs: 60_000, lossless: true), sharded: true)
        let l = loadScripts ? log : nil
        let n = connections
        client.onConnect = {
            l?.connected()
            n.mutate { $0 += 1 }
        }
        let lp = loop
        nonisolated(unsafe) let c = client
        loop.post { c.connect() }
        thread = Thread { lp.run() }
        thread.start()
    }

    /// Runs `body` on the loop.
    func run(_ body: @escaping @Sendable () -> Void) { loop.post(body) }

    /// Runs `body` on the loop with the client.
    func withClient(_ body: @escaping @Sendable (ClusterClient) -> Void) {
        nonisolated(unsafe) let c = client
        loop.post { body(c) }
    }

    /// The client's counters, read on the loop (waits up to 5 s).
    func counters() throws -> ClusterClient.Counters {
        let got = LockedBox<ClusterClient.Counters?>(nil)
        withClient { got.value = $0.counters }
        try eventually(5, "the counters read on the loop", every: 0.005) { got.value != nil }
        return try XCTUnwrap(got.value, "the counters")
    }

    /// Closes the client and stops the loop; waits up to 5 s for the thread to end.
    func stop() {
        let lp = loop
        nonisolated(unsafe) let c = client
        loop.post { c.close(); lp.stop() }
        let t = thread
        pollUntil(timeout: 5) { t.isFinished }
    }
}
