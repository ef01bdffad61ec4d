import Foundation
import RelayAuth
import RelayBudgets
import RelayCore
import RelayEventStore
import RelayTestKit
import RelayTestSupport
import RelayUpstream
import XCTest

/// An owner lost mid-answer (SIGKILL, SIGSTOP past its lease, a drain's timeout) has its
/// stream taken over by another instance, which continues the same answer from the next
/// seq (docs/PROTOCOL.md §4.5, docs/DATA_MODEL.md §6.1): readers on every instance get
/// one stream, seq + 1 per event, byte-identical to an uninterrupted answer, and the
/// reservation is settled once, to what was generated plus the re-sent prompt.
final class TakeoverTests: RelayTestCase {
    /// The owner is killed (SIGKILL) mid-answer while two other relays have readers: exactly
    /// one of them takes the stream over and continues it; both readers get the whole
    /// answer, byte-identical, `done` last; the ledger holds prompt + re-sent prompt +
    /// every token, settled once; the stored entries are 1 … n + 1 without a duplicate.
    func testAKilledOwnerIsContinuedByteIdenticalOnReadersOfBothInstances() throws {
        let env = ["RELAY_SIMULATED_TOKENS_PER_SECOND": "60"]
        let a = try startRelay(env.merging(["RELAY_WORKERS": "1"]) { $1 })
        let b = try startRelay(env), c = try startRelay(env)
        let user = "take-\(UUID().uuidString.prefix(8))"
        let token = RelayProcess.token(sub: user)
        let id = Chat.newID()
        let maxTokens = 400
        let owner = try Chat.start(port: a.port, token: token, requestID: id, maxTokens: maxTokens)
        for _ in 0..<20 { _ = try XCTUnwrap(try owner.nextEvent()) }
        let onB = try Chat.resume(port: b.port, token: token, requestID: id, lastEventID: "0")
        let onC = try Chat.resume(port: c.port, token: token, requestID: id, lastEventID: "0")
        _ = try XCTUnwrap(try onB.nextEvent())
        a.kill9()
        owner.close()
        let restB = try onB.readAll(timeout: 30)
        let allB = try Chat.resume(port: b.port, token: token, requestID: id, lastEventID: "0").readAll(timeout: 10)
        let allC = try onC.readAll(timeout: 30)
        XCTAssertFalse(restB.isEmpty)
        assertWhole(allB, maxTokens: maxTokens, "a fresh reader on b", reader: .reconnected)
        assertWhole(allC, maxTokens: maxTokens, "the live reader on c")
        XCTAssertEqual(total([b, c], "relay_takeovers_total"), 1, "exactly one instance took the stream over")
        let lastSeq = UInt64(try redis.cli("HGET", streamKey(id, "meta", sub: user), "last_seq")) ?? 0
        XCTAssertEqual(lastSeq, UInt64(maxTokens + 1))
        let stored = try storedSeqs(id, sub: user)
        XCTAssertEqual(stored, Array((stored.first ?? 1)...lastSeq), "the retained entries are contiguous, nothing after done")
        XCTAssertEqual(try redis.cli("HMGET", streamKey(id, "meta", sub: user), "state", "epoch", "continuations"), "done\n1\n1")
        guard case .done(_, let usage, _)? = try? StreamEvent(json: allC.last!.data) else { return XCTFail("done") }
        XCTAssertGreaterThan(usage.promptTokens, promptEstimate, "the continuation's re-sent prompt is charged")
        try eventually(5, "settled") { try self.ledger(user).reserved == 0 }
        XCTAssertEqual(try ledger(user).used, usage.totalTokens, "settled once, to prompt + re-sent prompt + every token")
    }

