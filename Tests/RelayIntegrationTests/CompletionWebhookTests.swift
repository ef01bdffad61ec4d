import Foundation
import XCTest
import RelayCore
import RelayTestKit
import RelayTestSupport

/// The completion webhook (docs/PROTOCOL.md §13) against a real receiver process
/// (`tests/webhook/receiver.py`, which checks the Standard Webhooks signature itself):
/// one successful delivery per answer nobody read to its end, whatever the receiver does
/// (fails, times out, is down for a while) and even when the sending relay is SIGKILLed
/// mid-retry; none for an answer a client read to its end.
final class CompletionWebhookTests: RelayTestCase {
    /// The Standard Webhooks test vector's secret (24 bytes once decoded).
    static let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

    /// One request the receiver saw.
    struct Delivery {
        let n: Int
        let action: String
        let id: String
        let timestamp: String
        let signatureOK: Bool
        let contentType: String
        let body: String
        /// The receiver answered 2xx: a delivery.
        var delivered: Bool { action.hasPrefix("2") || action == "slow" }
        var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any] ?? [:] }
    }

    /// The receiver process, on a port fixed before it starts (so it can be down first).
    final class Receiver {
        let port: Int
        let logURL: URL
        private var process: Process?

        init() throws {
            let (fd, port) = try LoopbackSocket.listen(backlog: 1)
            close(fd)   // nothing listens there until `start`: connections are refused
            self.port = port
            logURL = FileManager.default.temporaryDirectory.appendingPathComponent("webhook-\(UUID().uuidString).jsonl")
        }

        var url: String { "http://127.0.0.1:\(port)/hooks/relay" }

        /// Starts answering as `script` says (`500`, `410`, `hang`, `slow`, …; then as `otherwise`).
        func start(script: [String] = [], otherwise: String = "200") throws {
            let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent("tests/webhook/receiver.py").path
            process = try ChildProcess.spawn("python3", [path, "--port", String(port), "--secret", CompletionWebhookTests.secret,
                                                         "--log", logURL.path, "--script", script.joined(separator: ","),
                                                         "--hang-seconds", "20", "--default", otherwise])
            try eventually(10, "the webhook receiver listening on \(port)") {
                guard let fd = try? LoopbackSocket.connect(port: port) else { return false }
                close(fd)
                return true
            }
        }

        func stop() {
            process?.terminate()
            process?.waitUntilExit()
            process = nil
        }

        var requests: [Delivery] {
            guard let text = try? String(contentsOf: logURL, encoding: .utf8) else { return [] }
            return text.split(separator: "\n").compactMap { line in
                guard let o = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] else { return nil }
                return Delivery(n: o["n"] as? Int ?? -1, action: o["action"] as? String ?? "", id: o["id"] as? String ?? "",
                                timestamp: o["timestamp"] as? String ?? "", signatureOK: o["sig_ok"] as? Bool ?? false,
                                contentType: o["content_type"] as? String ?? "", body: o["body"] as? String ?? "")
            }
        }

        /// Successful deliveries (2xx answers) per `webhook-id`.
        var deliveriesByID: [String: Int] {
            var out: [String: Int] = [:]
            for r in requests where r.delivered { out[r.id, default: 0] += 1 }
            return out
        }

        deinit { stop() }
    }

    private var receivers: [Receiver] = []

    override func tearDown() {
        for r in receivers { r.stop() }
        receivers.removeAll()
        super.tearDown()
    }

    private func makeReceiver() throws -> Receiver {
        let r = try Receiver()
        receivers.append(r)
        return r
    }

    private func startRelay(_ receiver: Receiver, _ extra: [String: String] = [:]) throws -> RelayProcess {
        var env = ["RELAY_COMPLETION_WEBHOOK_URL": receiver.url, "RELAY_COMPLETION_WEBHOOK_SECRET": Self.secret,
                   "RELAY_COMPLETION_WEBHOOK_TIMEOUT": "1s", "RELAY_COMPLETION_WEBHOOK_RETRY_BASE": "300ms",
                   "RELAY_COMPLETION_WEBHOOK_GRACE": "500ms", "RELAY_SIMULATED_TOKENS_PER_SECOND": "200"]
        env.merge(extra) { _, new in new }
        return try startRelay(env)
    }

    /// Starts an answer of `maxTokens` and leaves after its first event (the app was
    /// backgrounded): the answer goes on to its end with no client.
    private func answerNobodyReads(_ relay: RelayProcess, sub: String = "alice", maxTokens: Int = 40) throws -> String {
        let id = Chat.newID()
        let c = try Chat.start(port: relay.port, token: RelayProcess.token(sub: sub), requestID: id, maxTokens: maxTokens)
        XCTAssertNotNil(try c.nextEvent(), "the answer started")
        c.close()
        return id
    }

    private func waitForEnd(_ id: String, sub: String = "alice") throws {
        try eventually(20, "stream \(id) ended") {
            let st = try redis.cli("HGET", streamKey(id, "meta", sub: sub), "state")
            return st == "done" || st == "failed"
        }
    }

    func testAnAnswerNobodyReadsToItsEndIsPostedOnceSignedWithoutItsText() throws {
        let receiver = try makeReceiver()
        try receiver.start()
        let relay = try startRelay(receiver)
        let id = try answerNobodyReads(relay, sub: "user-42")
        try waitForEnd(id, sub: "user-42")
        let ended = Date()
        try eventually(15, "one delivery") { receiver.deliveriesByID.count == 1 }
        // Printed, not asserted: the grace (500 ms here) plus a poll (250 ms) plus the POST.
        print(String(format: "completion webhook delivered %.2f s after the answer's end was seen", Date().timeIntervalSince(ended)))
        try consistently(for: 3, "no second delivery") { receiver.requests.count == 1 }

        let d = try XCTUnwrap(receiver.requests.first)
        XCTAssertTrue(d.signatureOK, "the receiver verified the Standard Webhooks signature")
        XCTAssertTrue(d.id.hasPrefix("msg_") && d.id.hasSuffix("_" + id), d.id)
        XCTAssertLessThan(abs((Int64(d.timestamp) ?? 0) - Int64(Date().timeIntervalSince1970)), 60, "webhook-timestamp is Unix seconds")
        XCTAssertEqual(d.contentType, "application/json")
        XCTAssertEqual(d.json["type"] as? String, "answer.ended")
        let data = try XCTUnwrap(d.json["data"] as? [String: Any], d.body)
        XCTAssertEqual(data["request_id"] as? String, id)
        XCTAssertEqual(data["sub"] as? String, "user-42")
        XCTAssertEqual(data["finish_reason"] as? String, "length", "40 tokens of a longer document")
        let usage = try XCTUnwrap(data["usage"] as? [String: Any])
        XCTAssertEqual(usage["completion_tokens"] as? Int, 40)
        // Never the text: no word of the answer is in the body.
        let text = referenceText(maxTokens: 40)
        for word in text.split(separator: " ").filter({ $0.count > 6 }).prefix(5) {
            XCTAssertFalse(d.body.contains(word), "the body carries no text of the answer: \(word)")
        }
        XCTAssertEqual(try metric(relay, "relay_completion_webhooks_total{result=\"delivered\"}"), 1)
        XCTAssertEqual(try metric(relay, "relay_completion_webhooks_queued_total"), 1)
        XCTAssertEqual(try redis.cli("ZCARD", "relay:webhooks:{relay:webhooks}:due"), "0", "nothing left in the outbox")
    }

    /// With encryption at rest on, the final event is stored sealed: the sender opens it
    /// like every reader (docs/DATA_MODEL.md §15), so each answer is posted once, in clear.
    func testWithEncryptionAtRestEveryAnswerNobodyReadsIsPostedOnce() throws {
        let receiver = try makeReceiver()
        try receiver.start()
        let relay = try startRelay(receiver, ["RELAY_ENCRYPTION_KEYS": "k1:\(AtRestEncryptionTests.key())"])
        let ids = try (0..<3).map { _ in try answerNobodyReads(relay, sub: "sealed-user") }
        for id in ids { try waitForEnd(id, sub: "sealed-user") }
        XCTAssertTrue(try redis.cli("XREVRANGE", streamKey(ids[0], "events", sub: "sealed-user"), "+", "-", "COUNT", "1").contains("~AQ"),
                      "the final event is sealed at rest")
        try eventually(15, "one delivery per answer") { Set(receiver.deliveriesByID.keys).count == 3 }
        try consistently(for: 2, "no second delivery") { receiver.requests.count == 3 }
        for d in receiver.requests {
            XCTAssertTrue(d.signatureOK)
            let data = try XCTUnwrap(d.json["data"] as? [String: Any], d.body)
            XCTAssertEqual(data["finish_reason"] as? String, "length")
            XCTAssertTrue(ids.contains(data["request_id"] as? String ?? ""))
        }
        XCTAssertEqual(try metric(relay, "relay_completion_webhooks_total{result=\"dropped\"}") ?? 0, 0)
    }

    func testAnAnswerAClientReadsToItsEndGetsNoWebhook() throws {
        let receiver = try makeReceiver()
        try receiver.start()
        let relay = try startRelay(receiver)
        let id = Chat.newID()
        let events = try Chat.start(port: relay.port, token: RelayProcess.token(), requestID: id, maxTokens: 20).readAll()
        XCTAssertTrue(events.last.map(isTerminal) ?? false)
        try eventually(10, "the message settled as skipped") {
            try metric(relay, "relay_completion_webhooks_total{result=\"skipped\"}") == 1
        }
        try consistently(for: 2, "no request to the receiver") { receiver.requests.isEmpty }
        // A control in the same test: an answer nobody reads is posted, so the silence above is not a dead receiver.
        _ = try answerNobodyReads(relay)
        try eventually(15, "the control answer's delivery") { receiver.deliveriesByID.count == 1 }
    }

    func testAnAnswerAClientResumesOnAnotherRelayAndReadsToItsEndGetsNoWebhook() throws {
        let receiver = try makeReceiver()
        try receiver.start()
        let a = try startRelay(receiver, ["RELAY_SIMULATED_TOKENS_PER_SECOND": "50"])
        let b = try startRelay(receiver, ["RELAY_SIMULATED_TOKENS_PER_SECOND": "50"])
        let token = RelayProcess.token()
        let id = Chat.newID()
        let first = try Chat.start(port: a.port, token: token, requestID: id, maxTokens: 60)
        let head = try XCTUnwrap(try first.nextEvent())
        first.close()
        // The app came back before the end, on the other instance: it reads the end there.
        let rest = try Chat.resume(port: b.port, token: token, requestID: id, lastEventID: head.lastEventId).readAll()
        XCTAssertTrue(rest.last.map(isTerminal) ?? false)
        try eventually(10, "the message settled as skipped") {
            (try metric(a, "relay_completion_webhooks_total{result=\"skipped\"}") ?? 0)
                + (try metric(b, "relay_completion_webhooks_total{result=\"skipped\"}") ?? 0) == 1
        }
        try consistently(for: 2, "no request to the receiver") { receiver.requests.isEmpty }
    }

    func testFailingTimingOutAndDownReceiversGetExactlyOneDeliveryPerAnswer() throws {
        let receiver = try makeReceiver()
        let relay = try startRelay(receiver)
        // The receiver is down: three answers end meanwhile, their attempts are refused.
        var ids: [String] = []
        for _ in 0..<3 { ids.append(try answerNobodyReads(relay)) }
        for id in ids { try waitForEnd(id) }
        try eventually(20, "attempts refused while the receiver is down") {
            (try metric(relay, "relay_completion_webhook_attempts_total{result=\"failed\"}") ?? 0) >= 4
        }
        XCTAssertEqual(try metric(relay, "relay_completion_webhooks_total{result=\"delivered\"}") ?? 0, 0)
        // Up again, but failing twice, then timing out once (longer than the 1 s attempt timeout), then well.
        try receiver.start(script: ["500", "503", "hang"])
        try eventually(60, "each answer delivered") { receiver.deliveriesByID.count == 3 }
        try consistently(for: 3, "no second delivery") { receiver.deliveriesByID.values.allSatisfy { $0 == 1 } }
        XCTAssertEqual(Set(receiver.deliveriesByID.keys), Set(ids.map { id in receiver.requests.first { $0.id.hasSuffix("_" + id) }?.id ?? "?" }))
        XCTAssertTrue(receiver.requests.allSatisfy(\.signatureOK))
        // Every attempt of one answer carries the same id and the same body.
        for id in Set(receiver.requests.map(\.id)) {
            XCTAssertEqual(Set(receiver.requests.filter { $0.id == id }.map(\.body)).count, 1, "one body per webhook-id")
        }
        XCTAssertEqual(try metric(relay, "relay_completion_webhooks_total{result=\"delivered\"}"), 3)
        XCTAssertGreaterThanOrEqual(try metric(relay, "relay_completion_webhook_retries_total") ?? 0, 4)
        print("completion webhooks: \(receiver.requests.count) requests for 3 answers, \(receiver.requests.filter(\.delivered).count) delivered")
    }

    func testTwoRelaysDrainingOneOutboxDeliverEachAnswerOnce() throws {
        let receiver = try makeReceiver()
        // Every answer takes 0.5 s: both relays poll the outbox meanwhile, and only one may
        // hold each message.
        try receiver.start(otherwise: "slow")
        let a = try startRelay(receiver)
        let b = try startRelay(receiver)
        var ids: [String] = []
        for i in 0..<6 { ids.append(try answerNobodyReads(i % 2 == 0 ? a : b, maxTokens: 10)) }
        try eventually(30, "six deliveries") { receiver.deliveriesByID.count == 6 }
        try consistently(for: 3, "no second delivery of any answer") { receiver.requests.count == 6 }
        XCTAssertEqual(try (metric(a, "relay_completion_webhooks_total{result=\"delivered\"}") ?? 0)
                       + (metric(b, "relay_completion_webhooks_total{result=\"delivered\"}") ?? 0), 6)
    }

    func testASendingRelayKilledMidRetryLeavesTheMessageToAnotherAndItIsDeliveredOnce() throws {
        let receiver = try makeReceiver()
        // First answer 500 (a retry follows), then no answer (the sender is killed meanwhile).
        try receiver.start(script: ["500", "hang", "hang"])
        let a = try startRelay(receiver, ["RELAY_INSTANCE": "relay-a"])
        let b = try startRelay(receiver, ["RELAY_INSTANCE": "relay-b"])
        let id = try answerNobodyReads(a)
        try waitForEnd(id)
        try eventually(20, "a failed attempt, then a second one hanging") { receiver.requests.count >= 2 }
        XCTAssertEqual(receiver.requests[0].action, "500")
        // The relay holding the claim of the hanging retry (claim tokens start with the instance name).
        let webhookID = receiver.requests[1].id
        let claim = try redis.cli("HGET", "relay:webhooks:{relay:webhooks}:claims", webhookID)
        let sender = try XCTUnwrap(claim.hasPrefix("relay-a/") ? a : claim.hasPrefix("relay-b/") ? b : nil, "claim token \(claim)")
        let other = sender === a ? b : a
        sender.kill9()   // mid-retry: its attempt unanswered, its claim held
        try eventually(40, "the other relay's delivery after the dead sender's claim lapsed") { receiver.deliveriesByID.count == 1 }
        try consistently(for: 3, "no second delivery") { receiver.requests.filter(\.delivered).count == 1 }
        XCTAssertEqual(Set(receiver.requests.map(\.id)), [webhookID], "every attempt carries the same webhook-id")
        XCTAssertEqual(try metric(other, "relay_completion_webhooks_total{result=\"delivered\"}"), 1)
        XCTAssertTrue(receiver.requests.allSatisfy(\.signatureOK))
        print("sender SIGKILLed mid-retry: \(receiver.requests.count) requests, 1 delivered by the other relay")
    }

    func testAnAnswerIsDroppedAfterTheLastAttemptAndOnGone() throws {
        let receiver = try makeReceiver()
        try receiver.start(script: ["500", "500", "410"])
        let relay = try startRelay(receiver, ["RELAY_COMPLETION_WEBHOOK_MAX_ATTEMPTS": "2"])
        _ = try answerNobodyReads(relay)
        try eventually(20, "dropped after 2 attempts") {
            try metric(relay, "relay_completion_webhooks_total{result=\"dropped\"}") == 1
        }
        XCTAssertTrue(relay.log.contains("completion webhook dropped"), "a log line says so")
        _ = try answerNobodyReads(relay)
        try eventually(20, "the next answer dropped on 410 Gone, not retried") {
            try metric(relay, "relay_completion_webhooks_total{result=\"dropped\"}") == 2
        }
        try consistently(for: 2, "no retry after 410") { receiver.requests.count == 3 }
    }
}
