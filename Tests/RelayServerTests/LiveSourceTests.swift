import XCTest
@testable import RelayServer

/// `LiveSource`: local delivery on the generation's worker (no channel, replay only what
/// the client lacks), the channel elsewhere, the fallback when the local generation
/// stops, and the channel reference released exactly once.
final class LiveSourceTests: XCTestCase {
    func testWithoutALocalGenerationTheChannelIsSubscribedAndReleasedOnce() {
        var s = LiveSource()
        XCTAssertEqual(s.attach(lastSent: 0, localAckedSeq: nil), .subscribe)
        XCTAssertTrue(s.holdsChannel)
        XCTAssertFalse(s.localStopped(), "a channel reader is not moved by a local generation's end")
        XCTAssertTrue(s.holdsChannel)
        XCTAssertTrue(s.end(), "the channel reference is released")
        XCTAssertFalse(s.end(), "only once")
        XCTAssertEqual(s.state, .ended)
    }

    func testAFreshStreamOnTheOwningWorkerNeedsNeitherChannelNorReplay() {
        var s = LiveSource()
        XCTAssertEqual(s.attach(lastSent: 0, localAckedSeq: 0), .local(replay: false))
        XCTAssertFalse(s.holdsChannel)
        XCTAssertFalse(s.end(), "nothing to release")
    }

    func testAResumeOnTheOwningWorkerReplaysOnlyWhatTheClientLacks() {
        for (lastSent, acked, replay) in [(0, 5, true), (4, 5, true), (5, 5, false), (7, 5, false)] as [(UInt64, UInt64, Bool)] {
            var s = LiveSource()
            XCTAssertEqual(s.attach(lastSent: lastSent, localAckedSeq: acked), .local(replay: replay),
                           "Last-Event-ID \(lastSent) with \(acked) acknowledged")
            XCTAssertFalse(s.holdsChannel)
        }
    }

    func testWhenTheLocalGenerationStopsTheChannelIsSubscribedOnceAndReleasedOnce() {
        var s = LiveSource()
        _ = s.attach(lastSent: 3, localAckedSeq: 3)
        XCTAssertTrue(s.localStopped(), "subscribe the channel and replay (a fence's upstream_lost is in Redis)")
        XCTAssertTrue(s.holdsChannel)
        XCTAssertFalse(s.localStopped(), "one subscription only")
        XCTAssertTrue(s.end())
        XCTAssertFalse(s.end())
    }

    func testAnEndedSubscriptionNeitherSubscribesNorReleases() {
        var s = LiveSource()
        _ = s.attach(lastSent: 0, localAckedSeq: 0)
        XCTAssertFalse(s.end())
        XCTAssertFalse(s.localStopped(), "ended before the generation stopped: no subscription")
        XCTAssertFalse(s.holdsChannel)
        var t = LiveSource()
        XCTAssertFalse(t.end(), "ended before attaching")
        XCTAssertFalse(t.localStopped())
    }

    func testAttachingTwiceChangesNothing() {
        var s = LiveSource()
        XCTAssertEqual(s.attach(lastSent: 0, localAckedSeq: nil), .subscribe)
        XCTAssertEqual(s.attach(lastSent: 0, localAckedSeq: 0), .local(replay: false), "no second reference")
        XCTAssertTrue(s.holdsChannel)
        XCTAssertTrue(s.end())
    }
}
