import Foundation
import RelayCore
import RelayTestKit
import RelayTestSupport
import XCTest

/// A stream keeps the at-rest mode it was created in (docs/DATA_MODEL.md §15): a rolling
/// switch to encryption never serves ciphertext, and with keys set, plaintext that a Redis
/// writer puts into a sealed stream or record is refused (`stored_data_unreadable`).
final class AtRestModeTests: RelayTestCase {
    let keyA = AtRestEncryptionTests.key()

    /// A relay without keys starts an answer and dies; a relay with keys continues it. The
    /// continuation writes in the stream's mode (plain), so a catch-up from 0, an offset
    /// read from -1 and the retained answer hold the answer's text, never `~AQ…` bytes.
    func testARollingSwitchToEncryptionContinuesAPlainStreamWithoutCiphertext() throws {
        let env = ["RELAY_SIMULATED_TOKENS_PER_SECOND": "150", "RELAY_BUFFER_EVENTS": "40"]
        let plain = try startRelay(env.merging(["RELAY_WORKERS": "1"]) { $1 })
        let sealed = try startRelay(env.merging(["RELAY_ENCRYPTION_KEYS": "k1:\(keyA)"]) { $1 })
        let token = RelayProcess.token()
        let id = Chat.newID()
        let maxTokens = 300
        let owner = try Chat.start(port: plain.port, token: token, requestID: id, maxTokens: maxTokens)
        var seen: [SSEMessage] = []
        for _ in 0..<100 { seen.append(try XCTUnwrap(try owner.nextEvent())) }   // past the 40-event window
        let reader = try Chat.resume(port: sealed.port, token: token, requestID: id, lastEventID: seen.last!.lastEventId)
        plain.kill9()
        owner.close()
        let rest = try reader.readAll(timeout: 30)
        assertSequence(seen + rest)
        XCTAssertTrue(Chat.text(seen + rest) == referenceText(maxTokens: maxTokens), "byte-identical to an uninterrupted answer")
        XCTAssertEqual(try redis.cli("HMGET", streamKey(id, "meta"), "atrest", "epoch"), "plain\n1", "continued in the stream's own mode")
        let auth = [("Authorization", "Bearer \(token)")]
        let fromZero = try Chat.resume(port: sealed.port, token: token, requestID: id, lastEventID: "0").readAll(timeout: 20)
        XCTAssertTrue(Chat.text(fromZero) == referenceText(maxTokens: maxTokens), "a catch-up from 0 holds no ciphertext")
        let offsets = try HTTPClient.request(port: sealed.port, method: "GET", path: "/api/chat/stream/\(id)?offset=-1", headers: auth)
        XCTAssertEqual(offsets.status, 200, offsets.text)
        XCTAssertFalse(offsets.text.contains("~AQ"), "an offset read from -1 holds no ciphertext")
        let answer = try HTTPClient.request(port: sealed.port, method: "GET", path: "/api/chat/answers/\(id)", headers: auth)
        XCTAssertEqual(answer.status, 200, answer.text)
        XCTAssertTrue(answer.text.contains(JSONText.quoted(referenceText(maxTokens: maxTokens))), "the retained answer is whole")
        XCTAssertFalse(answer.text.contains("~AQ"))
    }

