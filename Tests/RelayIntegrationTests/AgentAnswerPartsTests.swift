import Foundation
import RelayAuth
import RelayCore
import RelayTestKit
import RelayTestSupport
import RelayUpstream
import XCTest

/// An answer with typed parts (docs/PROTOCOL.md §5.5) — the built-in agent answer,
/// `simulated-tools`: reasoning, two tool calls with streamed arguments, a source, text —
/// read the same way from every cut, on another instance, inside the retained window,
/// after it (lossless catch-up), by offset, and once the stream's keys expired (retained
/// answer); with encryption at rest off and on; and continued after its owner is killed
/// inside a tool call's arguments.
final class AgentAnswerPartsTests: RelayTestCase {
    /// The uninterrupted answer: every event's JSON, seq 1 first, `done` last.
    private func reference() -> [String] {
        SimulatedAgentAnswer.events.map(\.json)
    }

    private func events(_ ms: [SSEMessage]) -> [(UInt64, String)] {
        ms.compactMap { m in UInt64(m.lastEventId).map { ($0, m.data) } }
    }

    /// Asserts `got` is exactly the reference events after `k`, each with its seq, then one `done`.
    private func assertRest(_ got: [(UInt64, String)], after k: Int, _ what: String, file: StaticString = #filePath, line: UInt = #line) {
        let ref = reference()
        let body = got.filter { !$0.1.hasPrefix("{\"type\":\"done\"") }
        XCTAssertEqual(body.map(\.0), (k < ref.count ? Array(UInt64(k + 1)...UInt64(ref.count)) : []), "\(what): seqs", file: file, line: line)
        XCTAssertEqual(body.map(\.1), Array(ref.dropFirst(k)), "\(what): events", file: file, line: line)
        XCTAssertEqual(got.last?.0, UInt64(ref.count + 1), "\(what): done last, once", file: file, line: line)
        XCTAssertEqual(got.filter { $0.1.hasPrefix("{\"type\":\"done\"") }.count, 1, "\(what): one done", file: file, line: line)
    }

