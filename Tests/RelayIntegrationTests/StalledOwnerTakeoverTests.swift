import Foundation
import RelayAuth
import RelayCore
import RelayEventStore
import RelayTestKit
import RelayTestSupport
import XCTest

/// An owner stalled past its lease (SIGSTOP) wakes while the instance that took its answer
/// over is still generating (docs/PROTOCOL.md §4.5): the woken owner stops as taken over.
/// It neither settles nor writes the taker's lease over, so no third instance takes the
/// answer again and ends it with `upstream_lost`; the ledger holds the `done`'s total once.
extension TakeoverTests {
    /// Trials per run (`RELAY_STALL_TRIALS`, default 3; the stall study runs dozens), each
    /// owner woken a little later into the taker's answer.
    var stallTrials: Int { Int(ProcessInfo.processInfo.environment["RELAY_STALL_TRIALS"] ?? "") ?? 3 }

    func testAStalledOwnerWokenWhileTheTakerGeneratesNeitherSettlesNorTakesTheAnswerBack() throws {
        let env = ["RELAY_SIMULATED_TOKENS_PER_SECOND": "60", "RELAY_BUFFER_EVENTS": "40"]
        let a = try startRelay(env.merging(["RELAY_WORKERS": "1"]) { $1 })
        let b = try startRelay(env)
        for trial in 1...stallTrials {
            let user = "wake-\(trial)-\(UUID().uuidString.prefix(8))"
            let token = RelayProcess.token(sub: user)
            let id = Chat.newID()
            let maxTokens = 600   // 10 s at 60 tokens/s: the taker is mid-answer when the owner wakes
            let owner = try Chat.start(port: a.port, token: token, requestID: id, maxTokens: maxTokens)
            var ownerEvents: [SSEMessage] = []
            for _ in 0..<10 { ownerEvents.append(try XCTUnwrap(try owner.nextEvent())) }
            let settledBefore = try metricSum(a, "relay_budget_settlements_total")
            let pid = a.process.processIdentifier
            Foundation.kill(pid, SIGSTOP)
            var stopped = true
            defer { if stopped { Foundation.kill(pid, SIGCONT) } }
            let onB = try Chat.resume(port: b.port, token: token, requestID: id, lastEventID: "0")
            let meta = streamKey(id, "meta", sub: user)
            try eventually(15, "trial \(trial): b to take the stream over") { try redis.cli("HGET", meta, "epoch") == "1" }
            // The owner wakes once the taker's entries have moved the retained window (40 entries)
            // past its own: its tail read finds a hole and foreign entries after its last seq.
            let events = streamKey(id, "events", sub: user)
            func top() throws -> Int { Int(try redis.cli("XREVRANGE", events, "+", "-", "COUNT", "1").split(separator: "\n").first?.split(separator: "-").first ?? "") ?? 0 }
            let takenAt = try top()
            try eventually(10, "trial \(trial): the taker appends past the window") { try top() >= takenAt + 30 + 20 * ((trial - 1) % 10) }
            XCTAssertEqual(try redis.cli("HGET", meta, "state"), "running", "trial \(trial): the taker is still generating")
            Foundation.kill(pid, SIGCONT)
            stopped = false
            let readOnB = try onB.readAll(timeout: 40)
            assertWhole(readOnB, maxTokens: maxTokens, "trial \(trial): the reader on b", reader: .reconnected)
            ownerEvents += try owner.readAll(timeout: 40)
            assertWhole(ownerEvents, maxTokens: maxTokens, "trial \(trial): the woken owner's own client", reader: .reconnected)
            XCTAssertEqual(try redis.cli("HMGET", meta, "state", "epoch", "continuations"), "done\n1\n1",
                           "trial \(trial): one takeover, ended by the taker, never taken back")
            guard case .done(_, let usage, _)? = try? StreamEvent(json: readOnB.last?.data ?? "") else { return XCTFail("done") }
            try eventually(5, "trial \(trial): settled") { try self.ledger(user).reserved == 0 }
            XCTAssertEqual(try ledger(user).used, usage.totalTokens, "trial \(trial): charged the done's total, once")
            XCTAssertEqual(try metricSum(a, "relay_budget_settlements_total"), settledBefore, "trial \(trial): the woken owner settled nothing")
        }
    }

