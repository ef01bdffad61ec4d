import RelayCore
@testable import RelayEventStore
import RelayRedis
import XCTest

/// Each event-store script's reply decodes, in its one place (`ScriptReply`), into its named
/// fields; a reply of no shape its header names fails as `.unexpectedReply` instead of
/// being read as some other outcome. (Against real Redis: `LuaScriptTests`.)
final class ScriptReplyTests: XCTestCase {
    private func int(_ n: Int64) -> RedisReply { .integer(n) }
    private func bulk(_ s: String) -> RedisReply { .bulk(Array(s.utf8)) }
    private func entry(_ seq: Int, _ json: String) -> RedisReply { .array([bulk("\(seq)-0"), .array([bulk("e"), bulk(json)])]) }

    private func assertUnexpected<R: ScriptReply>(_ type: R.Type, _ reply: RedisReply, file: StaticString = #filePath, line: UInt = #line) {
        do {
            let r = try R(reply: reply)
            XCTFail("decoded \(r) from \(reply)", file: file, line: line)
        } catch {
            XCTAssertEqual(error.code, .unexpectedReply, file: file, line: line)
        }
    }

    func testOpenReadsAMissingStreamAndAStreamWithoutAState() throws {
        XCTAssertEqual(try Scripts.OpenReply(reply: .null), .noStream)
        let r = try Scripts.OpenReply(reply: .array([bulk("alice"), .null, bulk("7-0"), bulk("3-0"), bulk("s1"), int(42)]))
        XCTAssertEqual(r, .stream(StreamInfo(owner: "alice", state: nil, lastSeq: 7, firstRetainedSeq: 3, sid: "s1", textLength: 42)))
        let empty = try Scripts.OpenReply(reply: .array([bulk("alice"), bulk("running"), bulk(""), bulk(""), bulk(""), int(0)]))
        XCTAssertEqual(empty, .stream(StreamInfo(owner: "alice", state: .running, lastSeq: 0, firstRetainedSeq: nil, sid: "", textLength: 0)))
        assertUnexpected(Scripts.OpenReply.self, .array([bulk("alice")]))
        assertUnexpected(Scripts.OpenReply.self, int(1))
    }

    func testAppendStatusReadsAGoneStreamAndATailWithoutText() throws {
        XCTAssertEqual(try Scripts.AppendStatusReply(reply: .array([])), .gone)
        let r = try Scripts.AppendStatusReply(reply: .array([bulk("taken"), bulk("5-0"), .array([entry(5, "{}")]), int(-1)]))
        XCTAssertEqual(r, .tail(Scripts.AppendStatusTail(state: "taken", topSeq: 5, entries: [SequencedEvent(seq: 5, json: "{}")], textEnd: nil)))
        let t = try Scripts.AppendStatusReply(reply: .array([bulk("running"), bulk(""), .array([]), int(12)]))
        XCTAssertEqual(t, .tail(Scripts.AppendStatusTail(state: "running", topSeq: 0, entries: [], textEnd: 12)))
        assertUnexpected(Scripts.AppendStatusReply.self, .array([bulk("running")]))
    }

    func testCatchUpReadsExpiredTextAndASealedKey() throws {
        XCTAssertEqual(try Scripts.CatchUpReply(reply: .null), .textGone)
        let r = try Scripts.CatchUpReply(reply: .array([int(3), int(9), .bulk([0, 0, 0, 9]), bulk("abcdef"), int(1)]))
        XCTAssertEqual(r, .text(Scripts.CatchUpText(start: 3, end: 9, ends: [0, 0, 0, 9], text: Array("abcdef".utf8), sealed: true)))
        assertUnexpected(Scripts.CatchUpReply.self, .array([int(3), int(9), .bulk([]), bulk(""), int(2)]))
    }

    func testExpireLeaseReadsEachOutcomeWithItsBudget() throws {
        XCTAssertEqual(try Scripts.ExpireLeaseReply(reply: .array([int(-1)])).expiry, .vanished)
        XCTAssertEqual(try Scripts.ExpireLeaseReply(reply: .array([int(0)])).expiry, .ownerAlive)
        let ended = try Scripts.ExpireLeaseReply(reply: .array([int(6), bulk("relay:budget:{u:x}:2026-01"), bulk("12")]))
        XCTAssertEqual(ended.expiry, .ended(seq: 6))
        XCTAssertEqual(ended.budgetKey, "relay:budget:{u:x}:2026-01")
        XCTAssertEqual(ended.promptEstimate, 12)
        assertUnexpected(Scripts.ExpireLeaseReply.self, .array([int(6)]))
        assertUnexpected(Scripts.ExpireLeaseReply.self, .array([int(0), bulk(""), bulk("0")]))
    }

