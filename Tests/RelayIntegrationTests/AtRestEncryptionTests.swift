import Foundation
import RelayCore
import RelayTestKit
import RelayTestSupport
import XCTest

/// Answers sealed at rest (`RELAY_ENCRYPTION_KEYS`, docs/DATA_MODEL.md §15): nothing of an
/// answer is readable in Redis, its RDB snapshot or its AOF; resumes, lossless catch-ups
/// and offset reads work as without it; a relay without the right key answers
/// `stored_data_unreadable`, never the sealed bytes.
final class AtRestEncryptionTests: RelayTestCase {
    static func key() -> String {
        var g = SystemRandomNumberGenerator()
        return Data((0..<32).map { _ in UInt8.random(in: 0...255, using: &g) }).base64EncodedString()
    }
    let keyA = AtRestEncryptionTests.key()
    let keyB = AtRestEncryptionTests.key()

    /// Distinctive phrases of the English and Arabic simulated answers: a few words from
    /// several places in each document (whole words, so no phrase starts mid-character).
    func phrases(model: String) -> [String] {
        let words = referenceText(model: model).split(separator: " ")
        return stride(from: 40, to: min(words.count - 4, 400), by: 60).map { words[$0..<($0 + 3)].joined(separator: " ") }
            .filter { $0.utf8.count >= 12 && !$0.contains("\n") }
    }

    /// The RDB and AOF files' bytes after two answers (English, Arabic), with AOF on and
    /// RDB compression off (so plaintext would show as it is).
    func persistedFiles(env: [String: String]) throws -> (rdb: Data, aof: Data, monitor: String) {
        try redis.cli("CONFIG", "SET", "rdbcompression", "no")
        try redis.cli("CONFIG", "SET", "appendonly", "yes")
        try redis.cli("CONFIG", "SET", "appendfsync", "always")
        try eventually(10, "the AOF to be on") {
            let info = try redis.cli("INFO", "persistence")
            return info.contains("aof_enabled:1") && info.contains("aof_rewrite_in_progress:0")
                && !info.contains("aof_rewrite_scheduled:1")
        }
        // Everything Redis executes, pub/sub included (what a MONITOR or a replica sees).
        let monitorFile = redis.directory.appendingPathComponent("monitor.txt")
        FileManager.default.createFile(atPath: monitorFile.path, contents: nil)
        let monitor = Process()
        monitor.executableURL = URL(fileURLWithPath: TestPaths.which("stdbuf"))
        monitor.arguments = ["-oL", TestPaths.which("redis-cli"), "-s", redis.socketPath, "MONITOR"]
        monitor.standardOutput = try FileHandle(forWritingTo: monitorFile)
        try monitor.run()
        defer { if monitor.isRunning { monitor.terminate(); monitor.waitUntilExit() } }
        let relay = try startRelay(env.merging(["RELAY_SIMULATED_TOKENS_PER_SECOND": "50000"]) { $1 })
        let token = RelayProcess.token()
        for model in ["simulated", "simulated-ar"] {
            let all = try Chat.start(port: relay.port, token: token, model: model).readAll()
            XCTAssertEqual(Chat.text(all), referenceText(model: model), "the client gets the answer as it is")
        }
        XCTAssertEqual(try redis.cli("SAVE"), "OK")
        // MONITOR does not show SAVE: a marker that it does, after everything else.
        try redis.cli("ECHO", "monitor-end")
        try eventually(5, "MONITOR to have seen the end marker") {
            (try? String(contentsOf: monitorFile, encoding: .utf8))?.contains("monitor-end") ?? false
        }
        monitor.terminate()
        monitor.waitUntilExit()
        let seen = (try? String(contentsOf: monitorFile, encoding: .utf8)) ?? ""
        let rdb = try Data(contentsOf: redis.directory.appendingPathComponent("dump.rdb"))
        var aof = Data()
        let aofDir = redis.directory.appendingPathComponent("appendonlydir")
        for f in try FileManager.default.contentsOfDirectory(atPath: aofDir.path) {
            aof.append(try Data(contentsOf: aofDir.appendingPathComponent(f)))
        }
        XCTAssertGreaterThan(rdb.count, 10_000)
        XCTAssertGreaterThan(aof.count, 10_000)
        return (rdb, aof, seen)
    }

