import XCTest
import RelayCore
import RelayHTTP
import RelayRedis
import RelayConfiguration
@testable import RelayServer

/// The consumer's state machine in-process (docs/PROTOCOL.md §6): attach to the live
/// channel, replay what the client lacks, then live events, each seq written once and
/// in order, whatever the interleaving.
final class SubscriptionTests: XCTestCase {
    private let id = try! RequestID(validating: "req-subscription-tests-0001")

    private func subscribe(_ host: InMemoryStreamHost, lastSent: UInt64, expiry: Int64? = nil) -> (Subscription, RecordingSink) {
        let sink = RecordingSink()
        let s = Subscription(id: id, owner: "u", sid: "s", sink: sink, host: host, lastSent: lastSent, tokenExpiry: expiry)
        s.start()
        return (s, sink)
    }

    func testAResumeFromEveryBoundaryWritesExactlyTheMissingEventsAndEnds() throws {
        let events = answer(deltas: 12)
        for k in 0...UInt64(events.count - 1) {
            let host = try InMemoryStreamHost()
            host.retained = events
            let (s, sink) = subscribe(host, lastSent: k)
            XCTAssertEqual(sink.ids, [], "nothing before the live channel is confirmed (k=\(k))")
            host.confirmSubscriptions()
            XCTAssertEqual(sink.ids, Array((k + 1)...13), "k=\(k)")
            XCTAssertTrue(sink.ended, "k=\(k): the response ends after done")
            XCTAssertEqual(s.outcome, "done")
            XCTAssertTrue(host.ended.first === s)
        }
    }

    func testLiveEventsThatArriveDuringTheReplayAreHeldAndWrittenOnceInOrder() throws {
        let events = answer(deltas: 9)
        let host = try InMemoryStreamHost()
        host.retained = Array(events[0..<6])   // 1…6 stored when the replay reads
        host.answerReadsAtOnce = false
        let (s, sink) = subscribe(host, lastSent: 2)
        host.confirmSubscriptions()
        // Live before the read answers: 5 and 6 duplicate the replay, 7 and 8 follow it.
        for e in events[4..<8] { s.live(e) }
        XCTAssertEqual(sink.ids, [], "live events wait for the replay")
        host.answerReads()
        XCTAssertEqual(sink.ids, [3, 4, 5, 6, 7, 8])
        s.live(events[7])   // a late duplicate
        s.live(events[8], frame: WireFrame.event(seq: 9, json: events[8].json))
        s.live(events[9])
        XCTAssertEqual(sink.ids, [3, 4, 5, 6, 7, 8, 9, 10])
        XCTAssertTrue(sink.ended)
    }

    func testALiveEventThatSkipsASeqReadsTheMissingOnesFromTheLog() throws {
        let events = answer(deltas: 6)
        let host = try InMemoryStreamHost()
        host.retained = Array(events[0..<3])
        let (s, sink) = subscribe(host, lastSent: 0)
        host.confirmSubscriptions()
        XCTAssertEqual(sink.ids, [1, 2, 3])
        host.retained = Array(events[0..<6])   // 4 and 5 were stored, their live messages lost
        s.live(events[5])
        XCTAssertEqual(sink.ids, [1, 2, 3, 4, 5, 6])
        XCTAssertEqual(host.readCount, 2)
    }

    func testAClientBehindTheRetainedWindowGetsTheSameEventsBackFromTheText() throws {
        let events = answer(deltas: 30)
        let host = try InMemoryStreamHost()
        host.retained = Array(events[19...])   // 20…31 retained
        for e in events.dropLast() { host.textBySeq[e.seq] = "t\(e.seq) " }
        let (s, sink) = subscribe(host, lastSent: 4)
        host.confirmSubscriptions()
        XCTAssertEqual(sink.ids, Array(5...31), sink.text)
        XCTAssertEqual(s.outcome, "done")
        // Each event as it was first sent: its own id and its own delta, not one merged delta.
        XCTAssertEqual(sink.events.map(\.data), events[4...].map(\.json))
    }

    func testWithoutLosslessResumeAClientBehindTheWindowGetsResumeGap() throws {
        let host = try InMemoryStreamHost()
        host.lossless = false
        host.retained = Array(answer(deltas: 30)[19...])
        let (s, sink) = subscribe(host, lastSent: 4)
        host.confirmSubscriptions()
        XCTAssertEqual(sink.ids, [4], "the error repeats the last seq written")
        guard case .error(409, "resume_gap", _)? = try? StreamEvent(json: sink.events.first?.data ?? "") else {
            return XCTFail("expected resume_gap, got \(sink.text)")
        }
        XCTAssertEqual(s.outcome, "error:resume_gap")
        XCTAssertTrue(sink.ended)
    }

