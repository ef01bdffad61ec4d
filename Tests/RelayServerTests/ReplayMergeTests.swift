import RelayCore
import RelayTestKit
import RelayEventStore
import XCTest
@testable import RelayServer

private func ev(_ seq: UInt64, _ type: String = "delta") -> SequencedEvent {
    type == "delta" ? SequencedEvent(seq: seq, json: "{\"type\":\"delta\",\"content\":\"t\(seq)\"}")
        : SequencedEvent(seq: seq, json: "{\"type\":\"\(type)\"}")
}

/// Every branch of `ReplayMerge`, then a simulated subscription fed reordered, lost and
/// repeated live events with a pub/sub reconnect at every step.
final class ReplayMergeTests: XCTestCase {
    func testLiveDuplicateIsDropped() {
        var m = ReplayMerge(lastSent: 5)
        XCTAssertEqual(m.live(ev(5)), .drop)
        XCTAssertEqual(m.live(ev(3)), .drop)
        XCTAssertEqual(m.lastSent, 5)
        XCTAssertTrue(m.held.isEmpty)
    }

    func testLiveNextSeqIsWrittenAtOnce() {
        var m = ReplayMerge(lastSent: 5)
        XCTAssertEqual(m.live(ev(6)), .write)
        m.wrote(ev(6))
        XCTAssertEqual(m.lastSent, 6)
    }

    func testLiveSkippingASeqIsHeldAndAsksForAReplay() {
        var m = ReplayMerge(lastSent: 5)
        XCTAssertEqual(m.live(ev(8)), .replay)
        XCTAssertEqual(m.held, [ev(8)])
        XCTAssertTrue(m.requestReplay())
        XCTAssertTrue(m.replaying)
    }

    func testLiveDuringAReplayIsHeldEvenWhenItIsADuplicate() {
        var m = ReplayMerge(lastSent: 5)
        XCTAssertTrue(m.requestReplay())
        XCTAssertEqual(m.live(ev(6)), .hold)
        XCTAssertEqual(m.live(ev(2)), .hold)
        let merged = m.finishReplay([])
        XCTAssertEqual(merged.events, [ev(6)], "the held duplicate is dropped in the merge")
        XCTAssertFalse(merged.replayAgain)
    }

    func testReplayAskedDuringAReplayRunsOnceMore() {
        var m = ReplayMerge(lastSent: 0)
        XCTAssertTrue(m.requestReplay())
        XCTAssertFalse(m.requestReplay())
        XCTAssertFalse(m.requestReplay())
        let merged = m.finishReplay([ev(1)])
        XCTAssertTrue(merged.replayAgain)
        XCTAssertFalse(m.replaying)
        XCTAssertTrue(m.requestReplay())
        XCTAssertFalse(m.finishReplay([]).replayAgain, "the repeat is asked for once only")
    }

    func testAReadThatBeginsWithCaughtUpDeltasMergesLikeAnyRead() {
        // `EventLog.read` gives events 6…8 back from the text key, then the window's 9, 10.
        var m = ReplayMerge(lastSent: 5)
        XCTAssertTrue(m.requestReplay())
        XCTAssertEqual(m.live(ev(11)), .hold)
        let merged = m.finishReplay([ev(6), ev(7), ev(8), ev(9), ev(10)])
        XCTAssertEqual(m.take(merged.events).events.map(\.seq), [6, 7, 8, 9, 10, 11])
        XCTAssertEqual(m.lastSent, 11)
    }

    func testFinishReplayDropsWrittenEventsAndAppendsHeldInOrder() {
        var m = ReplayMerge(lastSent: 2)
        XCTAssertEqual(m.live(ev(6)), .replay)
        XCTAssertTrue(m.requestReplay())
        XCTAssertEqual(m.live(ev(5)), .hold)
        XCTAssertEqual(m.live(ev(4)), .hold)
        let merged = m.finishReplay([ev(1), ev(2), ev(3)])
        XCTAssertEqual(merged.events.map(\.seq), [3, 4, 5, 6])
        XCTAssertFalse(merged.replayAgain)
        XCTAssertTrue(m.held.isEmpty)
    }

    func testFinishReplayWithAHeldGapAsksForAnotherReplay() {
        var m = ReplayMerge(lastSent: 0)
        XCTAssertTrue(m.requestReplay())
        XCTAssertEqual(m.live(ev(3)), .hold)
        XCTAssertEqual(m.live(ev(5)), .hold)
        let merged = m.finishReplay([ev(1), ev(2)])
        XCTAssertEqual(merged.events.map(\.seq), [1, 2, 3])
        XCTAssertTrue(merged.replayAgain, "5 skips 4")
    }

    func testFinishReplayIgnoresHeldEventsBelowTheBatch() {
        var m = ReplayMerge(lastSent: 0)
        XCTAssertTrue(m.requestReplay())
        XCTAssertEqual(m.live(ev(1)), .hold)
        let merged = m.finishReplay([ev(1), ev(2)])
        XCTAssertEqual(merged.events.map(\.seq), [1, 2])
        XCTAssertFalse(merged.replayAgain)
    }

