import RelayTestKit
import XCTest
@testable import RelayRedis

/// `ChannelTable`: reference counts, idle unsubscribe on a virtual clock, crossing
/// `SUBSCRIBE`/`UNSUBSCRIBE` confirmations, and reconnects at every step.
final class ChannelTableTests: XCTestCase {
    typealias Table = ChannelTable<String>

    private func ready(_ wakes: [Table.Wake]) -> [String] {
        wakes.compactMap { if case .ready(let w) = $0 { return w } else { return nil } }
    }
    private func resubscribed(_ wakes: [Table.Wake]) -> Int {
        wakes.filter { if case .resubscribed = $0 { return true } else { return false } }.count
    }

    func testFirstSubscribeSendsAndWaitsLaterOnesJoinOrRunAtOnce() {
        var t = Table()
        var r = t.subscribe("c", connected: true, ready: "a")
        XCTAssertNil(r.runNow)
        XCTAssertEqual(r.send, .subscribe("c"))
        r = t.subscribe("c", connected: true, ready: "b")
        XCTAssertNil(r.runNow)
        XCTAssertNil(r.send, "one command per channel in flight")
        XCTAssertEqual(ready(t.confirmedSubscribe("c")), ["a", "b"])
        XCTAssertEqual(t.state(of: "c"), .subscribed)
        r = t.subscribe("c", connected: true, ready: "later")
        XCTAssertEqual(r.runNow, "later")
        XCTAssertEqual(t.refs(of: "c"), 3)
    }

    func testSubscribeWhileDisconnectedSendsNothingUntilReconnect() {
        var t = Table()
        XCTAssertNil(t.subscribe("c", connected: false, ready: "a").send)
        XCTAssertEqual(t.reconnected(), [.subscribe("c")])
        let wakes = t.confirmedSubscribe("c")
        XCTAssertEqual(ready(wakes), ["a"])
        XCTAssertEqual(resubscribed(wakes), 1)
    }

    func testIdleChannelsAreUnsubscribedAfterTheIdleTime() {
        let clock = VirtualClock()
        var t = Table(idleUnsubscribeMs: 30_000)
        _ = t.subscribe("c", connected: true, ready: "a")
        _ = t.confirmedSubscribe("c")
        t.release("c", nowMs: clock.loopMs)
        t.release("c", nowMs: clock.loopMs)
        XCTAssertEqual(t.refs(of: "c"), 0)
        clock.advance(by: 29_999)
        XCTAssertTrue(t.sweep(nowMs: clock.loopMs).isEmpty)
        clock.advance(by: 1)
        XCTAssertEqual(t.sweep(nowMs: clock.loopMs), [.unsubscribe("c")])
        XCTAssertEqual(t.state(of: "c"), .unsubscribing)
        XCTAssertTrue(t.sweep(nowMs: clock.loopMs).isEmpty, "sent once")
        XCTAssertNil(t.confirmedUnsubscribe("c"))
        XCTAssertNil(t.state(of: "c"))
        t.release("unknown", nowMs: 0)
        XCTAssertTrue(t.confirmedSubscribe("unknown").isEmpty)
        XCTAssertNil(t.confirmedUnsubscribe("unknown"))
    }

    func testAQuickReturnReusesTheChannelAndANewSubscriberDuringUnsubscribeResubscribes() {
        let clock = VirtualClock()
        var t = Table(idleUnsubscribeMs: 1_000)
        _ = t.subscribe("c", connected: true, ready: "a")
        _ = t.confirmedSubscribe("c")
        t.release("c", nowMs: clock.loopMs)
        clock.advance(by: 500)
        XCTAssertEqual(t.subscribe("c", connected: true, ready: "b").runNow, "b", "still subscribed")
        t.release("c", nowMs: clock.loopMs)
        clock.advance(by: 1_000)
        XCTAssertEqual(t.sweep(nowMs: clock.loopMs), [.unsubscribe("c")])
        let r = t.subscribe("c", connected: true, ready: "d")
        XCTAssertNil(r.runNow)
        XCTAssertNil(r.send, "waits for the UNSUBSCRIBE confirmation")
        XCTAssertEqual(t.confirmedUnsubscribe("c"), .subscribe("c"))
        XCTAssertEqual(ready(t.confirmedSubscribe("c")), ["d"])
    }