    /// The events of an offset read's JSON array, each as its JSON object text re-read by
    /// Foundation, compared with the reference's objects.
    private func assertOffsetRead(_ body: String, after k: Int, _ what: String, file: StaticString = #filePath, line: UInt = #line) {
        guard let got = (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [NSDictionary] else {
            return XCTFail("\(what): not a JSON array: \(body.prefix(200))", file: file, line: line)
        }
        let want = reference().dropFirst(k).map { try! JSONSerialization.jsonObject(with: Data($0.utf8)) as! NSDictionary }
        XCTAssertEqual(Array(got.prefix(want.count)), Array(want), "\(what): the parts and deltas after \(k)", file: file, line: line)
        XCTAssertEqual(got.last?["type"] as? String, "done", "\(what): done last", file: file, line: line)
    }

    func testAnAgentAnswerIsTheSameFromEveryCutOnAnotherInstanceAfterTheWindowByOffsetAndRetained() throws {
        for encrypted in [false, true] {
            let name = encrypted ? "sealed at rest" : "plain"
            var env = ["RELAY_SIMULATED_TOKENS_PER_SECOND": "400", "RELAY_BUFFER_EVENTS": "40", "RELAY_BUFFER_TTL": "6s"]
            if encrypted { env["RELAY_ENCRYPTION_KEYS"] = "k1:\(AtRestEncryptionTests.key())" }
            let a = try startRelay(env)
            let b = try startRelay(env)
            let user = "agent-\(UUID().uuidString.prefix(6))"
            let token = RelayProcess.token(sub: user, sid: "s1")
            let id = Chat.newID()
            let live = events(try Chat.start(port: a.port, token: token, requestID: id, model: "simulated-tools").readAll(timeout: 20))
            assertRest(live, after: 0, "\(name): the live answer")
            let tokens = SimulatedAgentAnswer.events.filter { e in
                if case .delta = e { return true }
                if case .part(let p) = e { return p.countsAsToken }
                return false
            }.count
            guard case .done(let reason, let usage, _)? = try? StreamEvent(json: live.last?.1 ?? "") else {
                return XCTFail("\(name): ends with done")
            }
            XCTAssertEqual(reason, .stop)
            XCTAssertEqual(usage.completionTokens, tokens, "\(name): reasoning and argument pieces count as tokens")

            // Every cut, resumed on the other instance: inside the window and before it.
            let n = reference().count
            for k in 0...n {
                let rest = events(try Chat.resume(port: b.port, token: token, requestID: id, lastEventID: String(k)).readAll(timeout: 10))
                if k == n {
                    XCTAssertEqual(rest.map(\.0), [UInt64(n + 1)], "\(name): after the last part only done")
                } else {
                    assertRest(rest, after: k, "\(name): resumed from \(k)")
                }
                if k % 7 == 0 || k == n {
                    let read = try HTTPClient.request(port: b.port, method: "GET", path: "/api/chat/stream/\(id)?offset=\(k)",
                                                      headers: [("Authorization", "Bearer \(token)")])
                    XCTAssertEqual(read.status, 200, "\(name): offset \(k): \(read.text.prefix(200))")
                    assertOffsetRead(read.text, after: k, "\(name): offset read from \(k)")
                }
            }

            // After the stream's keys expired: the retained answer, whole, from every cut.
            let meta = "relay:{\(OwnerHash.of(user)):\(id)}:meta"
            try eventually(20, "\(name): the stream's keys expire") { try self.redis.cli(["EXISTS", meta]) == "0" }
            for k in stride(from: 0, through: n, by: 3) {
                let rest = events(try Chat.resume(port: b.port, token: token, requestID: id, lastEventID: String(k)).readAll(timeout: 10))
                assertRest(rest, after: k, "\(name): retained, resumed from \(k)")
            }
            let answer = try HTTPClient.request(port: a.port, method: "GET", path: "/api/chat/answers/\(id)",
                                                headers: [("Authorization", "Bearer \(token)")])
            XCTAssertEqual(answer.status, 200, answer.text)
            let obj = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(answer.text.utf8)) as? [String: Any])
            let text = live.compactMap { e -> String? in
                if case .delta(let t)? = try? StreamEvent(json: e.1) { return t }
                return nil
            }.joined()
            XCTAssertEqual(obj["text"] as? String, text, "\(name): the retained text is the deltas alone")
            let parts = try XCTUnwrap(obj["parts"] as? [[String: Any]], "\(name): parts listed")
            XCTAssertEqual(parts.count, reference().filter { !$0.hasPrefix("{\"type\":\"delta\"") }.count)
            XCTAssertEqual(parts.first?["type"] as? String, "reasoning")
            if encrypted {
                let raw = try redis.cli(["GET", "relay:{\(OwnerHash.of(user)):\(id)}:answer"])
                XCTAssertFalse(raw.contains("lookup_governing_law"), "\(name): the retained parts are sealed")
            }
            a.kill9()
            b.kill9()
        }
    }

    /// The owner is killed inside the first tool call's arguments: another instance takes
    /// the answer over and continues it event for event (docs/PROTOCOL.md §4.5), sealed.
    func testAnAgentAnswerWhoseOwnerDiesInsideAToolCallIsContinuedEventForEvent() throws {
        let env = ["RELAY_SIMULATED_TOKENS_PER_SECOND": "40", "RELAY_ENCRYPTION_KEYS": "k1:\(AtRestEncryptionTests.key())"]
        let a = try startRelay(env.merging(["RELAY_WORKERS": "1"]) { $1 })
        let b = try startRelay(env)
        let token = RelayProcess.token(sub: "agent-\(UUID().uuidString.prefix(6))", sid: "s1")
        let id = Chat.newID()
        let owner = try Chat.start(port: a.port, token: token, requestID: id, model: "simulated-tools")
        // Read until two argument pieces of the first call arrived.
        var pieces = 0
        var last = 0
        while pieces < 2 {
            let m = try XCTUnwrap(try owner.nextEvent(), "the owner streams")
            last = Int(m.lastEventId) ?? last
            if m.data.hasPrefix("{\"type\":\"tool_call_delta\"") { pieces += 1 }
        }
        let reader = try Chat.resume(port: b.port, token: token, requestID: id, lastEventID: String(last))
        a.kill9()
        owner.close()
        let rest = events(try reader.readAll(timeout: 30))
        assertRest(rest, after: last, "continued on b from \(last)")
        let whole = events(try Chat.resume(port: b.port, token: token, requestID: id, lastEventID: "0").readAll(timeout: 10))
        assertRest(whole, after: 0, "the whole continued answer")
    }
}
