import Foundation
import RelayCore
import RelayLoop
import RelayRedis
import RelayTestKit
import RelayUpstream
import XCTest
@testable import RelayServer
import RelayEventStore
import RelayBudgets

/// A generation, its appender and its upstream refer to each other strongly (no
/// `weak`, so none of them gets a refcount side table); `Generation.teardown` breaks the
/// cycles on every ending. Each test runs a real `Generation` on an `AppendHarness` loop
/// (a real `redis-server`) with a test host, ends it one way, and then requires weak
/// probes (held by the test only) to the generation, its appender and its upstream to
/// come back nil: a cycle left unbroken fails it.
final class GenerationLifetimeTests: RelayTestCase {
    /// The host side of a generation (`StreamHub`'s part): registers it, counts what it
    /// reports, forgets it on `generationEnded`. Loop thread only.
    final class TestHost: GenerationHost, @unchecked Sendable {
        let loop: EventLoop
        let log: EventLog
        private var generations: [ObjectIdentifier: Generation] = [:]
        let acknowledged = LockedBox(0)
        let ended = LockedBox(0)
        let settled = LockedBox<[Int]>([])
        let upstreamErrors = LockedBox(0)

        init(loop: EventLoop, log: EventLog) {
            self.loop = loop
            self.log = log
        }

        var nowMs: UInt64 { loop.nowMs }
        func writer(for id: RequestID, continuing taken: EventLog.TakenStream?) -> any AnswerWriter {
            StreamAppender(log: log, loop: loop, id: id, taken: taken)
        }

        func register(_ g: Generation) { generations[ObjectIdentifier(g)] = g }
        /// What `StreamHub.stop` does for the generations still registered.
        func stop() {
            let all = generations.values
            generations.removeAll()
            for g in all { g.teardown() }
        }
        func firstToken(afterSeconds s: Double) {}
        func upstreamFailed() { upstreamErrors.mutate { $0 += 1 } }
        func appended(events: Int) {}
        func settle(_ g: Generation, tokens: Int) { settled.mutate { $0.append(tokens) } }
        func generationEnded(_ g: Generation) {
            guard generations.removeValue(forKey: ObjectIdentifier(g)) != nil else { return }
            ended.mutate { $0 += 1 }
        }
        func acknowledged(_ g: Generation, event: SequencedEvent) { acknowledged.mutate { $0 += 1 } }
        /// No other instance here: the lease is never lost (confirmed on the next loop turn).
        func confirmOwnership(_ g: Generation) {
            nonisolated(unsafe) let g = g
            loop.post { g.ownershipConfirmed(untilMs: .max) }
        }
    }

    /// Weak references to the objects that must be freed. Read and written on the loop
    /// thread only (they are freed there).
    final class Probes: @unchecked Sendable {
        weak var generation: Generation?
        weak var appender: StreamAppender?
        weak var upstream: AnyObject?
        /// Which of the three were still alive when last read on the loop (nil before).
        let alive = LockedBox<[String]?>(nil)

        /// Reads, on `h`'s loop, which of the three are still alive (into `alive`).
        func read(on h: AppendHarness) {
            h.run {
                var names: [String] = []
                if self.generation != nil { names.append("generation") }
                if self.appender != nil { names.append("appender") }
                if self.upstream != nil { names.append("upstream") }
                self.alive.value = names
            }
        }
    }

    /// Emits `deltas` deltas, one per loop turn, then `error`; follows the `Upstream`
    /// contract (drops `emit` at its terminal event and in `cancel()`).
    final class FailingUpstream: Upstream {
        private let loop: EventLoop
        private let deltas: Int
        private var emit: ((StreamEvent) -> Void)?
        private var timer: LoopTimer?
        private var sent = 0

        init(loop: EventLoop, deltas: Int) {
            self.loop = loop
            self.deltas = deltas
        }

        func start(emit: @escaping (StreamEvent) -> Void) {
            self.emit = emit
            timer = LoopTimer(loop: loop, repeating: true) { [unowned self] in self.tick() }
            timer?.schedule(afterMs: 1)
        }

        private func tick() {
            guard let e = emit else { return }
            if sent < deltas {
                sent += 1
                return e(.delta("t\(sent) "))
            }
            _ = cancel()
            e(APIError(.upstreamError, "upstream failed (test)").asEvent)
        }

        func cancel() -> Usage {
            timer?.cancel()
            timer = nil
            emit = nil
            return Usage(promptTokens: 1, completionTokens: sent)
        }
    }

    private func harness() throws -> AppendHarness {
        let h = try AppendHarness(redisURL: redis.url)
        addTeardownBlock { h.stop() }
        try eventually(10, "the harness to connect") { h.connections.value > 0 }
        return h
    }

    private func newID() -> RequestID {
        try! RequestID(validating: "life" + UUID().uuidString.replacingOccurrences(of: "-", with: ""))
    }

