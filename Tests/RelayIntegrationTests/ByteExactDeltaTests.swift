import Foundation
import RelayCore
import RelayRedis
import RelayTestKit
import RelayTestSupport
import RelayUpstream
import XCTest

/// Deltas that break text handling — NUL, CR/LF, RESP markers (`$`, `*`), U+2028,
/// emoji, Arabic, deltas of nearly 1 MiB — reach every reader byte for byte: live on the
/// owning relay, live on another relay through `PUBLISH`, and resumed from any position.
final class ByteExactDeltaTests: RelayTestCase {
    /// Deltas close to a worker's 1 MiB stack (every Redis command is formatted
    /// in one temporary buffer) and odd bytes through `RedisConnection`: NUL, CR/LF,
    /// `$` and `*` (RESP markers), emoji, Arabic. Read live on the owning relay, then
    /// resumed from 0 and from the middle on another relay: byte-exact.
    func testHugeAndOddDeltasThroughRedisAreByteExact() throws {
        let odd = "a\u{0}b\r\n$3\r\n*2\r\n👩‍👩‍👧‍👦 مَرْحَبًا e\u{301} \u{FFFF}\\\"\t"
        let huge = String(repeating: "Clause 💥 $*\r\n\u{0} ", count: 700_000 / 20)   // upstream SSE lines are capped at 1 MiB (JSON escapes grow it)
        let mid = String(repeating: "x", count: 900_000)
        let pieces = ["start ", odd, huge, " ", mid, mid, odd, huge, " end"]
        var steps: [FakeUpstreamServer.Step] = [.head(status: 200, contentType: "text/event-stream")]
        for p in pieces { steps.append(.send(UpstreamRelayTests.openAIChunk(p))) }
        steps.append(.send(Array("data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n".utf8)))
        let fake = try FakeUpstreamServer(routes: ["/v1/chat/completions": .init(steps)])
        defer { fake.stop() }
        var env = ["RELAY_UPSTREAM": "openai", "UPSTREAM_URL": fake.baseURL, "UPSTREAM_API_KEY": "sk-test",
                   "UPSTREAM_MODEL": "gpt-test", "RELAY_MAX_PENDING_BYTES": "16777216"]
        let a = try startRelay(env)
        env["RELAY_WORKERS"] = "2"
        let b = try startRelay(env)
        let token = RelayProcess.token()
        let id = Chat.newID()
        let events = try Chat.start(port: a.port, token: token, requestID: id, model: "gpt-test").readAll(timeout: 60)
        assertSequence(events)
        XCTAssertEqual(Chat.text(events), pieces.joined())
        guard case .done? = try? StreamEvent(json: events.last?.data ?? "") else {
            return XCTFail("ends with done, got \(events.count) events, last \(events.last.map { String($0.data.prefix(300)) } ?? "none"); relay log: \(a.log.suffix(1500))")
        }
        let again = try Chat.resume(port: b.port, token: token, requestID: id, lastEventID: "0").readAll(timeout: 60)
        XCTAssertEqual(again.map(\.data), events.map(\.data))
        let fromMiddle = try Chat.resume(port: b.port, token: token, requestID: id, lastEventID: "3").readAll(timeout: 60)
        XCTAssertEqual(Chat.text(fromMiddle), pieces[3...].joined())
        XCTAssertTrue(a.process.isRunning && b.process.isRunning, "no relay crashed")
    }

    /// Odd deltas (NUL, CR/LF, RESP markers, U+2028, emoji, Arabic)
    /// paced by the upstream, read live on another relay, i.e. through the `PUBLISH`
    /// payload the append path now writes straight in RESP (`RESPCommand.add(seq:space:)`),
    /// and by a client that drops at random points and resumes on either relay: both
    /// get exactly the answer, ids gapless, nothing lost or repeated.
    func testOddDeltasLiveOnAnotherRelayAndRandomDropsResumeByteExact() throws {
        let odd = ["a\u{0}b", "\r\n", "$3\r\n", "*2\r\n", "\u{2028}", "\u{2029}", "👩‍👩‍👧‍👦", " مَرْحَبًا", "e\u{301}",
                   "🇸🇦", "\u{FFFF}", "\"\\", "\t", "\n\n", String(repeating: "é", count: 200)]
        let pieces = (0..<150).map { odd[$0 % odd.count] + "\($0)" }
        var steps: [FakeUpstreamServer.Step] = [.head(status: 200, contentType: "text/event-stream")]
        for p in pieces {
            steps.append(.send(UpstreamRelayTests.openAIChunk(p)))
            steps.append(.pause(ms: 15))
        }
        steps.append(.send(Array("data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n".utf8)))
        let fake = try FakeUpstreamServer(routes: ["/v1/chat/completions": .init(steps)])
        defer { fake.stop() }
        let env = ["RELAY_UPSTREAM": "openai", "UPSTREAM_URL": fake.baseURL, "UPSTREAM_API_KEY": "sk-test",
                   "UPSTREAM_MODEL": "gpt-test", "RELAY_WORKERS": "2"]
        let a = try startRelay(env)
        let b = try startRelay(env)
        let token = RelayProcess.token()
        let id = Chat.newID()
        let owner = try Chat.start(port: a.port, token: token, requestID: id, model: "gpt-test")
        var ownerEvents = [try XCTUnwrap(try owner.nextEvent())]
        let remote = try Chat.resume(port: b.port, token: token, requestID: id, lastEventID: "0")
        // The dropping client: random-length reads, each resumed on a random relay.
        var rng = SplitMix64(seed: 0xD40_9)
        var dropped: [SSEMessage] = []
        var resumes = 0
        while dropped.last.map(isTerminal) != true && resumes < 200 {
            let port = rng.next() % 2 == 0 ? a.port : b.port
            let c = try Chat.resume(port: port, token: token, requestID: id, lastEventID: dropped.last?.lastEventId ?? "0")
            resumes += 1
            if c.status == 204 { break }
            XCTAssertEqual(c.status, 200, "resume \(resumes)")
            let n = 1 + Int(rng.next() % 12)
            for _ in 0..<n {
                guard let e = try c.nextEvent(timeout: 10) else { break }
                dropped.append(e)
                if isTerminal(e) { break }
            }
            c.close()
        }
        ownerEvents += try owner.readAll(timeout: 30)
        let remoteEvents = try remote.readAll(timeout: 30)
        let answer = pieces.joined()
        for (name, evs) in [("owner", ownerEvents), ("remote (pub/sub)", remoteEvents), ("dropping client", dropped)] {
            assertSequence(evs)
            XCTAssertEqual(evs.filter(isTerminal).count, 1, name)
            XCTAssertTrue(Chat.text(evs).utf8.elementsEqual(answer.utf8), "\(name): byte-exact (\(Chat.text(evs).utf8.count) of \(answer.utf8.count) bytes)")
        }
        XCTAssertGreaterThan(resumes, 5, "the client did drop and resume")
        XCTAssertTrue(a.process.isRunning && b.process.isRunning, "no relay crashed")
    }
}
