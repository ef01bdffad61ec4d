import Foundation
import RelayCore
import RelayTestSupport
import RelayUpstream
import XCTest

/// Sampling fields through a running relay (docs/PROTOCOL.md §3.1): forwarded to the upstream,
/// refused with a clear 400 when the operator's `RELAY_CLIENT_PARAMETERS` leaves them out, and
/// sent again, unchanged, by the instance that continues an answer whose owner died — with the
/// stored request sealed at rest.
final class SamplingRequestTests: RelayTestCase {
    func testAllowedFieldsReachTheUpstreamAndOthersAreRefusedBeforeIt() throws {
        let fake = try UpstreamRelayTests.fakeOpenAI(replying: "Hello ")
        defer { fake.stop() }
        let relay = try startRelay(["RELAY_UPSTREAM": "openai", "UPSTREAM_URL": fake.baseURL, "UPSTREAM_MODEL": "gpt-test",
                                    "RELAY_CLIENT_PARAMETERS": "temperature,stop"])
        let token = RelayProcess.token(sub: "sampling-\(UUID().uuidString.prefix(8))")
        _ = try Chat.start(port: relay.port, token: token, model: "gpt-test",
                           fields: ["temperature": 0.2, "stop": "END"]).readAll(timeout: 10)
        let sent = try XCTUnwrap(fake.requests.first).json
        XCTAssertEqual(sent["temperature"] as? Double, 0.2)
        XCTAssertEqual(sent["stop"] as? [String], ["END"])

        let refused = try Chat.start(port: relay.port, token: token, model: "gpt-test", fields: ["temperature": 0.2, "seed": 3])
        XCTAssertEqual(refused.status, 400)
        let body = String(decoding: try XCTUnwrap(refused.readBody(timeout: 5)), as: UTF8.self)
        XCTAssertTrue(body.contains(#""code":"invalid_request""#), body)
        XCTAssertTrue(body.contains(#"\"seed\" is not accepted by this relay (RELAY_CLIENT_PARAMETERS: temperature,stop)"#), body)
        let bad = try Chat.start(port: relay.port, token: token, model: "gpt-test", fields: ["temperature": 3])
        XCTAssertEqual(bad.status, 400)
        XCTAssertEqual(fake.requests.count, 1, "nothing refused reached the upstream")
    }

    /// The owner of an Anthropic answer sent with `temperature` and `stop` is killed; the
    /// instance that continues it sends the same sampling with its prefill, read back from the
    /// stored request (sealed at rest), and the answer ends whole.
    func testAContinuationAfterATakeoverSendsTheSameSamplingFromTheSealedStoredRequest() throws {
        var answer = ContinuableAnswerUpstream(tokens: Array(repeating: ContinuableAnswerUpstream.standard.tokens, count: 4).flatMap { $0 })
        answer.pauseMsPerToken = 60
        let fake = try FakeUpstreamServer(routes: [:])
        defer { fake.stop() }
        fake.setResponder("/v1/messages") { [answer] in answer.anthropicScript($0) }
        let env = ["RELAY_UPSTREAM": "anthropic", "UPSTREAM_URL": fake.baseURL, "UPSTREAM_API_KEY": "sk-test",
                   "UPSTREAM_MODEL": "claude-test", "RELAY_ENCRYPTION_KEYS": "k1:\(AtRestEncryptionTests.key())"]
        let a = try startRelay(env.merging(["RELAY_WORKERS": "1"]) { $1 }), b = try startRelay(env)
        let token = RelayProcess.token(sub: "sampling-take-\(UUID().uuidString.prefix(8))")
        let id = Chat.newID()
        let owner = try Chat.start(port: a.port, token: token, requestID: id, model: "claude-test", maxTokens: 500,
                                   fields: ["temperature": 0.4, "top_p": 0.8, "stop": ["THE END"]])
        for _ in 0..<10 { _ = try XCTUnwrap(try owner.nextEvent()) }
        let onB = try Chat.resume(port: b.port, token: token, requestID: id, lastEventID: "0")
        _ = try XCTUnwrap(try onB.nextEvent())
        a.kill9()
        owner.close()
        _ = try onB.readAll(timeout: 30)
        let whole = try Chat.resume(port: b.port, token: token, requestID: id, lastEventID: "0").readAll(timeout: 10)
        XCTAssertEqual(Chat.text(whole), answer.text, "the whole answer, once")
        XCTAssertGreaterThanOrEqual(fake.requests.count, 2, "the first call and the continuation")
        for (i, r) in fake.requests.enumerated() {
            XCTAssertEqual(r.json["temperature"] as? Double, 0.4, "call \(i)")
            XCTAssertEqual(r.json["top_p"] as? Double, 0.8, "call \(i)")
            XCTAssertEqual(r.json["stop_sequences"] as? [String], ["THE END"], "call \(i)")
        }
    }
}