    /// Creates a stream, then on the loop a generation of it with the upstream `makeUpstream`
    /// builds, registered with a `TestHost`; `begin` runs right after (start it, abort it…).
    /// The test's own references are dropped at once: only the probes see the objects.
    private func run(_ h: AppendHarness, maxTokens: Int = 1_000,
                     makeUpstream: @escaping @Sendable (EventLoop) -> Upstream,
                     begin: @escaping @Sendable (Generation) -> Void) throws -> (TestHost, Probes, RequestID) {
        let id = newID()
        let host = TestHost(loop: h.loop, log: h.log)
        let probes = Probes()
        try makeGeneration(on: h, id: id, maxTokens: maxTokens, host: host, makeUpstream: makeUpstream) { g, upstream in
            host.register(g)
            probes.generation = g
            probes.appender = g.appender as? StreamAppender
            probes.upstream = upstream
            begin(g)
        }
        return (host, probes, id)
    }

    private func simulated(count: Int, rate: Double = 2_000) -> @Sendable (EventLoop) -> Upstream {
        { loop in
            SimulatedUpstream(count: count, finishReason: "stop", promptTokens: 1, tokensPerSecond: rate, loop: loop) { "t\($0) " }
        }
    }

    func testAGenerationThatRunsToDoneIsFreed() throws {
        let h = try harness()
        let (host, probes, _) = try run(h, makeUpstream: simulated(count: 40)) { $0.start() }
        try eventually(10, "the generation to end") { host.ended.value == 1 }
        XCTAssertEqual(host.acknowledged.value, 41, "every delta and the done were acknowledged")
        XCTAssertEqual(host.settled.value.count, 1)
        try assertGenerationFreed(h, probes, "done")
    }

    func testACancelledGenerationIsFreed() throws {
        let h = try harness()
        let (host, probes, _) = try run(h, makeUpstream: simulated(count: 100_000, rate: 500)) { $0.start() }
        try eventually(10, "some events acknowledged") { host.acknowledged.value >= 5 }
        h.run { probes.generation?.cancel() }
        try eventually(10, "the generation to end") { host.ended.value == 1 }
        try assertGenerationFreed(h, probes, "cancel")
    }

    func testAGenerationAbortedBeforeItsUpstreamStartedIsFreed() throws {
        let h = try harness()
        let (host, probes, _) = try run(h, makeUpstream: simulated(count: 40)) { g in
            g.abort(APIError(.upstreamLost, "revoked before start (test)"))
        }
        try eventually(10, "the generation to end") { host.ended.value == 1 }
        XCTAssertEqual(host.settled.value, [0], "nothing was generated")
        try assertGenerationFreed(h, probes, "abort before start")
    }

    func testAGenerationAbortedMidStreamIsFreed() throws {
        let h = try harness()
        let (host, probes, _) = try run(h, makeUpstream: simulated(count: 100_000, rate: 500)) { $0.start() }
        try eventually(10, "some events acknowledged") { host.acknowledged.value >= 5 }
        h.run { probes.generation?.abort(APIError(.upstreamLost, "revoked (test)")) }
        try eventually(10, "the generation to end") { host.ended.value == 1 }
        try assertGenerationFreed(h, probes, "abort mid-stream")
    }

    func testAGenerationStoppedAtItsGrantIsFreed() throws {
        let h = try harness()
        let (host, probes, _) = try run(h, maxTokens: 7, makeUpstream: simulated(count: 100_000)) { $0.start() }
        try eventually(10, "the generation to end") { host.ended.value == 1 }
        XCTAssertEqual(host.acknowledged.value, 8, "7 deltas and the done")
        try assertGenerationFreed(h, probes, "stopped at the grant")
    }

    func testAGenerationWhoseUpstreamFailsIsFreed() throws {
        let h = try harness()
        let (host, probes, _) = try run(h, makeUpstream: { FailingUpstream(loop: $0, deltas: 5) }) { $0.start() }
        try eventually(10, "the generation to end") { host.ended.value == 1 }
        XCTAssertEqual(host.upstreamErrors.value, 1)
        XCTAssertEqual(host.acknowledged.value, 6, "5 deltas and the error")
        try assertGenerationFreed(h, probes, "upstream error")
    }

    /// The stream's key is deleted mid-run: an `XADD … NOMKSTREAM` fails for good, the
    /// generation ends while later `XADD`s are still in flight; their replies come back to
    /// a closed appender (ignored), and then everything is freed.
    func testAGenerationWhoseAppendsFailIsFreedAfterItsLateReplies() throws {
        let h = try harness()
        let (host, probes, id) = try run(h, makeUpstream: simulated(count: 100_000, rate: 1_000)) { $0.start() }
        try eventually(10, "some events acknowledged") { host.acknowledged.value >= 5 }
        _ = try redis.cli("DEL", StreamKeys(id).events)
        try eventually(10, "the generation to end") { host.ended.value == 1 }
        XCTAssertEqual(host.settled.value.count, 1, "settled once")
        try assertGenerationFreed(h, probes, "append failure")
    }