    /// The owner is stopped (SIGSTOP) past its lease: a reader's relay takes the stream
    /// over and ends it with `done`. Woken (SIGCONT), the old owner's appends are refused
    /// (its epoch is stale): no duplicate or foreign seq is stored, it does not settle,
    /// and its own client still gets the one whole answer.
    func testAStalledOwnerWokenAfterATakeoverAppendsNothingAndDoesNotSettle() throws {
        let env = ["RELAY_SIMULATED_TOKENS_PER_SECOND": "60"]
        let a = try startRelay(env.merging(["RELAY_WORKERS": "1"]) { $1 })
        let b = try startRelay(env)
        let user = "stop-\(UUID().uuidString.prefix(8))"
        let token = RelayProcess.token(sub: user)
        let id = Chat.newID()
        let maxTokens = 300
        let owner = try Chat.start(port: a.port, token: token, requestID: id, maxTokens: maxTokens)
        var ownerEvents: [SSEMessage] = []
        for _ in 0..<10 { ownerEvents.append(try XCTUnwrap(try owner.nextEvent())) }
        let pid = a.process.processIdentifier
        Foundation.kill(pid, SIGSTOP)
        var stopped = true
        defer { if stopped { Foundation.kill(pid, SIGCONT) } }
        let onB = try Chat.resume(port: b.port, token: token, requestID: id, lastEventID: "0").readAll(timeout: 30)
        assertWhole(onB, maxTokens: maxTokens, "the reader on b")
        let meta = streamKey(id, "meta", sub: user)
        XCTAssertEqual(try redis.cli("HMGET", meta, "state", "epoch"), "done\n1")
        Foundation.kill(pid, SIGCONT)
        stopped = false
        ownerEvents += try owner.readAll(timeout: 30)
        assertWhole(ownerEvents, maxTokens: maxTokens, "the stalled owner's own client (the events it missed while stopped come back from the text)", reader: .reconnected)
        try eventually(10, "the woken owner to end its generation") {
            try self.metric(a, "relay_running_generations") == 0
        }
        let stored = try storedSeqs(id, sub: user)
        XCTAssertEqual(stored, Array((stored.first ?? 1)...UInt64(maxTokens + 1)), "no duplicate, nothing after done")
        guard case .done(_, let usage, _)? = try? StreamEvent(json: onB.last!.data) else { return XCTFail("done") }
        try eventually(5, "settled") { try self.ledger(user).reserved == 0 }
        XCTAssertEqual(try ledger(user).used, usage.totalTokens, "settled once by the taker; the woken owner charged nothing")
        XCTAssertEqual(try metricSum(a, "relay_budget_settlements_total"), 0, "the woken owner did not settle")
    }

    /// The new owner is killed too: a third relay continues (limit 2), byte-identical. With
    /// `RELAY_MAX_CONTINUATIONS=1` the second loss ends the stream with `upstream_lost`,
    /// settled to the prompts charged + one token per stored delta.
    func testASecondOwnerKilledIsContinuedUnderTheLimitAndEndsWithUpstreamLostAtIt() throws {
        for limit in [2, 1] {
            let env = ["RELAY_SIMULATED_TOKENS_PER_SECOND": "50", "RELAY_MAX_CONTINUATIONS": String(limit)]
            let a = try startRelay(env.merging(["RELAY_WORKERS": "1"]) { $1 })
            let b = try startRelay(env.merging(["RELAY_WORKERS": "1"]) { $1 })
            let c = try startRelay(env)
            let user = "twice-\(limit)-\(UUID().uuidString.prefix(8))"
            let token = RelayProcess.token(sub: user)
            let id = Chat.newID()
            let maxTokens = 600
            let owner = try Chat.start(port: a.port, token: token, requestID: id, maxTokens: maxTokens)
            for _ in 0..<10 { _ = try XCTUnwrap(try owner.nextEvent()) }
            let onB = try Chat.resume(port: b.port, token: token, requestID: id, lastEventID: "0")
            _ = try XCTUnwrap(try onB.nextEvent())
            a.kill9()
            owner.close()
            try eventually(15, "b takes the stream over") { try self.metricSum(b, "relay_takeovers_total") == 1 }
            let onC = try Chat.resume(port: c.port, token: token, requestID: id, lastEventID: "0")
            _ = try XCTUnwrap(try onC.nextEvent())
            b.kill9()
            onB.close()
            let all = try onC.readAll(timeout: 40)
            let meta = streamKey(id, "meta", sub: user)
            if limit == 2 {
                var whole = try Chat.resume(port: c.port, token: token, requestID: id, lastEventID: "0").readAll(timeout: 10)
                assertWhole(whole, maxTokens: maxTokens, "limit 2: a fresh reader on c", reader: .reconnected)
                whole.removeAll()
                XCTAssertEqual(try redis.cli("HMGET", meta, "state", "continuations"), "done\n2")
                guard case .done(_, let usage, _)? = try? StreamEvent(json: all.last?.data ?? "") else { XCTFail("done"); continue }
                try eventually(5, "settled") { try self.ledger(user).reserved == 0 }
                XCTAssertEqual(try ledger(user).used, usage.totalTokens, "limit 2: both re-sent prompts and every token")
            } else {
                guard let last = all.last, case .error(503, "upstream_lost", _)? = try? StreamEvent(json: last.data),
                      let lostSeq = Int(last.lastEventId) else {
                    XCTFail("limit 1: ends with upstream_lost, got \(all.suffix(1).map(\.data))"); continue
                }
                XCTAssertEqual(try redis.cli("HMGET", meta, "state", "continuations"), "failed\n1")
                let prompts = Int(try redis.cli("HGET", meta, "prompt")) ?? 0
                XCTAssertGreaterThan(prompts, promptEstimate, "the first continuation's re-sent prompt is in the meta")
                try eventually(5, "settled") { try self.ledger(user).reserved == 0 }
                XCTAssertEqual(try ledger(user).used, prompts + lostSeq - 1, "limit 1: prompts + one token per stored delta")
                let text = Chat.text(try Chat.resume(port: c.port, token: token, requestID: id, lastEventID: "0").readAll(timeout: 10))
                XCTAssertTrue(referenceText(maxTokens: maxTokens).hasPrefix(text), "limit 1: the stored text is a prefix of the answer")
            }
            a.kill9(); b.kill9(); c.kill9()
        }
    }

