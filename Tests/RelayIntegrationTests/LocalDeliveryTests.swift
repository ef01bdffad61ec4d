import Foundation
import RelayCore
import RelayRedis
import RelayTestKit
import RelayTestSupport
import XCTest
import RelayEventStore

/// The worker running a generation delivers each event to its own clients once
/// its `XADD` is acknowledged, without subscribing the stream's live channel
/// (`LiveSource`); clients elsewhere still read the channel. Observed from Redis itself
/// (`PUBSUB NUMSUB`).
final class LocalDeliveryTests: RelayTestCase {
    /// Subscribers Redis counts on the live channel of stream `id`.
    private func liveSubscribers(_ id: String) throws -> Int {
        let out = try redis.cli("PUBSUB", "NUMSUB", streamKey(id, "live"))
        return Int(out.split(separator: "\n").last ?? "") ?? -1
    }

    private func running(_ id: String) throws -> Bool {
        try redis.cli("HGET", streamKey(id, "meta"), "state") == "running"
    }

    /// One relay worker generates; its POSTing client and a client resuming on the same
    /// worker (its replay held back 300 ms while live events arrive) get every event in
    /// order with the live channel unsubscribed; a client resuming on a second relay
    /// gets everything through pub/sub.
    func testTheOwningWorkerDeliversWithoutTheLiveChannelAndOthersStillReadIt() throws {
        let a = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "100", "RELAY_WORKERS": "1",
                                "RELAY_DEBUG_REPLAY_DELAY": "300ms"])
        let b = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "100"])
        let reference = referenceText(maxTokens: 300)
        let token = RelayProcess.token()
        let id = Chat.newID()
        let poster = try Chat.start(port: a.port, token: token, requestID: id, maxTokens: 300)
        var posted: [SSEMessage] = []
        for _ in 0..<10 { posted.append(try XCTUnwrap(try poster.nextEvent())) }
        XCTAssertTrue(try running(id), "the stream is live")
        XCTAssertEqual(try liveSubscribers(id), 0, "the owning worker does not subscribe the live channel for its own client")

        // A resume on the owning worker while it runs: replay (held back) + local live events.
        let sameWorker = try Chat.resume(port: a.port, token: token, requestID: id, lastEventID: "4")
        XCTAssertEqual(sameWorker.status, 200)
        // A resume on another instance: the live channel.
        let elsewhere = try Chat.resume(port: b.port, token: token, requestID: id, lastEventID: "0")
        XCTAssertEqual(elsewhere.status, 200)
        var remote: [SSEMessage] = []
        for _ in 0..<20 { remote.append(try XCTUnwrap(try elsewhere.nextEvent())) }
        XCTAssertTrue(try running(id), "the stream is still live")
        XCTAssertEqual(try liveSubscribers(id), 1, "only the other instance subscribes the live channel")

        posted += try poster.readAll()
        remote += try elsewhere.readAll()
        let resumed = try sameWorker.readAll()
        assertSequence(posted)
        assertSequence(remote)
        assertSequence(resumed, from: 5)
        XCTAssertEqual(Chat.text(posted), reference, "the POSTing client got the whole answer")
        XCTAssertEqual(Chat.text(remote), reference, "the other instance's client got the whole answer through pub/sub")
        XCTAssertEqual(resumed.map(\.data), Array(posted[4...]).map(\.data), "the same-worker resume got exactly the rest")
    }

    /// The generating relay is fenced mid-stream (another instance judged its lease lapsed
    /// and wrote `upstream_lost`, published on the channel this worker does not read): its
    /// own client still ends with that `upstream_lost`, right after the last event it got.
    func testAFencedGenerationsOwnClientEndsWithTheUpstreamLostFromRedis() throws {
        let a = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "50", "RELAY_WORKERS": "1"])
        let token = RelayProcess.token()
        let id = Chat.newID()
        let client = try Chat.start(port: a.port, token: token, requestID: id, maxTokens: 400)
        var events: [SSEMessage] = []
        for _ in 0..<5 { events.append(try XCTUnwrap(try client.nextEvent())) }
        XCTAssertEqual(try liveSubscribers(id), 0)
        // What another instance's lease check does once the lease lapsed (`Scripts.expireLease`),
        // with the lease deleted in the same script so the owner cannot refresh it in between.
        let lost = APIError(.upstreamLost, "the relay instance generating this answer stopped; retry the request").asEvent
        let fenced = try redis.cli(["EVAL", "redis.call('DEL', KEYS[4])\n" + Scripts.expireLease.text, "6",
                                    streamKey(id, "events"), streamKey(id, "meta"), streamKey(id, "live"),
                                    streamKey(id, "lease"), streamKey(id, "text"), streamKey(id, "offsets"),
                                    "200", "300000", lost.json, "1"])
        let fenceSeq = try XCTUnwrap(UInt64(fenced.split(separator: "\n").first ?? ""), "expireLease replied \(fenced)")
        events += try client.readAll(timeout: 10)
        assertSequence(events)
        XCTAssertEqual(events.last?.lastEventId, String(fenceSeq), "the terminal event is the fence's")
        XCTAssertTrue(events.last?.data.contains("\"upstream_lost\"") == true, events.last?.data ?? "no event")
        XCTAssertTrue(referenceText(maxTokens: 400).hasPrefix(Chat.text(events)), "the text before it is the answer's prefix")
    }

    /// The running generation holds its worker's `StreamSubscribers` entry. On the
    /// owning worker the POSTing client leaves early, so the stream has
    /// no client there for a while; then clients join at random positions and leave
    /// after a random number of events while the generation runs. Each one gets live
    /// events while the stream is still running (an entry dropped and re-made while the
    /// generation holds the old one would starve it until the end), gapless from its
    /// Last-Event-ID and identical to the stream; once it ended, no connection is left.
    func testClientsJoiningAndLeavingTheOwningWorkerMidStreamGetLiveEvents() throws {
        let a = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "30", "RELAY_WORKERS": "1"])
        let token = RelayProcess.token()
        let id = Chat.newID()
        let poster = try Chat.start(port: a.port, token: token, requestID: id, maxTokens: 150)
        var seen: UInt64 = 0
        for _ in 0..<5 { seen = UInt64(try XCTUnwrap(try poster.nextEvent()).lastEventId) ?? 0 }
        poster.close()
        // The worker notices at its next write; then the stream has no client there.
        try eventually(5, "the POSTing client gone") { try metric(a, "relay_live_connections") == 0 }
        // Events stored (and acknowledged) with no client on the worker.
        let gone = try topSeq(id)
        try eventually(5, "three events stored with no client on the worker") { try self.topSeq(id) >= gone + 3 }
        XCTAssertEqual(try liveSubscribers(id), 0)
        var rng = SplitMix64(seed: 0x5_1AB5)
        var clients: [(from: UInt64, events: [SSEMessage])] = []
        for round in 0..<10 {
            // Stored before it joins: what its replay may read. It must then get at least
            // two more, which only the generation's local delivery can bring while it runs.
            let top = try topSeq(id)
            let from = rng.next() % (top + 1)
            let c = try Chat.resume(port: a.port, token: token, requestID: id, lastEventID: String(from))
            XCTAssertEqual(c.status, 200)
            var got: [SSEMessage] = []
            let want = Int(top - from) + 3 + Int(rng.next() % 4)
            while got.count < want, let e = try c.nextEvent(timeout: 5) { got.append(e) }
            XCTAssertEqual(got.count, want, "round \(round): client from \(from) got live events")
            XCTAssertTrue(try running(id), "round \(round): the events came while the stream ran")
            c.close()
            try eventually(5, "round \(round): the client gone") { try metric(a, "relay_live_connections") == 0 }
            if round % 3 == 2 {   // sometimes no client at all for a while: a few events stored meanwhile
                let left = try topSeq(id)
                try eventually(5, "round \(round): events stored with no client") { try self.topSeq(id) >= left + 3 }
            }
            seen = max(seen, UInt64(got.last?.lastEventId ?? "") ?? 0)
            clients.append((from, got))
        }
        let last = try Chat.resume(port: a.port, token: token, requestID: id, lastEventID: String(seen))
        let tail = try last.readAll(timeout: 20)
        assertSequence(tail, from: seen + 1)
        let all = try Chat.resume(port: a.port, token: token, requestID: id, lastEventID: "0").readAll()
        assertSequence(all)
        XCTAssertEqual(Chat.text(all), referenceText(maxTokens: 150), "the stream is the answer")
        XCTAssertEqual(tail.map(\.data), all[Int(seen)...].map(\.data))
        for (i, c) in clients.enumerated() {
            XCTAssertEqual(c.events.map(\.data), all[Int(c.from)..<(Int(c.from) + c.events.count)].map(\.data),
                           "client \(i) from \(c.from): exactly the stream's events")
            XCTAssertEqual(c.events.first?.lastEventId, String(c.from + 1), "client \(i) starts right after its Last-Event-ID")
        }
        try eventually(5, "no connection or generation left counted") {
            try metric(a, "relay_live_connections") == 0 && metric(a, "relay_running_generations") == 0
        }
    }
}