    /// The lease refresh is fenced by the ownership epoch (`Scripts.refreshLease`): a stale
    /// owner's refresh leaves the taker's lease as it is and learns it was taken over; the
    /// owner refreshes its own, and takes back an unclaimed lapsed one.
    func testAStaleOwnersLeaseRefreshLeavesTheTakersLeaseAlone() throws {
        let id = "refresh-\(UUID().uuidString.prefix(8))"
        let k = StreamKeys(id)
        func refresh(_ who: String, epoch: Int) throws -> String {
            try redis.cli(["EVAL", Scripts.refreshLease.text, "2", k.lease, k.meta, who, "3000", String(epoch)])
        }
        _ = try redis.cli("HSET", k.meta, "state", "running")
        XCTAssertEqual(try refresh("relay-a", epoch: 0), "1", "an unclaimed lease is the owner's again")
        XCTAssertEqual(try redis.cli("GET", k.lease), "relay-a")
        _ = try redis.cli("HSET", k.meta, "epoch", "1")
        _ = try redis.cli("SET", k.lease, "relay-b", "PX", "3000")
        XCTAssertEqual(try refresh("relay-a", epoch: 0), "-1", "the stale owner learns it was taken over")
        XCTAssertEqual(try redis.cli("GET", k.lease), "relay-b", "the taker's lease is untouched")
        XCTAssertEqual(try refresh("relay-b", epoch: 1), "1")
        XCTAssertEqual(try refresh("relay-c", epoch: 1), "-1", "a lease held by another is not written over")
        _ = try redis.cli("HSET", k.meta, "state", "done")
        XCTAssertEqual(try refresh("relay-b", epoch: 1), "0", "an ended stream's lease is not refreshed")
        _ = try redis.cli("DEL", k.meta, k.lease)
    }

    /// A continued answer holds its session slot (docs/PROTOCOL.md §4.5): with one answer
    /// allowed per session, a new answer of the same session is refused while the
    /// taker continues the first.
    func testAContinuedAnswerHoldsItsSessionSlot() throws {
        let env = ["RELAY_SIMULATED_TOKENS_PER_SECOND": "40", "RELAY_MAX_STREAMS_PER_SESSION": "1"]
        let a = try startRelay(env.merging(["RELAY_WORKERS": "1"]) { $1 })
        let b = try startRelay(env)
        let user = "slot-\(UUID().uuidString.prefix(8))"
        let sid = "s-\(UUID().uuidString.prefix(8))"
        let token = RelayProcess.token(sub: user, sid: sid)
        let id = Chat.newID()
        let owner = try Chat.start(port: a.port, token: token, requestID: id, maxTokens: 600)
        _ = try XCTUnwrap(try owner.nextEvent())
        a.kill9()
        owner.close()
        let onB = try Chat.resume(port: b.port, token: token, requestID: id, lastEventID: "0")
        try eventually(15, "b to take the stream over") {
            try self.redis.cli("HGET", self.streamKey(id, "meta", sub: user), "epoch") == "1"
        }
        let slots = "relay:streams:{\(OwnerHash.of(user)):\(sid)}"
        try eventually(5, "the continuation to hold a live session slot") {
            let now = Int(Date().timeIntervalSince1970 * 1000)
            return try self.redis.cli("ZCOUNT", slots, "(\(now)", "+inf") == "1"
        }
        let second = try HTTPClient.request(port: b.port, method: "POST", path: "/api/chat/stream",
                                            headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")],
                                            body: Chat.body(maxTokens: 5))
        XCTAssertEqual(second.status, 429)
        XCTAssertEqual(second.errorCode, "too_many_streams", "the continued answer counts against the session")
        onB.close()
    }

