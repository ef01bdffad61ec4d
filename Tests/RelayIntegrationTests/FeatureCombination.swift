import Foundation
import RelayAuth
import RelayBudgets
import RelayCore
import RelayTestKit
import RelayTestSupport
import RelayUpstream
import XCTest

/// The features that meet in one answer, run together (docs/PROTOCOL.md §4.5, §6, §6.5, §12,
/// §13; docs/DATA_MODEL.md §15): an owner lost mid-answer (SIGKILL, or SIGSTOP past its lease
/// and woken while the taker still generates) under each encryption setting (off, on, and
/// switched on between the owner and the taker), with retention, the completion webhook and
/// offset reads on. What a user sees is checked: the text byte-identical on every read (live
/// resume, offset catch-up, retained after the window), one `done`, no sealed bytes, the
/// ledger equal to the `done`'s total and charged once, the session slot given back, one
/// webhook per answer. Runs against whatever Redis `redis` names (one server or a cluster).
struct FeatureCombination {
    enum Encryption: String, CaseIterable {
        case off, on
        /// The owner has no keys, the taker has them (a rolling switch to encryption).
        case switched
    }

    enum Loss: String, CaseIterable {
        case killed
        /// SIGSTOP past the lease, SIGCONT while the taker generates.
        case stalled
    }

    let encryption: Encryption
    let loss: Loss
    var name: String { "encryption \(encryption.rawValue), owner \(loss.rawValue)" }

    /// How the run reaches the world: relays on the test's Redis, Redis commands
    /// (`redis-cli`, following cluster redirects), the webhook receiver, the reference text.
    struct World {
        let startRelay: ([String: String]) throws -> RelayProcess
        let cli: ([String]) throws -> String
        let receiver: CompletionWebhookTests.Receiver
        let reference: (Int) -> String
        let key: String
    }

    /// What the run leaves for the checks after the stream's keys expired.
    struct Started {
        let id: String
        let token: String
        let maxTokens: Int
        let reader: RelayProcess
        let meta: String
    }

    static let maxTokens = 400