    /// SIGTERM with `RELAY_DRAIN_TIMEOUT=1s` while an answer needs ~10 s more: at the
    /// timeout the drain hands the answer over (its lease ends at once) and a reader's
    /// relay continues it to `done`, byte-identical.
    func testADrainTimeoutHandsTheAnswerOverInsteadOfCuttingIt() throws {
        let env = ["RELAY_SIMULATED_TOKENS_PER_SECOND": "50", "RELAY_DRAIN_TIMEOUT": "1s"]
        let a = try startRelay(env.merging(["RELAY_WORKERS": "1"]) { $1 })
        let b = try startRelay(env)
        let user = "drain-\(UUID().uuidString.prefix(8))"
        let token = RelayProcess.token(sub: user)
        let id = Chat.newID()
        let maxTokens = 500
        let owner = try Chat.start(port: a.port, token: token, requestID: id, maxTokens: maxTokens)
        for _ in 0..<5 { _ = try XCTUnwrap(try owner.nextEvent()) }
        let onB = try Chat.resume(port: b.port, token: token, requestID: id, lastEventID: "0")
        let first = try XCTUnwrap(try onB.nextEvent())
        kill(a.process.processIdentifier, SIGTERM)
        XCTAssertEqual(a.terminate(timeout: 30), 0, "exit 0 after the drain timeout")
        let all = try onB.readAll(timeout: 40)
        assertWhole([first] + all, maxTokens: maxTokens, "the reader on b, across the hand-over")
        XCTAssertEqual(try metricSum(b, "relay_takeovers_total"), 1)
        guard case .done(_, let usage, _)? = try? StreamEvent(json: all.last!.data) else { return XCTFail("done") }
        try eventually(5, "settled") { try self.ledger(user).reserved == 0 }
        XCTAssertEqual(try ledger(user).used, usage.totalTokens)
        onB.close()
    }

