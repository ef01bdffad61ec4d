import Foundation
import RelayCore
@testable import RelayEventStore
import RelayRedis
import RelayTestSupport
import XCTest

/// `LuaScriptTests`: the ownership scripts (docs/DATA_MODEL.md §6, §6.1) — lease expiry and
/// its cluster variant, takeover, the taker's fenced appends, the lease refresh and release.
extension LuaScriptTests {
    // MARK: expireLease, expireLeaseSharded

    var expireKeys: [String] { [k.events, k.meta, k.live, k.lease, k.text, k.offsets] }

    /// ARGV of a lease expiry: cap 100, the event as new streams are stored (`stored`), its
    /// plaintext, and whether the caller has keys.
    func expireArgs(stored: String = #"{"type":"error","code":"upstream_lost"}"#, haveKeys: Bool = false) -> [String] {
        ["100", "60000", stored, "1", #"{"type":"error","code":"upstream_lost"}"#, haveKeys ? "1" : "0"]
    }

    func commandCalls(_ name: String) throws -> Int {
        let stats = try redis.cli("INFO", "commandstats")
        guard let line = stats.split(whereSeparator: \.isNewline).first(where: { $0.hasPrefix("cmdstat_\(name):") }),
              let calls = line.split(separator: "=").dropFirst().first?.split(separator: ",").first else { return 0 }
        return Int(calls) ?? 0
    }

    func testExpireLeaseFindsAVanishedStream() throws {
        XCTAssertEqual(try reply(Scripts.expireLease, expireKeys, expireArgs()).expiry, .vanished)
    }

    func testExpireLeaseLeavesAStreamWhoseLeaseIsHeld() throws {
        try createStream()
        XCTAssertEqual(try reply(Scripts.expireLease, expireKeys, expireArgs()).expiry, .ownerAlive)
        XCTAssertEqual(try redis.cli("HGET", k.meta, "state"), "running")
    }

    func testExpireLeaseEndsALapsedStreamAtTopPlusOneFencedAndPublished() throws {
        try createStream()
        try addDeltas(1...2)
        try redis.cli("DEL", k.lease)
        let before = try commandCalls("publish")
        let x = try reply(Scripts.expireLease, expireKeys, expireArgs(stored: "SEALED-FORM"))
        XCTAssertEqual(x.expiry, .ended(seq: 3))
        XCTAssertEqual(x.budgetKey, "relay:budget:{u:h0}:2026-01")
        XCTAssertEqual(x.promptEstimate, 12)
        XCTAssertEqual(try redis.cli("HMGET", k.meta, "state", "last_seq"), "failed\n3")
        XCTAssertEqual(try redis.cli("XRANGE", k.events, "3-0", "3-0"), "3-0\ne\n" + #"{"type":"error","code":"upstream_lost"}"#,
                       "a plain stream gets the plaintext event")
        XCTAssertTrue(try redis.cli("XADD", k.events, "4-0", "e", "{}").contains("exhausted the last possible ID"), "fenced")
        XCTAssertEqual(try commandCalls("publish"), before + 1)
        XCTAssertEqual(try reply(Scripts.expireLease, expireKeys, expireArgs()).expiry, .ownerAlive, "no longer running: nothing to do")
    }

    func testExpireLeaseLeavesASealedStreamToARelayWithKeys() throws {
        try createStream(atRest: "sealed")
        try redis.cli("DEL", k.lease)
        XCTAssertEqual(try reply(Scripts.expireLease, expireKeys, expireArgs(haveKeys: false)).expiry, .ownerAlive)
        XCTAssertEqual(try redis.cli("HGET", k.meta, "state"), "running", "nothing written")
        XCTAssertEqual(try reply(Scripts.expireLease, expireKeys, expireArgs(stored: "SEALED-FORM", haveKeys: true)).expiry, .ended(seq: 1))
        XCTAssertEqual(try redis.cli("XRANGE", k.events, "1-0", "1-0"), "1-0\ne\nSEALED-FORM", "a sealed stream gets the sealed event")
    }

    func testTheClusterLeaseExpiryPublishesWithSPUBLISHAndDoesTheSame() throws {
        try createStream()
        try addDeltas(1...1)
        try redis.cli("DEL", k.lease)
        let (publish, spublish) = (try commandCalls("publish"), try commandCalls("spublish"))
        let x = try reply(Scripts.expireLeaseSharded, expireKeys, expireArgs())
        XCTAssertEqual(x.expiry, .ended(seq: 2))
        XCTAssertEqual(x.budgetKey, "relay:budget:{u:h0}:2026-01")
        XCTAssertEqual(try redis.cli("HMGET", k.meta, "state", "last_seq"), "failed\n2")
        XCTAssertEqual(try commandCalls("spublish"), spublish + 1)
        XCTAssertEqual(try commandCalls("publish"), publish)
    }

    // MARK: takeover

    /// The six keys `takeover` gets, in its order.
    var takeoverKeys: [String] { [k.events, k.meta, k.lease, k.text, k.offsets, k.request] }

    /// ARGV of a takeover by `i2`: at most `max` continuations, lossless, `haveKeys`.
    func takeoverArgs(max: Int = 3, haveKeys: Bool = false) -> [String] {
        ["i2", "3000", String(max), "60000", "1", haveKeys ? "1" : "0"]
    }

    func testTakeoverFindsAVanishedStream() throws {
        XCTAssertEqual(try reply(Scripts.takeover, takeoverKeys, takeoverArgs()), .vanished)
    }

    func testTakeoverIsRefusedWhileTheLeaseIsHeld() throws {
        try createStream()
        XCTAssertEqual(try reply(Scripts.takeover, takeoverKeys, takeoverArgs()), .ownerAlive)
        XCTAssertEqual(try redis.cli("HEXISTS", k.meta, "epoch"), "0")
    }

    func testTakeoverOfALapsedStreamBumpsTheEpochTakesTheLeaseAndFences() throws {
        try createStream()
        try addDeltas(1...3)
        try redis.cli("DEL", k.lease)
        let r = try reply(Scripts.takeover, takeoverKeys, takeoverArgs())
        XCTAssertEqual(r, .taken(Scripts.TakeoverTaken(epoch: 1, topSeq: 3, request: "the request", prefix: "",
                                                       entries: [delta(1), delta(2), delta(3)], continuations: 1, owner: "alice",
                                                       sid: "s1", priorPrompt: 12, offsets: [], wholeText: [], atRest: "plain")))
        XCTAssertEqual(try redis.cli("HMGET", k.meta, "epoch", "continuations", "instance"), "1\n1\ni2")
        XCTAssertEqual(try redis.cli("GET", k.lease), "i2")
        XCTAssertTrue(try redis.cli("XADD", k.events, "4-0", "e", "{}").contains("exhausted the last possible ID"), "fenced")
        try redis.cli("DEL", k.lease)
        guard case .taken(let again) = try reply(Scripts.takeover, takeoverKeys, takeoverArgs()) else { return XCTFail("taken again") }
        XCTAssertEqual(again.epoch, 2)
        XCTAssertEqual(again.continuations, 2)
    }

    func testTakeoverRebuildsTheTextBeforeTheOldestRetainedEntry() throws {
        try createStream()
        try addDeltas(1...4)
        try redis.cli("XTRIM", k.events, "MAXLEN", "2")
        try redis.cli("SET", k.text, "t1t2t3t4")
        try redis.cli("BITFIELD", k.offsets, "SET", "u32", "#1", "2", "SET", "u32", "#2", "4", "SET", "u32", "#3", "6", "SET", "u32", "#4", "8")
        try redis.cli("DEL", k.lease)
        guard case .taken(let t) = try reply(Scripts.takeover, takeoverKeys, takeoverArgs()) else { return XCTFail("taken") }
        XCTAssertEqual(t.prefix, "t1t2")
        XCTAssertEqual(t.entries, [delta(3), delta(4)])
        XCTAssertEqual(t.offsets, [0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 4, 0, 0, 0, 6, 0, 0, 0, 8])
    }

    func testTakeoverIsRefusedOverTheContinuationLimitWithoutARequestOrText() throws {
        try createStream()
        try addDeltas(1...2)
        try redis.cli("DEL", k.lease)
        try redis.cli("HSET", k.meta, "continuations", "2")
        XCTAssertEqual(try reply(Scripts.takeover, takeoverKeys, takeoverArgs(max: 2)), .notContinuable, "over the limit")
        XCTAssertEqual(try redis.cli("HGET", k.meta, "continuations"), "2", "nothing changed")
        try redis.cli("HSET", k.meta, "continuations", "0")
        try redis.cli("DEL", k.request)
        XCTAssertEqual(try reply(Scripts.takeover, takeoverKeys, takeoverArgs()), .notContinuable, "no stored request")
        try redis.cli("SET", k.request, "the request")
        try redis.cli("XTRIM", k.events, "MAXLEN", "1")
        XCTAssertEqual(try reply(Scripts.takeover, takeoverKeys, takeoverArgs()), .notContinuable, "trimmed, and no text")
    }

    func testTakeoverLeavesASealedStreamToARelayWithKeys() throws {
        try createStream(atRest: "sealed")
        try redis.cli("DEL", k.lease)
        XCTAssertEqual(try reply(Scripts.takeover, takeoverKeys, takeoverArgs(haveKeys: false)), .needsKeys)
        XCTAssertEqual(try redis.cli("HEXISTS", k.meta, "epoch"), "0", "nothing changed")
        guard case .taken(let t) = try reply(Scripts.takeover, takeoverKeys, takeoverArgs(haveKeys: true)) else { return XCTFail("taken") }
        XCTAssertEqual(t.atRest, "sealed")
    }

    func testTakeoverOfAnEndedStreamReportsWhatSettlingItNeeds() throws {
        try createStream()
        try addDeltas(1...1)
        _ = try reply(Scripts.appendFinal, [k.events, k.meta, k.text, k.offsets, k.answer, k.request],
                      ["2", #"{"type":"done"}"#, "100", "60000", "done", "0", "", "0", "0"])
        try redis.cli("DEL", k.lease)
        XCTAssertEqual(try reply(Scripts.takeover, takeoverKeys, takeoverArgs()),
                       .ended(Scripts.TakeoverEnded(state: "done", budgetKey: "relay:budget:{u:h0}:2026-01", prompt: 12, lastSeq: 2,
                                                    finalEntry: [SequencedEvent(seq: 2, json: #"{"type":"done"}"#)], atRest: "plain")))
    }

    // MARK: appendFenced

    /// Stream `k` with seqs 1…3, taken over by `i2` under epoch 1.
    func takenStream() throws {
        try createStream()
        try addDeltas(1...3)
        try redis.cli("DEL", k.lease)
        guard case .taken = try reply(Scripts.takeover, takeoverKeys, takeoverArgs()) else { throw TestFailure("not taken") }
    }

    func testAppendFencedStoresTheTakersEventsAndFencesAgain() throws {
        try takenStream()
        XCTAssertEqual(try reply(Scripts.appendFenced, [k.events, k.meta], ["4", "{}", "1", ""]).seq, 4)
        XCTAssertEqual(try reply(Scripts.appendFenced, [k.events, k.meta], ["5", "{}", "1", "2"]).seq, 5)
        XCTAssertEqual(try redis.cli("XLEN", k.events), "2", "trimmed to the cap given")
        XCTAssertTrue(try redis.cli("XADD", k.events, "6-0", "e", "{}").contains("exhausted the last possible ID"), "fenced again")
    }

    func testAppendFencedRefusesAStaleEpochAGoneOrEndedStreamAStoredSeqAndAHole() throws {
        XCTAssertEqual(try failure(Scripts.appendFenced, [k.events, k.meta], ["1", "{}", "0", ""]).code, .noStream)
        try takenStream()
        let stale = try failure(Scripts.appendFenced, [k.events, k.meta], ["4", "{}", "0", ""])
        XCTAssertEqual(stale.code, .finished)
        XCTAssertEqual(stale.message, "FINISHED taken")
        let stored = try failure(Scripts.appendFenced, [k.events, k.meta], ["3", "{}", "1", ""])
        XCTAssertEqual(stored.code, .outOfOrder(lastSeq: 3), "a stored seq is refused as out of order, typed")
        let hole = try failure(Scripts.appendFenced, [k.events, k.meta], ["5", "{}", "1", ""])
        XCTAssertEqual(hole.code, .outOfOrder(lastSeq: 3), "so is a seq past the next one")
        try redis.cli("HSET", k.meta, "state", "cancelled")
        let ended = try failure(Scripts.appendFenced, [k.events, k.meta], ["4", "{}", "1", ""])
        XCTAssertEqual(ended.code, .finished)
        XCTAssertEqual(ended.message, "FINISHED cancelled")
        XCTAssertEqual(try redis.cli("XLEN", k.events), "3", "nothing stored")
    }

    // MARK: refreshLease, releaseLease

    func testRefreshLeaseRenewsTheOwnersLeaseAndOneThatLapsedUnclaimed() throws {
        try createStream()
        XCTAssertEqual(try reply(Scripts.refreshLease, [k.lease, k.meta], ["i1", "9000", "0"]), .held)
        XCTAssertGreaterThan(Int(try redis.cli("PTTL", k.lease)) ?? 0, 3000)
        try redis.cli("DEL", k.lease)
        XCTAssertEqual(try reply(Scripts.refreshLease, [k.lease, k.meta], ["i1", "9000", "0"]), .held)
        XCTAssertEqual(try redis.cli("GET", k.lease), "i1")
    }

    func testRefreshLeaseFindsTheStreamTakenOverOrNoLongerRunning() throws {
        try createStream()
        try redis.cli("SET", k.lease, "i2")
        XCTAssertEqual(try reply(Scripts.refreshLease, [k.lease, k.meta], ["i1", "9000", "0"]), .takenOver, "another instance's lease")
        XCTAssertEqual(try redis.cli("GET", k.lease), "i2", "not written over")
        try redis.cli("DEL", k.lease)
        try redis.cli("HSET", k.meta, "epoch", "1")
        XCTAssertEqual(try reply(Scripts.refreshLease, [k.lease, k.meta], ["i1", "9000", "0"]), .takenOver, "a newer epoch")
        try redis.cli("HSET", k.meta, "state", "done")
        XCTAssertEqual(try reply(Scripts.refreshLease, [k.lease, k.meta], ["i1", "9000", "1"]), .notRunning)
        XCTAssertEqual(try reply(Scripts.refreshLease, [k.lease, k.meta], ["i1", "9000", "0"]), .takenOver,
                       "a stale epoch is taken over even once the taker has ended the answer")
        try redis.cli("DEL", k.meta)
        XCTAssertEqual(try reply(Scripts.refreshLease, [k.lease, k.meta], ["i1", "9000", "0"]), .notRunning, "gone")
        XCTAssertEqual(try redis.cli("EXISTS", k.lease), "0")
    }

    func testReleaseLeaseDeletesOnlyTheCallersLease() throws {
        try redis.cli("SET", k.lease, "i2")
        XCTAssertFalse(try reply(Scripts.releaseLease, [k.lease], ["i1"]).released)
        XCTAssertEqual(try redis.cli("GET", k.lease), "i2")
        XCTAssertTrue(try reply(Scripts.releaseLease, [k.lease], ["i2"]).released)
        XCTAssertEqual(try redis.cli("EXISTS", k.lease), "0")
        XCTAssertFalse(try reply(Scripts.releaseLease, [k.lease], ["i2"]).released, "gone")
    }
}