    /// A session's limit holds across an owner's stall (docs/PROTOCOL.md §4.5): with one answer
    /// allowed per session, an owner stalled past its lease loses its slot, the session starts
    /// another answer on another instance, and the woken owner — whose refresh finds its slot
    /// gone and the session full — ends its answer with `upstream_lost`, charged what was
    /// generated, instead of running as a second answer. (The stall stays under the 5 s
    /// heartbeat, so no sweep takes the answer over meanwhile.)
    func testAnOwnerWokenAfterItsSessionSlotWasTakenEndsItsAnswerWithinTheLimit() throws {
        let env = ["RELAY_SIMULATED_TOKENS_PER_SECOND": "40", "RELAY_MAX_STREAMS_PER_SESSION": "1"]
        let a = try startRelay(env.merging(["RELAY_WORKERS": "1"]) { $1 })
        let b = try startRelay(env)
        let user = "stall-slot-\(UUID().uuidString.prefix(8))"
        let sid = "s-\(UUID().uuidString.prefix(8))"
        let token = RelayProcess.token(sub: user, sid: sid)
        let first = Chat.newID()
        let owner = try Chat.start(port: a.port, token: token, requestID: first, maxTokens: 600)   // 15 s
        for _ in 0..<5 { _ = try XCTUnwrap(try owner.nextEvent()) }
        owner.close()
        let slots = "relay:streams:{\(OwnerHash.of(user)):\(sid)}"
        func liveSlots() throws -> Int {
            Int(try redis.cli("ZCOUNT", slots, "(\(Int(Date().timeIntervalSince1970 * 1000))", "+inf")) ?? -1
        }
        XCTAssertEqual(try liveSlots(), 1)
        let pid = a.process.processIdentifier
        Foundation.kill(pid, SIGSTOP)
        var stopped = true
        defer { if stopped { Foundation.kill(pid, SIGCONT) } }
        let events = streamKey(first, "events", sub: user)
        let topAtStop = Int(try redis.cli("XREVRANGE", events, "+", "-", "COUNT", "1").split(separator: "\n").first?.split(separator: "-").first ?? "") ?? 0
        try eventually(4, "the stalled owner's slot to lapse") { try liveSlots() == 0 }
        let second = try Chat.start(port: b.port, token: token, maxTokens: 200)   // 5 s, admitted in the lapsed slot
        _ = try XCTUnwrap(try second.nextEvent(), "the second answer was admitted")
        Foundation.kill(pid, SIGCONT)
        stopped = false
        let firstEvents = try Chat.resume(port: b.port, token: token, requestID: first, lastEventID: "0").readAll(timeout: 30)
        guard case .error(_, let code, _)? = try? StreamEvent(json: firstEvents.last?.data ?? "") else {
            return XCTFail("the woken owner's answer ends with an error, got \(firstEvents.suffix(1).map(\.data)) after \(firstEvents.count) events")
        }
        XCTAssertEqual(code, .upstreamLost)
        // The tokens the upstream sent during the stall (~150) were never numbered: the woken
        // owner confirmed its lease and slot before sending anything more.
        XCTAssertLessThanOrEqual(firstEvents.count, topAtStop + 3, "nothing appended after the wake but the error")
        XCTAssertLessThanOrEqual(try liveSlots(), 1, "never two answers in a one-answer session")
        let secondEvents = try second.readAll(timeout: 30)
        guard case .done? = try? StreamEvent(json: secondEvents.last?.data ?? "") else { return XCTFail("the second answer ends with done") }
        try eventually(10, "both answers settled") { try self.ledger(user).reserved == 0 }
        XCTAssertEqual(try metric(a, "relay_session_slots_lost_total"), 1)
    }