    /// An upstream configured not to continue answers (`RELAY_UPSTREAM_CONTINUATION=off`):
    /// the instance that takes the stream over ends it with `upstream_lost`, as without
    /// takeovers, counted in `relay_continuations_refused_total`.
    func testAnUpstreamThatCannotContinueEndsTheStreamWithUpstreamLost() throws {
        func raw(_ delta: String) -> [UInt8] {
            Array("data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\(delta)\"},\"finish_reason\":null}]}\n\n".utf8)
        }
        let fake = try FakeUpstreamServer(routes: ["/v1/chat/completions": .init([
            .head(status: 200, contentType: "text/event-stream"), .send(raw("Hello")), .holdOpen])])
        defer { fake.stop() }
        let env = ["RELAY_UPSTREAM": "openai", "UPSTREAM_URL": fake.baseURL, "UPSTREAM_API_KEY": "sk-test", "UPSTREAM_MODEL": "gpt-test",
                   "RELAY_UPSTREAM_CONTINUATION": "off"]
        let a = try startRelay(env), b = try startRelay(env)
        let token = RelayProcess.token()
        let id = Chat.newID()
        let live = try Chat.start(port: a.port, token: token, requestID: id, model: "gpt-test")
        _ = try XCTUnwrap(try live.nextEvent())
        let onB = try Chat.resume(port: b.port, token: token, requestID: id, lastEventID: "0")
        a.kill9()
        let all = try onB.readAll(timeout: 20)
        guard case .error(503, "upstream_lost", _)? = try? StreamEvent(json: all.last?.data ?? "") else {
            return XCTFail("ends with upstream_lost, got \(all.suffix(1).map(\.data))")
        }
        XCTAssertEqual(Chat.text(all), "Hello")
        assertSequence(all)
        XCTAssertEqual(try metricSum(b, "relay_continuations_refused_total"), 1)
    }

    /// A continuation re-sends the prompt and the answer so far; that is reserved within the
    /// owner's budget before it is sent (docs/PROTOCOL.md §9.2). When the limit has no room
    /// for it, the stream ends with `upstream_lost`, charged what was generated, and `used`
    /// never passes the limit.
    func testATakeoverWhoseResentPromptDoesNotFitTheBudgetEndsWithinTheLimit() throws {
        let maxTokens = 200
        let limit = promptEstimate + maxTokens + 4
        let env = ["RELAY_SIMULATED_TOKENS_PER_SECOND": "60", "RELAY_BUDGETS": "free=\(limit),pro=\(limit)"]
        let a = try startRelay(env.merging(["RELAY_WORKERS": "1"]) { $1 }), b = try startRelay(env)
        let user = "tight-\(UUID().uuidString.prefix(8))"
        let token = RelayProcess.token(sub: user)
        let id = Chat.newID()
        let owner = try Chat.start(port: a.port, token: token, requestID: id, maxTokens: maxTokens)
        var seen: [SSEMessage] = []
        for _ in 0..<40 { seen.append(try XCTUnwrap(try owner.nextEvent())) }
        let onB = try Chat.resume(port: b.port, token: token, requestID: id, lastEventID: seen.last!.lastEventId)
        a.kill9()
        owner.close()
        let rest = try onB.readAll(timeout: 30)
        guard case .error(503, "upstream_lost", _)? = try? StreamEvent(json: rest.last?.data ?? "") else {
            return XCTFail("ends with upstream_lost, got \(rest.suffix(1).map(\.data))")
        }
        assertSequence(seen + rest)
        XCTAssertEqual(try metricSum(b, "relay_continuations_refused_total"), 1)
        try eventually(10, "settled") { try self.ledger(user).reserved == 0 }
        let used = try ledger(user).used
        XCTAssertLessThanOrEqual(used, limit, "a continuation never charges past the limit")
        XCTAssertEqual(used, promptEstimate + seen.count + rest.count - 1, "charged the prompt and each generated token")
    }

