import Foundation
import RelayAuth
import RelayCore
import RelayRedis
import RelayTestSupport
import RelayTestKit
import RelayUpstream
import XCTest
import RelayEventStore

/// Base class: one real `redis-server` per test (temp Unix socket), relays started
/// on demand and stopped afterwards.
class RelayTestCase: XCTestCase {
    var redis: RedisServer!
    private var relays: [RelayProcess] = []

    override func setUpWithError() throws {
        redis = try RedisServer()
    }

    override func tearDown() {
        for r in relays { r.kill9() }
        relays.removeAll()
        redis?.stop()
        redis = nil
    }

    /// The Redis key `relay:{<ownerHash>:<id>}:<part>` of a stream of user `sub` (stream
    /// keys are namespaced by a hash of the owner, docs/DATA_MODEL.md).
    func streamKey(_ id: String, _ part: String, sub: String = "alice") -> String {
        "relay:{\(OwnerHash.of(sub)):\(id)}:\(part)"
    }

    /// The seq of a stream's top entry (its last seq while it runs: `last_seq` is only
    /// written by the final event), 0 when it holds none.
    func topSeq(_ id: String, sub: String = "alice") throws -> UInt64 {
        let top = try redis.cli("XREVRANGE", streamKey(id, "events", sub: sub), "+", "-", "COUNT", "1")
        return EventLog.seq(ofEntryID: top.split(separator: "\n").first.map(String.init) ?? "") ?? 0
    }

    /// Starts a relay on this test's Redis. Default rate 2,000 tokens/s (fast tests).
    /// Slow-link coalescing is off unless a test sets `RELAY_COALESCE_BACKLOG`: at
    /// thousands of tokens/s a test client on a loaded machine falls behind for moments,
    /// and the tests count one event per seq (`SlowLinkTests` covers coalescing, with a
    /// fast reader that still gets one event per token).
    /// `openFileLimit`: started under `prlimit --nofile=N:N`.
    func startRelay(_ env: [String: String] = [:], openFileLimit: Int? = nil) throws -> RelayProcess {
        var e = ["RELAY_SIMULATED_TOKENS_PER_SECOND": "2000", "RELAY_COALESCE_BACKLOG": "0"]
        for (k, v) in env { e[k] = v }
        let r = try RelayProcess(redisURL: redis.url, env: e, openFileLimit: openFileLimit)
        relays.append(r)
        return r
    }

    /// The answer the simulated upstream must produce for `model` and `maxTokens`, built
    /// independently of the relay: the simulated document's own tokens, the first
    /// `maxTokens` of them, joined. (Comparing the relay with another run of itself
    /// would let a consistent corruption — escaping, dropped scalars — pass;
    /// docs/TESTING.md "It can fail where it matters".)
    func referenceText(model: String = "simulated", maxTokens: Int? = nil) -> String {
        guard let doc = SimulatedDocuments.document(forModel: model) else {
            XCTFail("no simulated document for \(model)"); return ""
        }
        let tokens = SimulatedTokenizer.tokens(doc)
        // The joined tokens are the document itself (SimulatedTextTests), so a prefix of
        // them is a prefix of the document's exact bytes.
        XCTAssertEqual(tokens.joined(), doc, "the tokenizer loses nothing")
        return tokens.prefix(maxTokens ?? tokens.count).joined()
    }

    /// Asserts ids are 1, 2, 3 … from `first`, and the last event is terminal.
    func assertSequence(_ events: [SSEMessage], from first: UInt64 = 1, file: StaticString = #filePath, line: UInt = #line) {
        for (i, e) in events.enumerated() {
            XCTAssertEqual(e.lastEventId, String(first + UInt64(i)), "event \(i) id", file: file, line: line)
        }
        if let last = events.last {
            XCTAssertTrue(SequencedEvent(seq: 0, json: last.data).isTerminal, "last event is done/error", file: file, line: line)
        }
    }

    /// The value of the unlabelled series `name` in the relay's `/metrics` (nil if absent).
    func metric(_ relay: RelayProcess, _ name: String) throws -> Double? {
        let r = try HTTPClient.request(port: relay.port, method: "GET", path: "/metrics")
        for line in r.text.split(separator: "\n") {
            let parts = line.split(separator: " ")
            if parts.count == 2, parts[0] == name { return Double(parts[1]) }
        }
        return nil
    }

    /// The sum of every series of `name` (labelled or not) in the relay's `/metrics`;
    /// 0 when there is none.
    func metricSum(_ relay: RelayProcess, _ name: String) throws -> Double {
        let r = try HTTPClient.request(port: relay.port, method: "GET", path: "/metrics")
        var sum = 0.0
        for line in r.text.split(separator: "\n") where line.hasPrefix(name + " ") || line.hasPrefix(name + "{") {
            if let v = line.split(separator: " ").last.flatMap({ Double($0) }) { sum += v }
        }
        return sum
    }

    /// The sum of `relay_generations_started_total` over `relays` (generations started).
    func generationsStarted(_ relays: [RelayProcess]) throws -> Int {
        try relays.reduce(0) { sum, r in
            let text = try HTTPClient.request(port: r.port, method: "GET", path: "/metrics").text
            let line = text.split(separator: "\n").first { $0.hasPrefix("relay_generations_started_total ") }
            return sum + (line.flatMap { Int($0.split(separator: " ")[1]) } ?? 0)
        }
    }

    /// Whether `m` is a terminal event (`done` or `error`).
    func isTerminal(_ m: SSEMessage) -> Bool {
        guard let e = try? StreamEvent(json: m.data) else { return false }
        return e.isTerminal
    }

    /// The seqs of stream `id`'s stored entries (`XRANGE` of its event log), in order.
    func storedSeqs(_ id: String, sub: String = "alice") throws -> [UInt64] {
        try redis.cli("XRANGE", streamKey(id, "events", sub: sub), "-", "+").split(separator: "\n")
            .compactMap { l in l.hasSuffix("-0") ? EventLog.seq(ofEntryID: String(l)) : nil }
    }

    /// The process id of this test's `redis-server` (`INFO server`), -1 if unreadable.
    func redisPID() throws -> pid_t {
        let info = try redis.cli("INFO", "server")
        let line = info.split(whereSeparator: \.isNewline).first { $0.hasPrefix("process_id:") } ?? ""
        return pid_t(line.dropFirst("process_id:".count).trimmingCharacters(in: .whitespaces)) ?? -1
    }
}