    func hits(_ phrase: String, in data: Data) -> Int {
        let needle = Data(phrase.utf8)
        var n = 0, from = data.startIndex
        while let r = data.range(of: needle, in: from..<data.endIndex) { n += 1; from = r.upperBound }
        return n
    }

    func testRDBAndAOFHoldNoPhraseOfEitherAnswerWithEncryptionOn() throws {
        let files = try persistedFiles(env: ["RELAY_ENCRYPTION_KEYS": "k1:\(keyA)"])
        let all = phrases(model: "simulated") + phrases(model: "simulated-ar")
        XCTAssertGreaterThan(phrases(model: "simulated-ar").count, 2)
        // Live messages are sealed too: every PUBLISH MONITOR saw carries a sealed event.
        let publishes = files.monitor.split(separator: "\n").filter { $0.contains("\"PUBLISH\" \"relay:{") }
        XCTAssertGreaterThan(publishes.count, 1000)
        // A JSON key as MONITOR escapes it (`\"type`): base64 never holds a quote or a
        // backslash, but may spell `type` by chance.
        let plainJSON = "\\\"type"
        XCTAssertTrue(publishes.allSatisfy { $0.contains(" ~AQ") && !$0.contains(plainJSON) },
                      "\(publishes.first { !$0.contains(" ~AQ") || $0.contains(plainJSON) } ?? "")")
        for p in phrases(model: "simulated") { XCTAssertFalse(files.monitor.contains(p), "MONITOR saw \(p)") }
        for p in all {
            XCTAssertEqual(hits(p, in: files.rdb), 0, "RDB holds \(p)")
            XCTAssertEqual(hits(p, in: files.aof), 0, "AOF holds \(p)")
        }
        // Not even one word of the answers' longer words.
        for w in (referenceText() + " " + referenceText(model: "simulated-ar")).split(separator: " ") where w.utf8.count >= 14 {
            XCTAssertEqual(hits(String(w), in: files.rdb) + hits(String(w), in: files.aof), 0, "\(w) in a file")
        }
    }

    /// The same proof with encryption off finds the phrases: the test above can fail.
    func testRDBAndAOFHoldThePhrasesWithEncryptionOff() throws {
        let files = try persistedFiles(env: [:])
        for model in ["simulated", "simulated-ar"] {
            let ps = phrases(model: model)
            XCTAssertGreaterThan(ps.count, 2)
            for p in ps { XCTAssertGreaterThan(hits(p, in: files.rdb), 0, "RDB lacks \(p) (\(model))") }
            XCTAssertGreaterThan(ps.map { hits($0, in: files.aof) }.reduce(0, +), 0, "AOF lacks every phrase of \(model)")
        }
        let publishes = files.monitor.split(separator: "\n").filter { $0.contains("\"PUBLISH\" \"relay:{") }
        XCTAssertTrue(publishes.contains { $0.contains("delta") }, "plain live messages are visible to MONITOR")
    }