    /// An HTTP upstream that continues answers (Anthropic prefill, `RELAY_UPSTREAM_CONTINUATION`
    /// auto): the owner is killed mid-answer and the reader's relay continues it through the
    /// upstream; the reader gets the upstream's whole answer once, seq + 1 per event, `done`
    /// last, and the ledger holds what the `done` reports.
    func testAKilledOwnerOfAnAnthropicAnswerIsContinuedThroughThePrefill() throws {
        var answer = ContinuableAnswerUpstream(tokens: Array(repeating: ContinuableAnswerUpstream.standard.tokens, count: 4).flatMap { $0 })
        answer.pauseMsPerToken = 60
        let fake = try FakeUpstreamServer(routes: [:])
        defer { fake.stop() }
        fake.setResponder("/v1/messages") { [answer] in answer.anthropicScript($0) }
        let env = ["RELAY_UPSTREAM": "anthropic", "UPSTREAM_URL": fake.baseURL, "UPSTREAM_API_KEY": "sk-test", "UPSTREAM_MODEL": "claude-test"]
        let a = try startRelay(env.merging(["RELAY_WORKERS": "1"]) { $1 }), b = try startRelay(env)
        let user = "anth-\(UUID().uuidString.prefix(8))"
        let token = RelayProcess.token(sub: user)
        let id = Chat.newID()
        let owner = try Chat.start(port: a.port, token: token, requestID: id, model: "claude-test", maxTokens: 500)
        for _ in 0..<10 { _ = try XCTUnwrap(try owner.nextEvent()) }
        let onB = try Chat.resume(port: b.port, token: token, requestID: id, lastEventID: "0")
        _ = try XCTUnwrap(try onB.nextEvent())
        a.kill9()
        owner.close()
        let rest = try onB.readAll(timeout: 30)
        guard case .done(_, let usage, _)? = try? StreamEvent(json: rest.last?.data ?? "") else {
            return XCTFail("ends with done, got \(rest.suffix(1).map(\.data))")
        }
        let whole = try Chat.resume(port: b.port, token: token, requestID: id, lastEventID: "0").readAll(timeout: 10)
        XCTAssertEqual(Chat.text(whole), answer.text, "the upstream's whole answer, once")
        XCTAssertEqual(whole.last.flatMap { UInt64($0.lastEventId) }, UInt64(answer.tokens.count + 1))
        XCTAssertEqual(try metricSum(b, "relay_takeovers_total"), 1)
        XCTAssertEqual(usage.completionTokens, answer.tokens.count)
        try eventually(5, "settled") { try self.ledger(user).reserved == 0 }
        XCTAssertEqual(try ledger(user).used, usage.totalTokens)
    }

    /// Two takers race for one lapsed stream through the script itself: exactly one gets
    /// it (the first sets the lease), and the lapsed owner's plain `XADD` is refused by
    /// the fence while the taker's fenced append is stored.
    func testTwoTakersRacingForOneStreamTakeItOnceAndTheOldOwnerIsFenced() throws {
        let id = "race-\(UUID().uuidString.prefix(8))"
        let k = StreamKeys(id)
        let stored = StoredRequest(request: ChatRequest(messages: [ChatMessage(role: "user", content: "hi")], model: "simulated", maxTokens: 10),
                                   budgetKey: "", promptEstimate: 5, reservedTokens: 15, limitedByBudget: false, budgetLimit: 1_000_000)
        XCTAssertEqual(try redis.cli(["EVAL", Scripts.create.text, "6", k.meta, k.lease, k.events, k.text, k.offsets, k.request,
                                      "alice", "s1", "relay-a", "1", "60000", "3000", "", "5", "100", stored.encoded()]), "1")
        XCTAssertEqual(try redis.cli("XADD", k.events, "NOMKSTREAM", "1-0", "e", #"{"type":"delta","content":"a"}"#), "1-0")
        _ = try redis.cli("DEL", k.lease)
        func take(_ who: String) throws -> String {
            try redis.cli(["EVAL", Scripts.takeover.text, "6", k.events, k.meta, k.lease, k.text, k.offsets, k.request,
                           who, "3000", "2", "60000", "0"])
        }
        let first = try take("relay-b"), second = try take("relay-c")
        XCTAssertTrue(first.hasPrefix("1\n1\n1\n"), "the first taker gets epoch 1 after seq 1: \(first)")
        XCTAssertEqual(second, "0", "the second finds the lease held")
        XCTAssertEqual(try redis.cli("GET", k.lease), "relay-b")
        // The lapsed owner's pipelined append is refused; the taker's is stored.
        XCTAssertTrue(try redis.cli("XADD", k.events, "NOMKSTREAM", "2-0", "e", "{}").contains("exhausted"))
        XCTAssertEqual(try redis.cli(["EVAL", Scripts.appendFenced.text, "2", k.events, k.meta, "2", #"{"type":"delta","content":"b"}"#, "1", ""]), "2")
        XCTAssertTrue(try redis.cli(["EVAL", Scripts.appendFenced.text, "2", k.events, k.meta, "3", "{}", "0", ""]).contains("taken"),
                      "a stale epoch is refused")
        XCTAssertEqual(try redis.cli("XLEN", k.events), "2")
    }
}
