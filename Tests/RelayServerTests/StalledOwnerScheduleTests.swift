import XCTest
import RelayCore
import RelayEventStore
import RelayTestKit
@testable import RelayServer

/// A stalled owner and a taker, in every order the seeded schedules reach (docs/PROTOCOL.md
/// §4.5): relay A generates, stalls and wakes at random moments while time moves; relay B
/// tries to take the answer over whenever a reader would notice; both upstreams emit and
/// finish at random. Whatever the order, the stored answer is whole and the charge is right:
/// seqs 1…N with no hole, one final event and it last, A's deltas then B's with none twice,
/// and exactly one settlement, equal to the final `done`'s total.
final class StalledOwnerScheduleTests: XCTestCase {
    private let id = try! RequestID(validating: "stalled-owner-schedule-01")

    /// One relay instance in the schedule: its host, its generation and upstream, and whether
    /// its process is stopped (SIGSTOP: it does nothing, its clock jumps when it wakes).
    private final class Instance {
        let host: InMemoryGenerationHost
        var generation: Generation?
        var upstream: ScriptedUpstream?
        var stalled = false
        var lastRefreshMs: UInt64
        init(_ host: InMemoryGenerationHost) {
            self.host = host
            lastRefreshMs = host.nowMs
        }
        var running: Bool { generation.map { !$0.finished } ?? false }
    }

    func testEverySeededScheduleStoresTheWholeAnswerOnceAndChargesItOnce() {
        var outcomes = [String: Int]()
        for seed in UInt64(1)...600 {
            outcomes[run(seed: seed), default: 0] += 1
        }
        // The schedules reach both endings: A finishing its own answer, and B finishing a taken one.
        XCTAssertGreaterThan(outcomes["owner finished", default: 0], 20, "\(outcomes)")
        XCTAssertGreaterThan(outcomes["taker finished", default: 0], 20, "\(outcomes)")
    }

    /// Runs one schedule; returns which instance finished the answer.
    private func run(seed: UInt64) -> String {
        var rng = SplitMix64(seed: seed)
        let store = InMemoryAnswerStore()
        var now: UInt64 = 10_000
        let a = Instance(InMemoryGenerationHost(store: store, instance: "relay-a", nowMs: now))
        let b = Instance(InMemoryGenerationHost(store: store, instance: "relay-b", nowMs: now))
        store.create(id, instance: "relay-a", nowMs: now)
        let upA = ScriptedUpstream(promptTokens: 10)
        a.upstream = upA
        a.generation = a.host.generation(id, upstream: upA)
        a.generation!.start()
        var aSent = 0, bSent = 0

        /// What `OwnerLeases` does on an awake instance each tick: refresh a third of a lease
        /// after the last refresh unless the writer is held (then it asks to confirm), and
        /// answer the ownership checks waiting.
        func tick(_ i: Instance) {
            guard !i.stalled, let g = i.generation, !g.finished else { return }
            i.host.nowMs = now
            i.host.confirmOwnership()
            guard !g.finished, now >= i.lastRefreshMs + store.leaseMs / 3 else { return }
            if g.appender.holdIfLeaseLapsed() { return i.host.confirmOwnership() }
            i.lastRefreshMs = now
            switch store.refreshLease(id, instance: i.host.instance, epoch: g.ownershipEpoch, nowMs: now) {
            case .held: g.appender.leaseKnown(untilMs: LeasePolicy.knownUntil(sentAtMs: now, leaseMs: store.leaseMs))
            case .takenOver: g.leaseTakenOver()
            case .notRunning: break
            }
        }

        func takeover() {
            guard b.generation == nil, !b.stalled else { return }
            b.host.nowMs = now
            guard case .taken(let taken) = store.takeover(id, instance: "relay-b", nowMs: now, maxContinuations: 2) else { return }
            let up = ScriptedUpstream(promptTokens: 12)
            b.upstream = up
            b.lastRefreshMs = now
            b.generation = b.host.generation(id, upstream: up, prompt: 12, taken: taken)
            b.generation!.start()
        }

        for _ in 0..<Int.random(in: 20...80, using: &rng) {
            switch Int.random(in: 0..<10, using: &rng) {
            case 0, 1, 2:
                if !a.stalled, a.running { aSent += 1; upA.send(.delta("a\(aSent) ")) }
            case 3:
                now += UInt64.random(in: 0...1_500, using: &rng)
                tick(a); tick(b)
            case 4: a.stalled = true
            case 5:
                a.stalled = false
                tick(a)
            case 6: takeover()
            case 7, 8:
                if let up = b.upstream, b.running { bSent += 1; up.send(.delta("b\(bSent) ")) }
            default:
                if Int.random(in: 0..<4, using: &rng) == 0 {
                    if !a.stalled, a.running { upA.finish() } else if b.running { b.upstream!.finish() }
                }
            }
        }
        // The end of every schedule: A wakes; time passes until one of them finishes the answer.
        a.stalled = false
        for _ in 0..<10 where store.state(id) == .running {
            now += store.leaseMs
            tick(a); tick(b)
            takeover()
            tick(a); tick(b)
            if a.running { upA.finish() } else if b.running { b.upstream!.finish() }
        }

        let context = "seed \(seed)"
        let events = store.events(id)
        XCTAssertNotEqual(store.state(id), .running, context)
        XCTAssertEqual(events.map(\.seq), Array(1...UInt64(events.count)), "no hole, no repeat: \(context)")
        let finals = events.filter { (try? StreamEvent(json: $0.json))?.isTerminal ?? false }
        XCTAssertEqual(finals.count, 1, "one final event: \(context)")
        XCTAssertEqual(finals.first?.seq, events.last?.seq, "the final event is last: \(context)")
        let words: [String] = store.text(id).split(separator: " ").map(String.init)
        let fromA: [String] = Array(words.prefix { $0.hasPrefix("a") })
        let fromB: [String] = Array(words.dropFirst(fromA.count))
        let expectedA: [String] = (0..<fromA.count).map { "a\($0 + 1)" }
        let expectedB: [String] = (0..<fromB.count).map { "b\($0 + 1)" }
        XCTAssertEqual(fromA, expectedA, "A's deltas in order, none twice: \(context)")
        XCTAssertEqual(fromB, expectedB, "then B's in order, none twice, nothing of A after them: \(context)")
        let settlements = a.host.settlements + b.host.settlements
        XCTAssertEqual(settlements.count, 1, "settled once: \(context)")
        if case .done(_, let usage, _)? = try? StreamEvent(json: events.last!.json) {
            XCTAssertEqual(usage.completionTokens, words.count, "done counts every stored delta: \(context)")
            XCTAssertEqual(settlements.first?.tokens, usage.totalTokens, "the ledger equals the done's total: \(context)")
        } else {
            XCTFail("the answer ends with done: \(context)")
        }
        return b.host.settlements.isEmpty ? "owner finished" : "taker finished"
    }
}
