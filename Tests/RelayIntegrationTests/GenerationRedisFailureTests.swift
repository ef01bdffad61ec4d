import Foundation
import RelayCore
import RelayLoop
import RelayRedis
import RelayTestKit
import RelayUpstream
import XCTest
@testable import RelayServer
import RelayEventStore

/// A generation (which holds its appender and upstream strongly) while Redis is paused
/// or its connection killed as the answer runs and finishes: the generation ends once,
/// acknowledges each seq once and in order, and is freed.
final class GenerationRedisFailureTests: RelayTestCase {
    override class func setUp() { super.setUp(); signal(SIGPIPE, SIG_IGN) }

    /// `GenerationLifetimeTests.TestHost` that also records each acknowledged seq.
    final class SeqHost: GenerationHost, @unchecked Sendable {
        let inner: GenerationLifetimeTests.TestHost
        let seqs = LockedBox<[UInt64]>([])
        init(_ t: GenerationLifetimeTests.TestHost) { inner = t }
        var nowMs: UInt64 { inner.nowMs }
        func writer(for id: RequestID, continuing taken: EventLog.TakenStream?) -> any AnswerWriter {
            inner.writer(for: id, continuing: taken)
        }
        func firstToken(afterSeconds s: Double) {}
        func upstreamFailed() { inner.upstreamFailed() }
        func appended(events: Int) {}
        func settle(_ g: Generation, tokens: Int) { inner.settle(g, tokens: tokens) }
        func generationEnded(_ g: Generation) { inner.generationEnded(g) }
        func acknowledged(_ g: Generation, event: SequencedEvent) { seqs.mutate { $0.append(event.seq) }; inner.acknowledged(g, event: event) }
        func confirmOwnership(_ g: Generation) { inner.confirmOwnership(g) }
    }

    private func start(_ h: AppendHarness, count: Int, rate: Double) throws -> (SeqHost, GenerationLifetimeTests.Probes) {
        let id = try RequestID(validating: "genfail" + UUID().uuidString.replacingOccurrences(of: "-", with: ""))
        let host = SeqHost(GenerationLifetimeTests.TestHost(loop: h.loop, log: h.log))
        let probes = GenerationLifetimeTests.Probes()
        try makeGeneration(on: h, id: id, maxTokens: 100_000, host: host, makeUpstream: { loop in
            SimulatedUpstream(count: count, finishReason: "stop", promptTokens: 1, tokensPerSecond: rate, loop: loop) { "t\($0) " }
        }) { g, up in
            host.inner.register(g)
            probes.generation = g; probes.appender = g.appender as? StreamAppender; probes.upstream = up
            g.start()
        }
        return (host, probes)
    }

    /// Whether `seqs` are 1, 2, 3 …: in order, none twice, none skipped.
    private static func inOrderOnce(_ seqs: [UInt64]) -> Bool {
        seqs.enumerated().allSatisfy { $0.element == UInt64($0.offset + 1) }
    }

    /// Redis paused (SIGSTOP) for 700 ms while the generation streams and emits its final
    /// event: after SIGCONT it ends once, each seq acknowledged once, in order, and freed.
    func testRedisPausedWhileTheGenerationFinishes() throws {
        let h = try AppendHarness(redisURL: redis.url)
        addTeardownBlock { h.stop() }
        try eventually(10, "connected") { h.connections.value > 0 }
        let pid = try redisPID()
        let (host, probes) = try start(h, count: 200, rate: 400)
        try eventually(10, "some acked") { host.seqs.value.count >= 20 }
        kill(pid, SIGSTOP)
        // Paused for 0.7 s, in which the upstream finishes (200 tokens at 400/s).
        try consistently(for: 0.7, "acknowledgements in order and once while Redis is paused") { Self.inOrderOnce(host.seqs.value) }
        kill(pid, SIGCONT)
        try eventually(20, "ended") { host.inner.ended.value == 1 }
        try consistently(for: 0.3, "ended once, nothing acknowledged twice") {
            host.inner.ended.value == 1 && Self.inOrderOnce(host.seqs.value)
        }
        XCTAssertEqual(host.seqs.value, Array(1...201), "each seq acknowledged once, in order")
        XCTAssertEqual(host.inner.ended.value, 1)
        XCTAssertEqual(host.inner.settled.value.count, 1)
        try assertGenerationFreed(h, probes, "paused")
    }

    /// The command connection closed by Redis (CLIENT KILL) repeatedly while the generation
    /// streams and finishes: it ends once, acknowledges each seq once and is freed.
    func testConnectionKilledRepeatedlyWhileTheGenerationFinishes() throws {
        let h = try AppendHarness(redisURL: redis.url)
        addTeardownBlock { h.stop() }
        try eventually(10, "connected") { h.connections.value > 0 }
        let (host, probes) = try start(h, count: 300, rate: 1000)
        for _ in 0..<6 {
            usleep(60_000)   // pacing on purpose: a kill every 60 ms while the answer runs
            _ = try? redis.cli("CLIENT", "KILL", "TYPE", "normal")
        }
        try eventually(30, "ended") { host.inner.ended.value == 1 }
        try consistently(for: 0.3, "ended once, nothing acknowledged twice") {
            host.inner.ended.value == 1 && Self.inOrderOnce(host.seqs.value)
        }
        let seqs = host.seqs.value
        XCTAssertEqual(seqs, Array(1...UInt64(seqs.count)), "in order, no duplicates")
        XCTAssertEqual(seqs.last, 301)
        XCTAssertEqual(host.inner.ended.value, 1)
        XCTAssertEqual(host.inner.settled.value.count, 1)
        try assertGenerationFreed(h, probes, "killed connection")
    }
}