    func testTakeWritesOnlyConsecutiveEventsAndStopsAtTheTerminalOne() {
        var m = ReplayMerge(lastSent: 1)
        let (out, terminal) = m.take([ev(1), ev(2), ev(4), ev(3, "done"), ev(4)])
        XCTAssertEqual(out.map(\.seq), [2, 3])
        XCTAssertTrue(terminal)
        XCTAssertEqual(m.lastSent, 3)
        var n = ReplayMerge(lastSent: 0)
        let (none, t2) = n.take([ev(2)])
        XCTAssertTrue(none.isEmpty)
        XCTAssertFalse(t2)
        XCTAssertEqual(n.take([ev(1, "error")]).terminal, true)
    }

    func testAFailedReadLetsTheRetryStart() {
        var m = ReplayMerge(lastSent: 0)
        XCTAssertTrue(m.requestReplay())
        m.readFailed()
        XCTAssertFalse(m.replaying)
        XCTAssertEqual(m.live(ev(1)), .write)
        XCTAssertTrue(m.requestReplay())
    }

    func testAHeldBackReplayHoldsLiveEventsUntilReleased() {
        var m = ReplayMerge(lastSent: 0)
        m.holdLive()
        XCTAssertEqual(m.live(ev(1)), .hold)
        XCTAssertFalse(m.requestReplay(), "held: counts as under way")
        m.releaseHold()
        XCTAssertTrue(m.requestReplay())
        let merged = m.finishReplay([])
        XCTAssertEqual(merged.events, [ev(1)])
        XCTAssertTrue(merged.replayAgain)
    }

    // MARK: Simulation

    /// A subscription driven by a scripted network: the generation publishes 1…N; the
    /// live channel reorders, drops (pub/sub reconnects) and repeats messages; replays
    /// read a retained window of `maxLen` events, answered after a random number of
    /// steps. At every step a reconnect may force a replay. The client must receive
    /// each seq exactly once and in order; with lossless off, a window that moved past
    /// the client must end the stream as a gap, never skip silently.
    func testScriptedNetworksDeliverEverySeqOnceInOrder() {
        for seed in UInt64(1)...400 {
            simulate(seed: seed, lossless: seed % 2 == 0)
        }
    }

    private func simulate(seed: UInt64, lossless: Bool) {
        var rng = SplitMix64(seed: seed)
        let total = UInt64(20 + rng.next() % 40)
        let maxLen = UInt64(3 + rng.next() % 30)
        let resumeFrom = rng.next() % 4 == 0 ? rng.next() % 5 : 0
        var m = ReplayMerge(lastSent: resumeFrom)
        var delivered: [UInt64] = []
        var published: UInt64 = 0
        var inFlightLive: [SequencedEvent] = []
        var pendingRead: (events: [SequencedEvent], dueIn: Int)?
        var ended = false
        var steps = 0

        func deliver(_ list: [SequencedEvent]) {
            let (out, terminal) = m.take(list)
            delivered += out.map(\.seq)
            if terminal { ended = true }
        }
        func read() -> [SequencedEvent] {
            let low = published > maxLen ? published - maxLen + 1 : 1
            guard published >= low else { return [] }
            return (low...published).filter { $0 > m.lastSent }.map { $0 == total ? ev($0, "done") : ev($0) }
        }
        func startReplay() {
            if m.requestReplay() { pendingRead = (read(), Int(rng.next() % 4)) }
        }
        startReplay()
        while !ended && steps < 5_000 {
            steps += 1
            if published < total && rng.next() % 3 != 0 {
                published += 1
                let e = published == total ? ev(published, "done") : ev(published)
                if rng.next() % 7 != 0 { inFlightLive.append(e) }       // else: lost during a reconnect
                if rng.next() % 9 == 0 { inFlightLive.append(e) }       // repeated
            }
            if !inFlightLive.isEmpty && rng.next() % 2 == 0 {
                let i = Int(rng.next() % UInt64(inFlightLive.count))     // reordered
                let e = inFlightLive.remove(at: i)
                switch m.live(e) {
                case .drop, .hold: break
                case .write:
                    m.wrote(e)
                    delivered.append(e.seq)
                    if e.isTerminal { ended = true }
                case .replay: startReplay()
                }
            }
            if rng.next() % 11 == 0 { startReplay() }                      // pub/sub reconnected
            if var r = pendingRead {
                if r.dueIn > 0 {
                    r.dueIn -= 1
                    pendingRead = r
                } else {
                    pendingRead = nil
                    if rng.next() % 13 == 0 {                               // Redis read failed: retried later
                        m.readFailed()
                        startReplay()
                        continue
                    }
                    // As `EventLog.read` answers: the window's events, preceded by the
                    // original deltas from the text key when the window moved past lastSent.
                    var events = r.events
                    switch CatchUpEvents.continuity(after: m.lastSent, events: r.events, lossless: lossless) {
                    case .complete: break
                    case .catchUp(let to):
                        events = ((m.lastSent + 1)...to).map { ev($0) } + r.events
                    case .gap(let to):
                        XCTAssertGreaterThan(to, m.lastSent, "seed \(seed)")
                        XCTAssertEqual(delivered, Array(stride(from: resumeFrom + 1, through: m.lastSent, by: 1)), "seed \(seed)")
                        return
                    }
                    let merged = m.finishReplay(events)
                    deliver(merged.events)
                    if merged.replayAgain && !ended { startReplay() }
                }
            }
            if published == total && inFlightLive.isEmpty && pendingRead == nil && !ended { startReplay() }
        }
        XCTAssertTrue(ended, "seed \(seed): the stream never ended")
        XCTAssertEqual(delivered, Array((resumeFrom + 1)...total), "seed \(seed): every seq once, in order")
    }
}