    func testTakeoverReadsEveryShapeItsHeaderNames() throws {
        XCTAssertEqual(try Scripts.TakeoverReply(reply: .array([int(-1)])), .vanished)
        XCTAssertEqual(try Scripts.TakeoverReply(reply: .array([int(0)])), .ownerAlive)
        XCTAssertEqual(try Scripts.TakeoverReply(reply: .array([int(-2)])), .notContinuable)
        XCTAssertEqual(try Scripts.TakeoverReply(reply: .array([int(-3)])), .needsKeys)
        let ended = try Scripts.TakeoverReply(reply: .array([int(3), bulk("done"), bulk("b"), bulk("7"), bulk("4"),
                                                             .array([entry(4, "{\"type\":\"done\"}")]), bulk("")]))
        XCTAssertEqual(ended, .ended(Scripts.TakeoverEnded(state: "done", budgetKey: "b", prompt: 7, lastSeq: 4,
                                                          finalEntry: [SequencedEvent(seq: 4, json: "{\"type\":\"done\"}")], atRest: "")))
        let taken = try Scripts.TakeoverReply(reply: .array([int(1), int(2), int(3), bulk("req"), bulk("ab"), .array([entry(3, "{}")]),
                                                             int(2), bulk("alice"), bulk("s1"), bulk("20"), .bulk([0, 0, 0, 0]), bulk(""), bulk("plain")]))
        XCTAssertEqual(taken, .taken(Scripts.TakeoverTaken(epoch: 2, topSeq: 3, request: "req", prefix: "ab",
                                                           entries: [SequencedEvent(seq: 3, json: "{}")], continuations: 2,
                                                           owner: "alice", sid: "s1", priorPrompt: 20, offsets: [0, 0, 0, 0],
                                                           wholeText: [], atRest: "plain")))
        assertUnexpected(Scripts.TakeoverReply.self, .array([int(1), int(2)]))
        assertUnexpected(Scripts.TakeoverReply.self, .array([int(7)]))
        assertUnexpected(Scripts.TakeoverReply.self, .array([]))
    }

    func testLeaseRefreshCancelAndFlagsReadTheirValues() throws {
        XCTAssertEqual(try EventLog.LeaseRefresh(reply: int(1)), .held)
        XCTAssertEqual(try EventLog.LeaseRefresh(reply: int(0)), .notRunning)
        XCTAssertEqual(try EventLog.LeaseRefresh(reply: int(-1)), .takenOver)
        assertUnexpected(EventLog.LeaseRefresh.self, int(2))
        XCTAssertEqual(try EventLog.CancelRequest(reply: bulk("pending")), .pending)
        XCTAssertEqual(try EventLog.CancelRequest(reply: bulk("other")), .otherOwner)
        XCTAssertEqual(try EventLog.CancelRequest(reply: bulk("running")), .stream(.running))
        XCTAssertEqual(try EventLog.CancelRequest(reply: bulk("")), .stream(nil))
        assertUnexpected(EventLog.CancelRequest.self, int(1))
        XCTAssertEqual(try Scripts.CreateReply(reply: int(0)), .idTaken)
        XCTAssertEqual(try Scripts.AdmitReply(reply: int(1)), .admitted)
        XCTAssertTrue(try Scripts.HeartbeatReply(reply: int(1)).wasMissingOrLapsed)
        XCTAssertFalse(try Scripts.ReleaseLeaseReply(reply: int(0)).released)
        assertUnexpected(Scripts.RemoveLapsedInstanceReply.self, int(3))
        XCTAssertEqual(try Scripts.AppendFinalReply(reply: int(9)).seq, 9)
        assertUnexpected(Scripts.AppendFencedReply.self, bulk("x"))
    }

    func testOutboxClaimSkipsAnUnreadableRecordAndRefusesAPartialTriple() throws {
        let r = try Scripts.OutboxClaimReply(reply: .array([bulk("msg_1"), bulk("h:r1 1700000000000 alice"), bulk("2"),
                                                            bulk("msg_2"), bulk("no-spaces"), bulk("0")]))
        XCTAssertEqual(r.claimed, [CompletionWebhookOutbox.Claimed(id: "msg_1", scopedID: "h:r1", sub: "alice",
                                                                   endedMs: 1_700_000_000_000, attempts: 2)])
        XCTAssertEqual(try Scripts.OutboxClaimReply(reply: .array([])).claimed, [])
        assertUnexpected(Scripts.OutboxClaimReply.self, .array([bulk("msg_1"), bulk("h:r1 1 alice")]))
        XCTAssertEqual(try Scripts.OutboxSubjectReply(reply: .array([])), .gone)
        XCTAssertEqual(try Scripts.OutboxSubjectReply(reply: .array([bulk("done"), bulk("{}"), int(1), bulk("")])),
                       .stream(state: "done", storedFinalEvent: "{}", read: true, atRest: ""))
        assertUnexpected(Scripts.OutboxSubjectReply.self, .array([bulk("done"), bulk("{}"), int(1)]))
    }
}
