import Foundation
import RelayCore
import RelayLoop
import RelayRedis
import RelayStreamLogic
import RelayUpstream
import XCTest
@testable import RelayServer

/// Red-team probes of the strong-ownership generation (d25646b): Redis paused or killed
/// while a generation runs and finishes; the generation must end once, acknowledge each
/// seq once, and be freed.
final class RedTeamGenerationTests: RelayTestCase {
    typealias TestHost = GenerationLifetimeTests.TestHost
    typealias Probes = GenerationLifetimeTests.Probes

    override class func setUp() { super.setUp(); signal(SIGPIPE, SIG_IGN) }

    final class SeqHost: GenerationHost, @unchecked Sendable {
        let inner: TestHost
        let seqs = LockedBox<[UInt64]>([])
        init(_ t: TestHost) { inner = t }
        var loop: EventLoop { inner.loop }
        var log: EventLog { inner.log }
        func firstToken(afterSeconds s: Double) {}
        func upstreamFailed() { inner.upstreamFailed() }
        func appended(events: Int) {}
        func settle(_ g: Generation, tokens: Int) { inner.settle(g, tokens: tokens) }
        func generationEnded(_ g: Generation) { inner.generationEnded(g) }
        func acknowledged(_ g: Generation, event: SequencedEvent) { seqs.mutate { $0.append(event.seq) }; inner.acknowledged(g, event: event) }
    }

    private func redisPID() throws -> pid_t {
        let info = try redis.cli("INFO", "server")
        let line = info.split(whereSeparator: \.isNewline).first { $0.hasPrefix("process_id:") } ?? ""
        return pid_t(line.dropFirst("process_id:".count).trimmingCharacters(in: .whitespaces)) ?? -1
    }

    private func start(_ h: AppendHarness, count: Int, rate: Double) throws -> (SeqHost, Probes) {
        let id = try RequestID(validating: "rt" + UUID().uuidString.replacingOccurrences(of: "-", with: ""))
        let host = SeqHost(TestHost(loop: h.loop, log: h.log))
        let probes = Probes()
        try makeGeneration(on: h, id: id, maxTokens: 100_000, host: host, makeUpstream: { loop in
            SimulatedUpstream(count: count, finishReason: "stop", promptTokens: 1, tokensPerSecond: rate, loop: loop) { "t\($0) " }
        }) { g, up in
            host.inner.register(g)
            probes.generation = g; probes.appender = g.appender; probes.upstream = up
            g.start()
        }
        return (host, probes)
    }

    private func assertFreed(_ h: AppendHarness, _ p: Probes, _ what: String) {
        let until = Date().addingTimeInterval(5)
        while Date() < until {
            h.run { p.allFreed.value = p.generation == nil && p.appender == nil && p.upstream == nil }
            usleep(20_000)
            if p.allFreed.value { return }
        }
        XCTFail("\(what): not freed")
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
        usleep(700_000)   // the upstream finishes meanwhile (200 tokens at 400/s)
        kill(pid, SIGCONT)
        try eventually(20, "ended") { host.inner.ended.value == 1 }
        usleep(300_000)
        XCTAssertEqual(host.seqs.value, Array(1...201), "each seq acknowledged once, in order")
        XCTAssertEqual(host.inner.ended.value, 1)
        XCTAssertEqual(host.inner.settled.value.count, 1)
        assertFreed(h, probes, "paused")
    }

    /// The command connection closed by Redis (CLIENT KILL) repeatedly while the generation
    /// streams and finishes: it ends once, acknowledges each seq once and is freed.
    func testConnectionKilledRepeatedlyWhileTheGenerationFinishes() throws {
        let h = try AppendHarness(redisURL: redis.url)
        addTeardownBlock { h.stop() }
        try eventually(10, "connected") { h.connections.value > 0 }
        let (host, probes) = try start(h, count: 300, rate: 1000)
        for _ in 0..<6 {
            usleep(60_000)
            _ = try? redis.cli("CLIENT", "KILL", "TYPE", "normal")
        }
        try eventually(30, "ended") { host.inner.ended.value == 1 }
        usleep(300_000)
        let seqs = host.seqs.value
        XCTAssertEqual(seqs, Array(1...UInt64(seqs.count)), "in order, no duplicates")
        XCTAssertEqual(seqs.last, 301)
        XCTAssertEqual(host.inner.ended.value, 1)
        XCTAssertEqual(host.inner.settled.value.count, 1)
        assertFreed(h, probes, "killed connection")
    }
}