    /// What a worker stop does (`StreamHub.stop`): a running generation is torn down.
    func testARunningGenerationTornDownAtWorkerStopIsFreed() throws {
        let h = try harness()
        let (host, probes, _) = try run(h, makeUpstream: simulated(count: 100_000, rate: 500)) { $0.start() }
        try eventually(10, "some events acknowledged") { host.acknowledged.value >= 3 }
        h.run { host.stop() }
        try assertGenerationFreed(h, probes, "worker stop")
        let before = host.acknowledged.value
        try consistently(for: 0.3, "nothing acknowledged after the teardown (\(host.acknowledged.value - before) more)") {
            host.acknowledged.value == before
        }
    }

    /// An appender closed with `XADD`s in flight: their replies are ignored (nothing more is
    /// acknowledged or sent) and the appender is freed once they are in — or once the
    /// connection fails them.
    func testAClosedAppenderIgnoresItsLateRepliesAndIsFreed() throws {
        for closeConnection in [false, true] {
            let h = try harness()
            let id = newID()
            let probes = Probes()
            let acked = LockedBox(0)
            let created = LockedBox(false)
            nonisolated(unsafe) let log = h.log
            let loop = h.loop, channel = h.channel
            h.run {
                log.create(id, owner: "o", sid: "s", instance: "test", nowMs: 1, budgetKey: "", promptEstimate: 0) { _ in
                    let a = StreamAppender(log: log, loop: loop, id: id)
                    a.onAcknowledged = { _, _ in acked.mutate { $0 += 1 } }
                    for seq in 1...50 { a.append(seq: UInt64(seq), event: .delta("x")) }
                    a.close()
                    XCTAssertTrue(a.isClosed)
                    a.append(seq: 51, event: .delta("y"))   // ignored
                    probes.appender = a
                    if closeConnection { channel.close() }
                    created.value = true
                }
            }
            try eventually(5, "the appender created") { created.value }
            try assertGenerationFreed(h, probes, closeConnection ? "appender, connection closed" : "appender, replies in")
            XCTAssertEqual(acked.value, 0, "nothing acknowledged after close")
            if !closeConnection {
                let stored = Int(try redis.cli("XLEN", StreamKeys(id).events)) ?? -1
                XCTAssertLessThanOrEqual(stored, 50, "nothing sent after close")
            }
            h.stop()
        }
    }
}

extension RelayTestCase {
    /// Waits (5 s) until the generation, its appender and its upstream behind `p` are
    /// freed, as read on `h`'s loop; fails naming the ones still alive.
    func assertGenerationFreed(_ h: AppendHarness, _ p: GenerationLifetimeTests.Probes, _ what: String,
                               file: StaticString = #filePath, line: UInt = #line) throws {
        p.alive.value = nil
        p.read(on: h)
        try eventually(5, "\(what): freed after the generation ended (still alive: \(p.alive.value ?? ["not read"]))",
                       file: file, line: line) {
            if p.alive.value == [] { return true }
            p.read(on: h)   // look again at the next poll
            return false
        }
    }

    /// On `h`'s loop: creates stream `id` (`EventLog.create`), then a `Generation` of it
    /// with the upstream `makeUpstream` builds and `host` as its host, granted `maxTokens`
    /// completion tokens; `created` gets the generation and its upstream in the same loop
    /// turn (register, probe or start them there). Returns once that ran.
    func makeGeneration(on h: AppendHarness, id: RequestID, maxTokens: Int, host: GenerationHost,
                        makeUpstream: @escaping @Sendable (EventLoop) -> Upstream,
                        created: @escaping @Sendable (Generation, Upstream) -> Void) throws {
        let done = LockedBox(false)
        nonisolated(unsafe) let log = h.log
        nonisolated(unsafe) let host = host
        h.run {
            log.create(id, owner: "o", sid: "s", instance: "test", nowMs: 1, budgetKey: "", promptEstimate: 0) { r in
                guard (try? r.get()) == true else { return }
                let grant = BudgetArithmetic.grant(promptEstimate: 1, wantedCompletion: maxTokens, remaining: .max,
                                                   minimumCompletion: 1)!
                let upstream = makeUpstream(h.loop)
                let g = Generation(id: id, owner: "o", ownerHash: "oh", sid: "s",
                                   budget: GenerationBudget(key: "", promptEstimate: 1, grant: grant),
                                   upstream: upstream, host: host)
                created(g, upstream)
                done.value = true
            }
        }
        try eventually(5, "the stream and its generation created") { done.value }
    }
}