    func testStoredValuesAreSealedAndResumesAndCatchUpsLoseNothing() throws {
        let relay = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "50000", "RELAY_ENCRYPTION_KEYS": "k1:\(keyA)"])
        let token = RelayProcess.token()
        var events = 0
        for model in ["simulated", "simulated-ar"] {
            let id = Chat.newID()
            let all = try Chat.start(port: relay.port, token: token, requestID: id, model: model).readAll()
            events += all.count
            let reference = Chat.text(all)
            XCTAssertEqual(reference, referenceText(model: model))
            // In Redis: sealed entries and a text key of sealed records only.
            let entry = try redis.cli("XREVRANGE", streamKey(id, "events"), "+", "-", "COUNT", "1")
            XCTAssertTrue(entry.contains("~AQJrM"), "a sealed entry (version 1, kid k1): \(entry.prefix(120))")
            XCTAssertFalse(entry.contains("\"type\""))
            let text = try redis.cli("GETRANGE", streamKey(id, "text"), "0", "0")
            XCTAssertEqual(text, "~")
            let n = all.count
            let retained = Int(try redis.cli("XLEN", streamKey(id, "events"))) ?? 0
            for k in [0, 1, 77, 1500, n - retained - 1, n - retained, n - 1, n] {
                let rest = try Chat.resume(port: relay.port, token: token, requestID: id, lastEventID: String(k)).readAll()
                XCTAssertEqual(Chat.text(Array(all.prefix(k))) + Chat.text(rest), reference, "\(model) resume from \(k)")
                // Behind the window too, opened from the sealed text: the events as streamed.
                XCTAssertTrue(rest.map(\.lastEventId) == all.dropFirst(k).map(\.lastEventId) && rest.map(\.data) == all.dropFirst(k).map(\.data),
                              "\(model) resume from \(k): the same events")
            }
            // Offset reads (docs/PROTOCOL.md §12) open the same entries.
            let r = try HTTPClient.request(port: relay.port, method: "GET", path: "/api/chat/stream/\(id)?offset=\(n - 5)",
                                           headers: [("Authorization", "Bearer \(token)")])
            XCTAssertEqual(r.status, 200)
            XCTAssertEqual(r.text, "[" + all.suffix(5).map(\.data).joined(separator: ",") + "]")
        }
        // Each worker adds its counts on its next sweep: one seal per event (its entry and
        // live message share it) and one per text record; opens by every resume.
        try eventually(10, "the seals and opens to be counted") {
            try self.metric(relay, "relay_at_rest_seals_total") ?? 0 > Double(events)
                && self.metric(relay, "relay_at_rest_opens_total") ?? 0 > 1000
        }
        XCTAssertEqual(try metric(relay, "relay_at_rest_open_failures_total"), 0)
    }

    /// A small window writes the text every two events, so the final event is often sent
    /// while a text write is still in flight; that write's reply then comes after the final
    /// event's script wrote its own record over it. Every answer's text must still open: a
    /// catch-up from the start returns the answer as streamed, never `stored_data_unreadable`.
    func testTheTextStaysReadableWhenTheFinalEventOvertakesATextWrite() throws {
        let relay = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "2000", "RELAY_BUFFER_EVENTS": "20",
                                    "RELAY_ENCRYPTION_KEYS": "k1:\(keyA)"])
        let token = RelayProcess.token()
        for maxTokens in [60, 61, 62, 63, 64, 65] {
            let id = Chat.newID()
            let all = try Chat.start(port: relay.port, token: token, requestID: id, maxTokens: maxTokens).readAll()
            XCTAssertEqual(all.count, maxTokens + 1)
            let rest = try Chat.resume(port: relay.port, token: token, requestID: id, lastEventID: "0").readAll()
            XCTAssertEqual(rest.count, all.count, "max_tokens \(maxTokens): \(rest.first?.data.prefix(160) ?? "nothing")")
            XCTAssertTrue(rest.map(\.data) == all.map(\.data), "max_tokens \(maxTokens): a catch-up from the start gets the answer as streamed")
        }
        XCTAssertEqual(try metric(relay, "relay_at_rest_open_failures_total"), 0)
    }

    /// A live answer read through another relay: its live messages (sealed too) and a
    /// catch-up while the text is still being written.
    func testLiveStreamAcrossTwoRelaysAfterTheWindowMoved() throws {
        let env = ["RELAY_SIMULATED_TOKENS_PER_SECOND": "800", "RELAY_ENCRYPTION_KEYS": "k1:\(keyA)"]
        let a = try startRelay(env)
        let b = try startRelay(env)
        let token = RelayProcess.token()
        let id = Chat.newID()
        let first = try Chat.start(port: a.port, token: token, requestID: id)
        var events: [SSEMessage] = []
        for _ in 0..<50 { events.append(try XCTUnwrap(try first.nextEvent())) }
        first.close()
        try eventually(20, "the window to move past the client") { try topSeq(id) > 50 + 400 }
        let rest = try Chat.resume(port: b.port, token: token, requestID: id, lastEventID: "50").readAll()
        XCTAssertEqual(Chat.text(events) + Chat.text(rest), referenceText())
        let ids = rest.compactMap { Int($0.lastEventId) }
        XCTAssertEqual(ids, Array(ids.first!...ids.last!), "no gap or duplicate after the catch-up")
    }

    /// Rotation: a relay listing a new current key first and the old one after reads what
    /// the old key sealed, and seals what it writes with the new one.
    func testRotatedKeyListStillOpensOldDataAndSealsWithTheNewKid() throws {
        let old = try startRelay(["RELAY_ENCRYPTION_KEYS": "k1:\(keyA)"])
        let token = RelayProcess.token()
        let id = Chat.newID()
        let all = try Chat.start(port: old.port, token: token, requestID: id, maxTokens: 300).readAll()
        let rotated = try startRelay(["RELAY_ENCRYPTION_KEYS": "k2:\(keyB),k1:\(keyA)"])
        let rest = try Chat.resume(port: rotated.port, token: token, requestID: id, lastEventID: "0").readAll()
        XCTAssertEqual(Chat.text(rest), Chat.text(all))
        let id2 = Chat.newID()
        _ = try Chat.start(port: rotated.port, token: token, requestID: id2, maxTokens: 20).readAll()
        let entry = try redis.cli("XREVRANGE", streamKey(id2, "events"), "+", "-", "COUNT", "1")
        XCTAssertTrue(entry.contains("~AQJrM"), "kid k2 is 2 bytes too: \(entry.prefix(60))")
        // k2's entries do not open on the old relay: it does not hold k2.
        let refused = try HTTPClient.request(port: old.port, method: "GET", path: "/api/chat/stream/\(id2)",
                                             headers: [("Authorization", "Bearer \(token)"), ("Last-Event-ID", "0")])
        XCTAssertTrue(refused.text.contains("stored_data_unreadable"), refused.text)
    }

    /// Another key under the same kid, another kid, and no keys at all: each reader gets
    /// `stored_data_unreadable` and not one byte of sealed data or garbage.
    func testAWrongOrMissingKeyAnswersStoredDataUnreadableNeverGarbage() throws {
        let writer = try startRelay(["RELAY_ENCRYPTION_KEYS": "k1:\(keyA)", "RELAY_SIMULATED_TOKENS_PER_SECOND": "50000"])
        let token = RelayProcess.token()
        let id = Chat.newID()
        _ = try Chat.start(port: writer.port, token: token, requestID: id).readAll()
        for keys in ["k1:\(keyB)", "k9:\(keyB)", nil] {
            var env = ["RELAY_SIMULATED_TOKENS_PER_SECOND": "50000"]
            if let keys { env["RELAY_ENCRYPTION_KEYS"] = keys }
            let reader = try startRelay(env)
            for lastID in ["0", "2990"] {   // a catch-up (text records), then retained entries
                let r = try HTTPClient.request(port: reader.port, method: "GET", path: "/api/chat/stream/\(id)",
                                               headers: [("Authorization", "Bearer \(token)"), ("Last-Event-ID", lastID)])
                let body = r.text
                XCTAssertTrue(body.contains("\"code\":\"stored_data_unreadable\""), "\(keys.map { String($0.prefix(2)) } ?? "no keys") from \(lastID): \(body.prefix(200))")
                XCTAssertFalse(body.contains("\"type\":\"delta\""), "no delta of a value that did not open")
                XCTAssertFalse(body.contains("~AQ"), "no sealed bytes")
            }
            let offsets = try HTTPClient.request(port: reader.port, method: "GET", path: "/api/chat/stream/\(id)?offset=2990",
                                                 headers: [("Authorization", "Bearer \(token)")])
            XCTAssertEqual(offsets.status, 500)
            XCTAssertEqual(offsets.errorCode, "stored_data_unreadable")
            // Each worker adds its counts on its next sweep.
            try eventually(10, "the failures to be counted") {
                try self.metric(reader, "relay_at_rest_open_failures_total") ?? 0 > 0
            }
        }
    }

    /// The retained answer (kept after the stream's keys expired) is sealed under its own
    /// key's name: the right key reads it back whole, another key gets
    /// `stored_data_unreadable`.
    func testRetainedAnswerIsSealedAndOnlyTheRightKeyReadsIt() throws {
        let env = ["RELAY_ENCRYPTION_KEYS": "k1:\(keyA)", "RELAY_BUFFER_TTL": "1s", "RELAY_SIMULATED_TOKENS_PER_SECOND": "50000"]
        let relay = try startRelay(env)
        let token = RelayProcess.token()
        let id = Chat.newID()
        let all = try Chat.start(port: relay.port, token: token, requestID: id, model: "simulated-ar", maxTokens: 200).readAll()
        try eventually(10, "the stream's own keys to expire") { try self.redis.cli("EXISTS", self.streamKey(id, "events")) == "0" }
        let stored = try redis.cli("GETRANGE", streamKey(id, "answer"), "0", "5")
        XCTAssertTrue(stored.hasPrefix("~AQJrM"), "the record is sealed: \(stored)")
        let auth = [("Authorization", "Bearer \(token)")]
        let ok = try HTTPClient.request(port: relay.port, method: "GET", path: "/api/chat/answers/\(id)", headers: auth)
        XCTAssertEqual(ok.status, 200, ok.text)
        XCTAssertTrue(ok.text.contains(JSONText.quoted(Chat.text(all))), "the whole Arabic answer: \(ok.text.prefix(120))")
        let other = try startRelay(env.merging(["RELAY_ENCRYPTION_KEYS": "k1:\(keyB)"]) { $1 })
        let refused = try HTTPClient.request(port: other.port, method: "GET", path: "/api/chat/answers/\(id)", headers: auth)
        XCTAssertEqual(refused.status, 500, refused.text)
        XCTAssertEqual(refused.errorCode, "stored_data_unreadable")
        let resumed = try HTTPClient.request(port: other.port, method: "GET", path: "/api/chat/stream/\(id)",
                                             headers: auth + [("Last-Event-ID", "3")])
        XCTAssertEqual(resumed.errorCode, "stored_data_unreadable", resumed.text)
    }

    /// A stalled owner of a stream that may not be continued (`RELAY_MAX_CONTINUATIONS=0`):
    /// another relay's lease expiry appends `upstream_lost` (sealed by that relay,
    /// published by the script) and the resumed client reads it in clear.
    func testLeaseExpiryEventIsSealedAndReadBack() throws {
        let env = ["RELAY_ENCRYPTION_KEYS": "k1:\(keyA)", "RELAY_SIMULATED_TOKENS_PER_SECOND": "40",
                   "RELAY_MAX_CONTINUATIONS": "0"]
        let a = try startRelay(env.merging(["RELAY_WORKERS": "1"]) { $1 })
        let b = try startRelay(env)
        let token = RelayProcess.token()
        let id = Chat.newID()
        let owner = try Chat.start(port: a.port, token: token, requestID: id, maxTokens: 600)
        var ownerEvents: [SSEMessage] = []
        for _ in 0..<5 { ownerEvents.append(try XCTUnwrap(try owner.nextEvent())) }
        let pid = a.process.processIdentifier
        Foundation.kill(pid, SIGSTOP)
        defer { Foundation.kill(pid, SIGCONT) }
        let rest = try Chat.resume(port: b.port, token: token, requestID: id, lastEventID: ownerEvents.last!.lastEventId).readAll(timeout: 15)
        guard let last = rest.last, case .error(_, "upstream_lost", _)? = try? StreamEvent(json: last.data) else {
            return XCTFail("the resumed client ends with upstream_lost, got \(rest.suffix(2).map(\.data))")
        }
        assertSequence(ownerEvents + rest)
        let top = try redis.cli("XREVRANGE", streamKey(id, "events"), "+", "-", "COUNT", "1")
        XCTAssertTrue(top.contains("~AQJrM") && !top.contains("upstream_lost"), "the terminal entry is sealed: \(top.prefix(80))")
    }

    /// A killed owner's stream is taken over with everything sealed (docs/PROTOCOL.md §4.5,
    /// docs/DATA_MODEL.md §15): the taker opens the sealed text records and entries, writes
    /// its own after them, and the reader gets the whole answer byte-identical; a late
    /// catch-up from 0 through the sealed text and the retained answer hold all of it.
    func testAKilledOwnersSealedStreamIsContinuedWholeAndRetainedWhole() throws {
        let env = ["RELAY_ENCRYPTION_KEYS": "k1:\(keyA)", "RELAY_SIMULATED_TOKENS_PER_SECOND": "150",
                   "RELAY_BUFFER_EVENTS": "40"]
        let a = try startRelay(env.merging(["RELAY_WORKERS": "1"]) { $1 })
        let b = try startRelay(env)
        let token = RelayProcess.token()
        let id = Chat.newID()
        let maxTokens = 300
        let owner = try Chat.start(port: a.port, token: token, requestID: id, maxTokens: maxTokens)
        var seen: [SSEMessage] = []
        // Far past the 40-event window: the text before the oldest entry is in sealed records.
        for _ in 0..<120 { seen.append(try XCTUnwrap(try owner.nextEvent())) }
        let reader = try Chat.resume(port: b.port, token: token, requestID: id, lastEventID: seen.last!.lastEventId)
        a.kill9()
        owner.close()
        let rest = try reader.readAll(timeout: 30)
        assertSequence(seen + rest)
        guard case .done(.length, _, _)? = try? StreamEvent(json: rest.last?.data ?? "") else {
            return XCTFail("the continued answer ends with done, got \(rest.suffix(1).map(\.data))")
        }
        XCTAssertTrue(Chat.text(seen + rest) == referenceText(maxTokens: maxTokens), "byte-identical to an uninterrupted answer")
        XCTAssertEqual(try metric(b, "relay_takeovers_total"), 1)
        let fromZero = try Chat.resume(port: b.port, token: token, requestID: id, lastEventID: "0").readAll(timeout: 20)
        XCTAssertTrue(Chat.text(fromZero) == referenceText(maxTokens: maxTokens), "a catch-up from 0 reads the sealed text whole")
        XCTAssertTrue(try redis.cli("GETRANGE", streamKey(id, "request"), "0", "0") == "~", "the stored request is sealed")
        let answer = try HTTPClient.request(port: b.port, method: "GET", path: "/api/chat/answers/\(id)",
                                            headers: [("Authorization", "Bearer \(token)")])
        XCTAssertEqual(answer.status, 200, answer.text)
        XCTAssertTrue(answer.text.contains(JSONText.quoted(referenceText(maxTokens: maxTokens))), "the retained answer is the whole answer")
        XCTAssertTrue(try redis.cli("GETRANGE", streamKey(id, "answer"), "0", "0") == "~", "the retained answer is sealed")
    }

    /// A bad `RELAY_ENCRYPTION_KEYS` stops the relay at start with a message naming the
    /// problem (and never the key).
    func testBadEncryptionKeysStopTheRelayAtStartWithAClearError() throws {
        let file = redis.directory.appendingPathComponent("keys")
        try "k1:\(keyA)\nk1:\(keyB)\n".write(to: file, atomically: true, encoding: .utf8)
        let cases: [(String, String)] = [
            ("k1:not-base64!", "not valid base64"),
            ("k1:\(Data(repeating: 1, count: 16).base64EncodedString())", "16 bytes"),
            ("k1:\(keyA),k1:\(keyB)", "given twice"),
            (" ", "empty"),
            ("file:///nonexistent/relay-keys", "cannot read /nonexistent/relay-keys"),
            ("file://\(file.path)", "given twice"),
        ]
        for (value, message) in cases {
            let r = try ToolProcess.run(TestPaths.relayBinary, ["serve"], environment: ChildEnvironment.minimal([
                "RELAY_ENCRYPTION_KEYS": value, "REDIS_URL": redis.url, "RELAY_LISTEN": "127.0.0.1:0",
                "RELAY_JWT_SECRET": RelayProcess.secret]), timeout: 20)
            XCTAssertEqual(r.status, 2, "\(value): \(r.output)")
            XCTAssertTrue(r.stderr.contains("RELAY_ENCRYPTION_KEYS"), r.output)
            XCTAssertTrue(r.stderr.contains(message), "\(value): \(r.output)")
            XCTAssertFalse(r.stderr.contains(keyA) || r.stderr.contains(keyB), "no key material in the error")
        }
    }
}