    func testARevocationEndsTheStreamWithAnErrorThatRepeatsTheLastSeq() throws {
        let host = try InMemoryStreamHost()
        host.retained = Array(answer(deltas: 5)[0..<3])
        let (s, sink) = subscribe(host, lastSent: 0)
        host.confirmSubscriptions()
        s.fail(.sessionRevoked)
        XCTAssertEqual(sink.ids, [1, 2, 3, 3])
        guard case .error(401, "session_revoked", _)? = try? StreamEvent(json: sink.events.last?.data ?? "") else {
            return XCTFail("expected session_revoked, got \(sink.text)")
        }
        XCTAssertTrue(sink.ended)
        s.live(answer(deltas: 5)[3])
        XCTAssertEqual(sink.ids.count, 4, "nothing is written after the end")
    }

    func testAFailedReadIsReportedAndRetriedWithoutLosingHeldLiveEvents() throws {
        let events = answer(deltas: 4)
        let host = try InMemoryStreamHost()
        host.retained = Array(events[0..<2])
        host.failNextReads = 1
        let (s, sink) = subscribe(host, lastSent: 0)
        host.confirmSubscriptions()
        XCTAssertEqual(host.troubled, 1)
        XCTAssertEqual(sink.ids, [])
        s.live(events[2])   // seq 3 skips 1–2: a replay is asked for
        XCTAssertEqual(sink.ids, [1, 2, 3])
    }

    func testASlowReaderIsClosedWithoutAnEventOnceItsBacklogOutlastsTheWindow() throws {
        var config = RelayConfig()
        config.maxPendingBytes = 1_000
        let host = try InMemoryStreamHost(config: config)
        host.limits = SlowLinkCoalescer.Limits(highWaterBytes: .max)
        let events = answer(deltas: 10)
        let (s, sink) = subscribe(host, lastSent: 0)
        host.confirmSubscriptions()
        sink.pendingOutputBytes = 5_000
        s.live(events[0])
        XCTAssertFalse(sink.aborted, "over the limit, but not yet for the whole window")
        host.nowMs += 501   // past SlowConsumerPolicy's 500 ms window
        s.live(events[1])
        XCTAssertTrue(sink.aborted)
        XCTAssertEqual(s.outcome, "aborted")
        XCTAssertFalse(sink.ended, "no chunked terminator: the client must see a cut and resume")
    }

    func testABackedUpLinkGetsItsDeltasMergedUnderTheHighestSeq() throws {
        let host = try InMemoryStreamHost()
        host.limits = SlowLinkCoalescer.Limits(highWaterBytes: 100, flushIntervalMs: 250)
        let events = answer(deltas: 6)
        let (s, sink) = subscribe(host, lastSent: 0)
        host.confirmSubscriptions()
        s.live(events[0])
        XCTAssertEqual(sink.ids, [1])
        sink.unsentBytes = 10_000
        host.nowMs += 200   // past the backlog re-check interval
        for e in events[1..<5] { s.live(e) }
        sink.unsentBytes = 0
        host.nowMs += 1_000
        s.live(events[5])   // 6
        s.live(events[6])   // done: what is held is written before it
        let ids = sink.ids
        XCTAssertEqual(ids.first, 1)
        XCTAssertEqual(ids.last, 7)
        XCTAssertLessThan(ids.count, 7, "some deltas were merged: \(ids)")
        XCTAssertEqual(ids, ids.sorted())
        let text = sink.events.compactMap { e -> String? in
            if case .delta(let t)? = try? StreamEvent(json: e.data) { return t }
            return nil
        }.joined()
        XCTAssertEqual(text, (1...6).map { "t\($0) " }.joined(), "merging loses and repeats nothing")
    }

    func testAClientThatClosesIsForgottenAndGetsNothingMore() throws {
        let host = try InMemoryStreamHost()
        host.retained = Array(answer(deltas: 5)[0..<2])
        let (s, sink) = subscribe(host, lastSent: 0)
        host.confirmSubscriptions()
        sink.closeByClient()
        XCTAssertEqual(s.outcome, "client_closed")
        XCTAssertTrue(host.ended.first === s)
        s.live(answer(deltas: 5)[2])
        XCTAssertEqual(sink.ids, [1, 2])
    }
}