    /// Runs the answer through the loss and checks everything a user sees before expiry.
    func run(_ w: World, file: StaticString = #filePath, line: UInt = #line) throws -> Started {
        let hook = ["RELAY_COMPLETION_WEBHOOK_URL": w.receiver.url, "RELAY_COMPLETION_WEBHOOK_SECRET": CompletionWebhookTests.secret,
                    "RELAY_COMPLETION_WEBHOOK_TIMEOUT": "1s", "RELAY_COMPLETION_WEBHOOK_RETRY_BASE": "300ms",
                    "RELAY_COMPLETION_WEBHOOK_GRACE": "500ms"]
        let common = hook.merging(["RELAY_SIMULATED_TOKENS_PER_SECOND": "100", "RELAY_BUFFER_EVENTS": "40",
                                   "RELAY_BUFFER_TTL": "8s"]) { $1 }
        let keys = ["RELAY_ENCRYPTION_KEYS": "k1:\(w.key)"]
        let ownerEnv = common.merging(["RELAY_WORKERS": "1"]) { $1 }.merging(encryption == .on ? keys : [:]) { $1 }
        let a = try w.startRelay(ownerEnv)
        let b = try w.startRelay(common.merging(encryption == .off ? [:] : keys) { $1 })
        let user = "combo-\(UUID().uuidString.prefix(8))"
        let sid = "s-\(UUID().uuidString.prefix(8))"
        let token = RelayProcess.token(sub: user, sid: sid)
        let id = Chat.newID()
        let maxTokens = Self.maxTokens
        let meta = "relay:{\(OwnerHash.of(user)):\(id)}:meta"

        // The owner streams past the retained window, then is lost while b has a reader.
        let owner = try Chat.start(port: a.port, token: token, requestID: id, maxTokens: maxTokens)
        for _ in 0..<60 { _ = try XCTUnwrap(try owner.nextEvent(), "\(name): the owner streams", file: file, line: line) }
        let watcher = try Chat.resume(port: b.port, token: token, requestID: id, lastEventID: "60")
        let pid = a.process.processIdentifier
        switch loss {
        case .killed: a.kill9()
        case .stalled: Foundation.kill(pid, SIGSTOP)
        }
        owner.close()   // nobody reads the end: the webhook is due
        var stopped = loss == .stalled
        defer { if stopped { Foundation.kill(pid, SIGCONT) } }
        try eventually(15, "\(name): b takes the answer over") { try w.cli(["HGET", meta, "epoch"]) == "1" }
        watcher.close()
        if loss == .stalled {
            XCTAssertEqual(try w.cli(["HGET", meta, "state"]), "running", "\(name): the taker still generates as the owner wakes",
                           file: file, line: line)
            Foundation.kill(pid, SIGCONT)
            stopped = false
        }
        try eventually(20, "\(name): the answer ends") { try w.cli(["HGET", meta, "state"]) == "done" }

        // One webhook, sent though nobody read the end, whatever sealed the final event.
        do {
            try eventually(15, "\(name): the completion webhook") { w.receiver.deliveriesByID.keys.contains { $0.hasSuffix("_" + id) } }
        } catch {
            print("outbox at the timeout, due:", (try? w.cli(["ZRANGE", "relay:webhooks:{relay:webhooks}:due", "0", "-1", "WITHSCORES"])) ?? "?")
            print("outbox at the timeout, msgs:", (try? w.cli(["HGETALL", "relay:webhooks:{relay:webhooks}:msgs"])) ?? "?")
            print("outbox at the timeout, sent:", (try? w.cli(["ZRANGE", "relay:webhooks:{relay:webhooks}:sent", "0", "-1"])) ?? "?")
            print("outbox at the timeout, delivered:", (try? w.cli(["EXISTS", "relay:{\(OwnerHash.of(user)):\(id)}:delivered"])) ?? "?")
            print("outbox at the timeout, receiver:", w.receiver.requests.map(\.id))
            for line in (a.log + b.log).split(separator: "\n") where line.contains("webhook") { print("outbox at the timeout, log:", line) }
            throw error
        }
        try consistently(for: 1, "\(name): one webhook") { w.receiver.deliveriesByID.filter { $0.key.hasSuffix("_" + id) }.values.reduce(0, +) == 1 }

        // Every read holds the whole answer, once, in clear.
        let reference = w.reference(maxTokens)
        let resumed = try Chat.resume(port: b.port, token: token, requestID: id, lastEventID: "0").readAll(timeout: 20)
        let seqs = resumed.compactMap { UInt64($0.lastEventId) }
        XCTAssertEqual(seqs, seqs.sorted(), "\(name): seqs ascending", file: file, line: line)
        XCTAssertEqual(Set(seqs).count, seqs.count, "\(name): no seq twice", file: file, line: line)
        XCTAssertEqual(resumed.filter { $0.data.contains("\"type\":\"done\"") }.count, 1, "\(name): one done", file: file, line: line)
        XCTAssertTrue(Chat.text(resumed) == reference, "\(name): the resume from 0 is byte-identical", file: file, line: line)
        let catchUp = try HTTPClient.request(port: b.port, method: "GET", path: "/api/chat/stream/\(id)?offset=-1",
                                             headers: [("Authorization", "Bearer \(token)")])
        XCTAssertEqual(catchUp.status, 200, "\(name): \(catchUp.text.prefix(200))", file: file, line: line)
        XCTAssertTrue(Self.text(ofOffsetRead: catchUp.text) == reference, "\(name): the offset read from -1 is byte-identical",
                      file: file, line: line)
        for body in [catchUp.text] + resumed.map(\.data) where body.contains("~AQ") {
            XCTFail("\(name): sealed bytes reached a client: \(body.prefix(80))", file: file, line: line)
        }

        // Charged once, to the done's total; the slot given back once.
        guard case .done(_, let usage, _)? = try? StreamEvent(json: resumed.last?.data ?? "") else {
            XCTFail("\(name): ends with done", file: file, line: line)
            return Started(id: id, token: token, maxTokens: maxTokens, reader: b, meta: meta)
        }
        let budget = "relay:budget:{u:\(OwnerHash.of(user))}:\(BudgetPolicy.period(now: Int64(Date().timeIntervalSince1970)))"
        try eventually(5, "\(name): settled") { (Int(try w.cli(["HGET", budget, "reserved"])) ?? 0) == 0 }
        XCTAssertEqual(Int(try w.cli(["HGET", budget, "used"])) ?? 0, usage.totalTokens, "\(name): the ledger is the done's total",
                       file: file, line: line)
        XCTAssertEqual(usage.completionTokens, maxTokens, "\(name): usage counts every token", file: file, line: line)
        let slots = "relay:streams:{\(OwnerHash.of(user)):\(sid)}"
        try eventually(5, "\(name): the session slot is given back") { try w.cli(["ZCARD", slots]) == "0" }
        if loss == .stalled {
            try eventually(5, "\(name): the woken owner ends its generation") { try Self.metric(a, "relay_running_generations") == 0 }
            XCTAssertEqual(try Self.metric(a, "relay_budget_settlements_total"), 0, "\(name): the woken owner settled nothing",
                           file: file, line: line)
        }
        XCTAssertEqual(try w.cli(["HGET", meta, "continuations"]), "1", "\(name): taken over once, never taken back",
                       file: file, line: line)
        return Started(id: id, token: token, maxTokens: maxTokens, reader: b, meta: meta)
    }