    /// With keys set, a Redis writer's plaintext inside a sealed stream (an entry, the
    /// text) and a plaintext retained answer without the plain mark are refused like a
    /// value under a wrong key: the forged words never reach a client.
    func testPlaintextWrittenIntoASealedStreamOrRecordIsRefused() throws {
        let relay = try startRelay(["RELAY_ENCRYPTION_KEYS": "k1:\(keyA)", "RELAY_SIMULATED_TOKENS_PER_SECOND": "50000",
                                    "RELAY_BUFFER_EVENTS": "40"])
        let token = RelayProcess.token()
        let auth = [("Authorization", "Bearer \(token)")]
        let id = Chat.newID()
        _ = try Chat.start(port: relay.port, token: token, requestID: id, maxTokens: 100).readAll()
        // Forged text in front of the sealed records: a catch-up from 0 reads the text.
        _ = try redis.cli("SETRANGE", streamKey(id, "text"), "0", "FORGED1")
        let catchUp = try HTTPClient.request(port: relay.port, method: "GET", path: "/api/chat/stream/\(id)",
                                             headers: auth + [("Last-Event-ID", "0")])
        XCTAssertFalse(catchUp.text.contains("FORGED1"), catchUp.text.suffix(200).description)
        XCTAssertTrue(catchUp.text.contains("stored_data_unreadable"), catchUp.text.suffix(200).description)
        // Forged plaintext entries in place of the last ones (the writer re-makes the stream key).
        let events = streamKey(id, "events")
        _ = try redis.cli("DEL", events)
        _ = try redis.cli("XADD", events, "96-0", "e", #"{"type":"delta","content":"FORGED0"}"#)
        _ = try redis.cli("XADD", events, "101-0", "e", #"{"type":"done","finish_reason":"stop","usage":{"prompt_tokens":1,"completion_tokens":1}}"#)
        let resumed = try HTTPClient.request(port: relay.port, method: "GET", path: "/api/chat/stream/\(id)",
                                             headers: auth + [("Last-Event-ID", "95")])
        XCTAssertFalse(resumed.text.contains("FORGED0"), resumed.text.suffix(200).description)
        XCTAssertTrue(resumed.text.contains("stored_data_unreadable"), resumed.text.suffix(200).description)
        let offsets = try HTTPClient.request(port: relay.port, method: "GET", path: "/api/chat/stream/\(id)?offset=\(String(format: "%020d", 95))",
                                             headers: auth)
        XCTAssertFalse(offsets.text.contains("FORGED0"), offsets.text)
        XCTAssertEqual(offsets.errorCode, "stored_data_unreadable", offsets.text)
        let answer = streamKey(id, "answer")
        let doneJSON = #"{"type":"done","finish_reason":"stop","usage":{"prompt_tokens":1,"completion_tokens":1}}"#
        let forged = "RA1\n{\"owner\":\"alice\",\"sid\":\"s\",\"final_seq\":2,\"created_ms\":1,\"finished_ms\":2,\"text_bytes\":7}\n\(doneJSON)\nFORGED2" + Data([7]).base64EncodedString()
        _ = try redis.cli("SET", answer, forged)
        let read = try HTTPClient.request(port: relay.port, method: "GET", path: "/api/chat/answers/\(id)", headers: auth)
        XCTAssertFalse(read.text.contains("FORGED2"), read.text)
        XCTAssertEqual(read.errorCode, "stored_data_unreadable", read.text)
    }

    /// With keys set, a plaintext message on a sealed answer's live channel (a Redis writer's
    /// `PUBLISH`) is not delivered as it came: the reader reads the stored entry instead,
    /// under the stream's mode, and the forged words never reach it (docs/DATA_MODEL.md §15).
    func testAPlaintextLiveMessageForASealedAnswerNeverReachesAReader() throws {
        let env = ["RELAY_ENCRYPTION_KEYS": "k1:\(keyA)", "RELAY_SIMULATED_TOKENS_PER_SECOND": "20"]
        let owner = try startRelay(env), other = try startRelay(env)
        let token = RelayProcess.token()
        let id = Chat.newID()
        let maxTokens = 120
        let started = try Chat.start(port: owner.port, token: token, requestID: id, maxTokens: maxTokens)
        _ = try XCTUnwrap(try started.nextEvent())
        // A reader on the other relay follows the live channel (the owner's own readers do not).
        let reader = try Chat.resume(port: other.port, token: token, requestID: id, lastEventID: "0")
        var seen: [SSEMessage] = []
        for _ in 0..<10 { seen.append(try XCTUnwrap(try reader.nextEvent())) }
        let next = (UInt64(seen.last!.lastEventId) ?? 0) + 1
        for seq in next..<(next + 5) {
            _ = try redis.cli("PUBLISH", streamKey(id, "live"), "\(seq) {\"type\":\"delta\",\"content\":\"FORGED3 \"}")
        }
        seen += try reader.readAll(timeout: 30)
        XCTAssertFalse(seen.contains { $0.data.contains("FORGED3") }, "a forged live message reached the reader")
        assertSequence(seen)
        XCTAssertTrue(Chat.text(seen) == referenceText(maxTokens: maxTokens), "byte-identical to an uninterrupted answer")
        started.close()
    }

    /// A relay without keys never takes over (nor ends) a sealed answer whose owner died: it
    /// cannot read it, so it changes nothing and a relay with keys continues the answer
    /// (docs/DATA_MODEL.md §15).
    func testARelayWithoutKeysLeavesASealedAnswerToOneWithKeys() throws {
        try assertSealedAnswerLeftAlone(by: [:], "the keyless relay")
    }

    /// A relay whose keys do not open the answer (another key under another kid) is a relay
    /// without keys for it: it neither takes the answer over nor spends a continuation
    /// (`EventLog.takeoverIfReadable`), and the relay with the right key continues it.
    func testARelayWithOtherKeysLeavesASealedAnswerToOneThatOpensIt() throws {
        try assertSealedAnswerLeftAlone(by: ["RELAY_ENCRYPTION_KEYS": "k9:\(AtRestEncryptionTests.key())"], "the relay with other keys")
    }

    /// The owner (keys k1) dies mid-answer while `other` reads it; past the lease and the
    /// sweep `other` has changed nothing; then a relay with k1 continues the answer.
    private func assertSealedAnswerLeftAlone(by otherEnv: [String: String], _ what: String) throws {
        let env = ["RELAY_SIMULATED_TOKENS_PER_SECOND": "100"]
        let keys = ["RELAY_ENCRYPTION_KEYS": "k1:\(keyA)"]
        let owner = try startRelay(env.merging(keys) { $1 }.merging(["RELAY_WORKERS": "1"]) { $1 })
        let keyless = try startRelay(env.merging(otherEnv) { $1 })
        let token = RelayProcess.token()
        let id = Chat.newID()
        let maxTokens = 300
        let c = try Chat.start(port: owner.port, token: token, requestID: id, maxTokens: maxTokens)
        var seen: [SSEMessage] = []
        for _ in 0..<30 { seen.append(try XCTUnwrap(try c.nextEvent())) }
        let onKeyless = try Chat.resume(port: keyless.port, token: token, requestID: id, lastEventID: seen.last!.lastEventId)
        owner.kill9()
        c.close()
        let meta = streamKey(id, "meta")
        // Past the lease and the sweep: the other relay has a reader, yet changes nothing.
        try consistently(for: 8, "\(what) leaves the sealed answer alone") {
            try self.redis.cli("HGET", meta, "state") == "running" && self.redis.cli("HGET", meta, "epoch") == ""
        }
        onKeyless.close()
        let keyed = try startRelay(env.merging(keys) { $1 })
        let rest = try Chat.resume(port: keyed.port, token: token, requestID: id, lastEventID: seen.last!.lastEventId).readAll(timeout: 30)
        assertSequence(seen + rest)
        XCTAssertTrue(Chat.text(seen + rest) == referenceText(maxTokens: maxTokens), "continued by the relay with keys, byte-identical")
        XCTAssertEqual(try redis.cli("HMGET", meta, "state", "epoch"), "done\n1", "one takeover: \(what) spent none")
    }
}