    /// A stalled owner that wakes after its answer was taken over writes nothing — no event,
    /// and no text: its text writes are plain `SETRANGE`s no append check refuses, and would
    /// overwrite the taker's text under later catch-ups. The owner's loop clock passed the
    /// lease it knew, so it holds everything until Redis says it still owns the answer
    /// (docs/PROTOCOL.md §4.5). The continuation here words differently from the owner (an
    /// OpenAI-style server starts over), so an overwrite would show: every read from 0 after the
    /// end must be the events the live reader got.
    func testAStalledOwnerWokenAfterATakeoverWritesNothingOverTheTakersText() throws {
        var answer = ContinuableAnswerUpstream(tokens: Array(repeating: ContinuableAnswerUpstream.standard.tokens, count: 12).flatMap { $0 })
        answer.pauseMsPerToken = 25
        let fake = try FakeUpstreamServer(routes: [:])
        defer { fake.stop() }
        fake.setResponder("/v1/chat/completions") { [answer] in answer.openAIScript($0, as: .openAI) }
        let env = ["RELAY_UPSTREAM": "openai", "UPSTREAM_URL": fake.baseURL, "UPSTREAM_API_KEY": "sk-test", "UPSTREAM_MODEL": "gpt-test",
                   "RELAY_UPSTREAM_CONTINUATION": "vllm", "RELAY_BUFFER_EVENTS": "40"]
        let a = try startRelay(env.merging(["RELAY_WORKERS": "1"]) { $1 }), b = try startRelay(env)
        let user = "overwrite-\(UUID().uuidString.prefix(8))"
        let token = RelayProcess.token(sub: user)
        let id = Chat.newID()
        let owner = try Chat.start(port: a.port, token: token, requestID: id, model: "gpt-test", maxTokens: 2000)
        for _ in 0..<10 { _ = try XCTUnwrap(try owner.nextEvent()) }
        let onB = try Chat.resume(port: b.port, token: token, requestID: id, lastEventID: "0")
        let pid = a.process.processIdentifier
        Foundation.kill(pid, SIGSTOP)
        var stopped = true
        defer { if stopped { Foundation.kill(pid, SIGCONT) } }
        let meta = streamKey(id, "meta", sub: user)
        try eventually(15, "b to take the answer over") { try self.redis.cli("HGET", meta, "epoch") == "1" }
        let events = streamKey(id, "events", sub: user)
        func top() throws -> Int { Int(try redis.cli("XREVRANGE", events, "+", "-", "COUNT", "1").split(separator: "\n").first?.split(separator: "-").first ?? "") ?? 0 }
        let takenAt = try top()
        try eventually(10, "the taker to append well past the takeover") { try top() >= takenAt + 30 }
        Foundation.kill(pid, SIGCONT)
        stopped = false
        owner.close()
        let live = try onB.readAll(timeout: 60)
        guard case .done? = try? StreamEvent(json: live.last?.data ?? "") else { return XCTFail("the answer ends with done") }
        assertSequence(live)
        let auth = [("Authorization", "Bearer \(token)")]
        for relay in [a, b] {
            let again = try Chat.resume(port: relay.port, token: token, requestID: id, lastEventID: "0").readAll(timeout: 20)
            XCTAssertEqual(again.map(\.lastEventId), live.map(\.lastEventId), "a resume from 0 on \(relay.port): every id")
            let differing = zip(again, live).first { $0.0.data != $0.1.data }
            XCTAssertNil(differing.map { "seq \($0.0.lastEventId): \($0.0.data) ≠ \($0.1.data)" }, "a resume from 0 on \(relay.port): the live events")
            let offsets = try HTTPClient.request(port: relay.port, method: "GET", path: "/api/chat/stream/\(id)?offset=-1", headers: auth)
            XCTAssertEqual(offsets.text, "[" + live.map(\.data).joined(separator: ",") + "]", "an offset read from -1 on \(relay.port)")
        }
    }
}