    func testReconnectDropsUnwantedChannelsAndTellsSubscribersOfTheOthers() {
        var t = Table()
        _ = t.subscribe("a", connected: true, ready: "x")
        _ = t.subscribe("b", connected: true, ready: "y")
        _ = t.confirmedSubscribe("a")
        _ = t.confirmedSubscribe("b")
        t.release("b", nowMs: 0)
        t.disconnected()
        XCTAssertEqual(t.state(of: "a"), .subscribing)
        XCTAssertEqual(t.reconnected(), [.subscribe("a")])
        XCTAssertNil(t.state(of: "b"))
        XCTAssertEqual(resubscribed(t.confirmedSubscribe("a")), 1)
    }

    /// Scripted subscribers come and go while the connection drops at random steps;
    /// Redis confirms commands in order. Every subscriber's `ready` runs exactly once,
    /// and whenever the connection came back while a channel had subscribers, the
    /// channel is resubscribed and its subscribers told: exactly one `.resubscribed`
    /// wake per such reconnect, none for a reconnect that found the channel unwanted.
    func testReconnectAtEveryStepKeepsEverySubscriberServed() {
        var reconnectsWithSubscribersInAllSeeds = 0
        for seed in UInt64(1)...300 {
            var rng = SplitMix64(seed: seed)
            let clock = VirtualClock()
            var t = Table(idleUnsubscribeMs: 50)
            var connected = true
            var wire: [Table.Command] = []
            var readyCount: [String: Int] = [:]
            var live: [String: [String]] = [:]      // channel -> subscribers holding a reference
            var next = 0
            // Per channel: reconnects that found it with subscribers, and the
            // `.resubscribed` wakes its confirmations brought.
            var reconnectsWithSubscribers: [String: Int] = [:]
            var resubscribedWakes: [String: Int] = [:]
            func wake(_ ch: String, _ w: [Table.Wake]) {
                for x in w {
                    switch x {
                    case .ready(let s): readyCount[s, default: 0] += 1
                    case .resubscribed: resubscribedWakes[ch, default: 0] += 1
                    }
                }
            }
            func reconnect() {
                connected = true
                for (ch, subs) in live where !subs.isEmpty { reconnectsWithSubscribers[ch, default: 0] += 1 }
                wire += t.reconnected()
            }
            for _ in 0..<400 {
                clock.advance(by: Int64(rng.next() % 20))
                let ch = "ch\(rng.next() % 3)"
                switch rng.next() % 6 {
                case 0, 1:
                    next += 1
                    let s = "s\(next)"
                    live[ch, default: []].append(s)
                    let r = t.subscribe(ch, connected: connected, ready: s)
                    if let n = r.runNow { readyCount[n, default: 0] += 1 }
                    if let c = r.send { wire.append(c) }
                case 2:
                    if var l = live[ch], !l.isEmpty {
                        l.removeFirst()
                        live[ch] = l
                        t.release(ch, nowMs: clock.loopMs)
                    }
                case 3:
                    if connected { wire += t.sweep(nowMs: clock.loopMs) }
                case 4:
                    guard connected, !wire.isEmpty else { continue }
                    switch wire.removeFirst() {
                    case .subscribe(let c): wake(c, t.confirmedSubscribe(c))
                    case .unsubscribe(let c): if let again = t.confirmedUnsubscribe(c) { wire.append(again) }
                    }
                default:
                    if connected {
                        connected = false
                        wire = []
                        t.disconnected()
                    } else {
                        reconnect()
                    }
                }
            }
            if !connected { reconnect() }
            while !wire.isEmpty {
                switch wire.removeFirst() {
                case .subscribe(let c): wake(c, t.confirmedSubscribe(c))
                case .unsubscribe(let c): if let again = t.confirmedUnsubscribe(c) { wire.append(again) }
                }
            }
            for (ch, subs) in live where !subs.isEmpty {
                XCTAssertEqual(t.state(of: ch), .subscribed, "seed \(seed): \(ch) is wanted")
                XCTAssertEqual(t.refs(of: ch), subs.count, "seed \(seed)")
            }
            for s in 1...max(1, next) where next > 0 {
                XCTAssertEqual(readyCount["s\(s)"], 1, "seed \(seed): s\(s) ready exactly once")
            }
            XCTAssertEqual(resubscribedWakes, reconnectsWithSubscribers,
                           "seed \(seed): one .resubscribed wake per reconnect that found the channel wanted")
            reconnectsWithSubscribersInAllSeeds += reconnectsWithSubscribers.values.reduce(0, +)
        }
        XCTAssertGreaterThan(reconnectsWithSubscribersInAllSeeds, 100, "the runs do reconnect with subscribers")
    }
}