    /// After the stream's keys expired: the retained answer and a resume from it.
    static func checkRetained(_ s: Started, _ w: World, name: String, file: StaticString = #filePath, line: UInt = #line) throws {
        try eventually(20, "\(name): the stream's keys expire") { try w.cli(["EXISTS", s.meta]) == "0" }
        let reference = w.reference(s.maxTokens)
        let answer = try HTTPClient.request(port: s.reader.port, method: "GET", path: "/api/chat/answers/\(s.id)",
                                            headers: [("Authorization", "Bearer \(s.token)")])
        XCTAssertEqual(answer.status, 200, "\(name): \(answer.text.prefix(200))", file: file, line: line)
        XCTAssertTrue(answer.text.contains(JSONText.quoted(reference)), "\(name): the retained answer is whole", file: file, line: line)
        let rest = try Chat.resume(port: s.reader.port, token: s.token, requestID: s.id, lastEventID: "5").readAll(timeout: 10)
        XCTAssertTrue(Chat.text(rest) == String(decoding: Array(reference.utf8).dropFirst(Self.prefixBytes(reference, events: 5)), as: UTF8.self),
                      "\(name): a resume after the window gets exactly the rest", file: file, line: line)
        XCTAssertFalse((rest.map(\.data) + [answer.text]).contains { $0.contains("~AQ") }, "\(name): no sealed bytes", file: file, line: line)
    }

    /// The simulated answer's first `maxTokens` tokens, built from the document itself (as
    /// `RelayTestCase.referenceText`).
    static func reference(maxTokens: Int) -> String {
        guard let doc = SimulatedDocuments.document(forModel: "simulated") else { return "" }
        return SimulatedTokenizer.tokens(doc).prefix(maxTokens).joined()
    }

    /// Bytes of the first `events` tokens of `reference` (the simulated tokens: one per delta).
    static func prefixBytes(_ reference: String, events: Int) -> Int {
        guard let doc = SimulatedDocuments.document(forModel: "simulated") else { return 0 }
        return SimulatedTokenizer.tokens(doc).prefix(events).joined().utf8.count
    }

    /// The answer's text in an offset read's JSON array: its `delta` contents in order.
    static func text(ofOffsetRead body: String) -> String {
        guard let a = (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [[String: Any]] else { return "" }
        return a.compactMap { $0["type"] as? String == "delta" ? $0["content"] as? String : nil }.joined()
    }

    static func metric(_ relay: RelayProcess, _ name: String) throws -> Double {
        let text = try HTTPClient.request(port: relay.port, method: "GET", path: "/metrics").text
        return text.split(separator: "\n").filter { $0.hasPrefix(name + " ") || $0.hasPrefix(name + "{") }
            .compactMap { Double($0.split(separator: " ").last ?? "") }.reduce(0, +)
    }
}
