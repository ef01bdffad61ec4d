import Foundation
import RelayCore
@testable import RelayEventStore
import RelayRedis
import XCTest

/// `LuaScriptTests`: the completion webhooks' outbox (docs/DATA_MODEL.md §13): enqueue,
/// claim, settle under the claim's token, and the stream's subject.
extension LuaScriptTests {
    var outbox: [String] { CompletionWebhookOutbox.keys }
    var due: String { outbox[0] }

    /// Queues `id` due at once (record: stream h0:req1 of alice, ended at 1700000000000).
    func enqueue(_ id: String, delayMs: Int = 0) throws -> Bool {
        try reply(Scripts.outboxEnqueue, outbox, [id, "h0:req1 1700000000000 alice", String(delayMs)]).queued
    }

    /// Claims for 10 s under `token`, at most 16, as a claimer with or without keys.
    func claim(_ token: String, haveKeys: Bool = true) throws -> [CompletionWebhookOutbox.Claimed] {
        try reply(Scripts.outboxClaim, outbox, ["10000", token, "16", "86400000", haveKeys ? "1" : "0", "30000"]).claimed
    }

    func settle(_ id: String, _ token: String, _ outcome: String, afterMs: Int = 0) throws -> Bool {
        try reply(Scripts.outboxSettle, outbox, [id, token, outcome, String(afterMs)]).settled
    }

    func testEnqueueQueuesAMessageOnceAndNeverAfterItWasSent() throws {
        XCTAssertTrue(try enqueue("msg_1"))
        XCTAssertFalse(try enqueue("msg_1"), "queued already")
        XCTAssertEqual(try claim("t1").map(\.id), ["msg_1"])
        XCTAssertTrue(try settle("msg_1", "t1", "done"))
        XCTAssertEqual(try redis.cli("ZSCORE", outbox[4], "msg_1").isEmpty, false, "remembered in sent")
        XCTAssertFalse(try enqueue("msg_1"), "delivered: not queued again")
    }

    func testClaimTakesDueMessagesOnceUntilTheClaimLapses() throws {
        XCTAssertTrue(try enqueue("msg_1"))
        XCTAssertTrue(try enqueue("msg_2", delayMs: 60_000))
        let claimed = try claim("t1")
        XCTAssertEqual(claimed.count, 1, "msg_2 is not due")
        XCTAssertEqual(claimed.first?.id, "msg_1")
        XCTAssertEqual(claimed.first?.scopedID, "h0:req1")
        XCTAssertEqual(claimed.first?.sub, "alice")
        XCTAssertEqual(claimed.first?.endedMs, 1_700_000_000_000)
        XCTAssertEqual(claimed.first?.attempts, 0)
        XCTAssertEqual(try redis.cli("HGET", outbox[3], "msg_1"), "t1")
        XCTAssertEqual(try claim("t2").count, 0, "claimed by t1 until its claim lapses")
        try redis.cli("ZADD", due, "0", "msg_1")   // the claim lapsed
        XCTAssertEqual(try claim("t2").map(\.id), ["msg_1"])
    }

    func testClaimDropsADueIdWithoutARecord() throws {
        try redis.cli("ZADD", due, "0", "msg_orphan")
        XCTAssertEqual(try claim("t1").count, 0)
        XCTAssertEqual(try redis.cli("ZSCORE", due, "msg_orphan"), "")
    }

    func testSettleActsOnlyUnderTheCurrentClaimAndCountsARetry() throws {
        XCTAssertTrue(try enqueue("msg_1"))
        XCTAssertEqual(try claim("t1").count, 1)
        XCTAssertFalse(try settle("msg_1", "t0", "retry"), "another token's claim")
        XCTAssertEqual(try redis.cli("HEXISTS", outbox[2], "msg_1"), "0", "nothing changed")
        XCTAssertTrue(try settle("msg_1", "t1", "retry"))
        XCTAssertEqual(try redis.cli("HGET", outbox[2], "msg_1"), "1")
        XCTAssertEqual(try claim("t2").first?.attempts, 1, "due again at once, one attempt made")
        XCTAssertTrue(try settle("msg_1", "t2", "later", afterMs: 60_000))
        XCTAssertEqual(try claim("t3").count, 0, "due again in a minute")
        XCTAssertEqual(try redis.cli("HGET", outbox[2], "msg_1"), "1", "a later is not an attempt")
    }

    func testAMessageNeedingKeysIsLeftToClaimersWithKeys() throws {
        XCTAssertTrue(try enqueue("msg_1"))
        XCTAssertEqual(try claim("t1", haveKeys: false).count, 1)
        XCTAssertTrue(try settle("msg_1", "t1", "needkeys"))
        XCTAssertEqual(try redis.cli("HGET", outbox[5], "msg_1"), "1")
        XCTAssertEqual(try claim("t2", haveKeys: false).count, 0, "a keyless claimer skips it")
        XCTAssertEqual(try claim("t3", haveKeys: true).map(\.id), ["msg_1"])
        XCTAssertTrue(try settle("msg_1", "t3", "done"))
        XCTAssertEqual(try redis.cli("HEXISTS", outbox[5], "msg_1"), "0", "forgotten once done")
    }

    func testSubjectReadsAGoneStreamAndAnEndedOneWithItsFinalEvent() throws {
        let keys = [k.meta, k.events, k.delivered]
        XCTAssertEqual(try reply(Scripts.outboxSubject, keys, []), .gone)
        try createStream()
        XCTAssertEqual(try reply(Scripts.outboxSubject, keys, []), .stream(state: "running", storedFinalEvent: "", read: false, atRest: "plain"))
        try addDeltas(1...1)
        _ = try reply(Scripts.appendFinal, [k.events, k.meta, k.text, k.offsets, k.answer, k.request],
                      ["2", #"{"type":"done"}"#, "100", "60000", "done", "0", "", "0", "0"])
        try redis.cli("SET", k.delivered, "1")
        XCTAssertEqual(try reply(Scripts.outboxSubject, keys, []),
                       .stream(state: "done", storedFinalEvent: #"{"type":"done"}"#, read: true, atRest: "plain"))
    }
}
