import Foundation
import RelayBudgets
import RelayConfiguration
import RelayCore
@testable import RelayEventStore
import RelayLoop
import RelayRedis
import RelayTestKit
import RelayTestSupport
import XCTest

/// Each Lua script on its own against a real `redis-server`, through the relay's own
/// connection and `ScriptRunner` (never loaded, so every call is an `EVAL` of the embedded
/// text), its reply decoded by its `ScriptReply` type: at least one case per reply shape
/// and error its header (`Lua/<name>.lua`) names, the keys it writes read back with
/// `redis-cli`. The event log's stream scripts and ownership here; sessions, the outbox and
/// the budgets in `LuaScriptTests+Sessions`, `+Outbox`, `+Budgets`.
final class LuaScriptTests: RelayTestCase {
    /// A `RedisConnection` and a `ScriptRunner` on their own loop thread.
    final class Runner: @unchecked Sendable {
        let loop: EventLoop
        let connection: RedisConnection
        let scripts: ScriptRunner
        let connects = LockedBox(0)
        private let thread: Thread

        init(url: String) throws {
            loop = try EventLoop()
            connection = RedisConnection(loop: loop, endpoint: try RedisEndpoint.parse(url), role: .commands)
            scripts = ScriptRunner(connection: connection)
            let n = connects
            connection.onConnect = { n.mutate { $0 += 1 } }
            nonisolated(unsafe) let c = connection
            loop.post { c.connect() }
            let lp = loop
            thread = Thread { lp.run() }
            thread.start()
        }

        func stop() {
            nonisolated(unsafe) let c = connection
            let lp = loop
            loop.post { c.close(); lp.stop() }
            let t = thread
            pollUntil(timeout: 5) { t.isFinished }
        }
    }

    private var runner: Runner?

    /// The runner of this test (started on first use, stopped at its end).
    private func scripts() throws -> Runner {
        if let runner { return runner }
        let r = try Runner(url: redis.url)
        addTeardownBlock { r.stop() }
        try eventually(10, "the connection to come up") { r.connects.value > 0 }
        runner = r
        return r
    }

    /// Runs `script` with `keys` and `args` and waits for its decoded reply.
    func eval<R>(_ script: LuaScript<R>, _ keys: [String], _ args: [String],
                 file: StaticString = #filePath, line: UInt = #line) throws -> Result<R, RedisFailure> {
        let r = try scripts()
        let box = LockedBox<Result<R, RedisFailure>?>(nil)
        nonisolated(unsafe) let runner = r.scripts
        r.loop.post { runner.run(script, keys: keys, args: args) { box.value = $0 } }
        try eventually(10, "\(script.source.file) to reply", file: file, line: line) { box.value != nil }
        return box.value!
    }

    /// `eval`, expecting a reply: the decoded value.
    func reply<R>(_ script: LuaScript<R>, _ keys: [String], _ args: [String],
                  file: StaticString = #filePath, line: UInt = #line) throws -> R {
        switch try eval(script, keys, args, file: file, line: line) {
        case .success(let v): return v
        case .failure(let f):
            XCTFail("\(script.source.file) failed: \(f)", file: file, line: line)
            throw f
        }
    }

    /// `eval`, expecting a failure: the typed failure.
    func failure<R>(_ script: LuaScript<R>, _ keys: [String], _ args: [String],
                    file: StaticString = #filePath, line: UInt = #line) throws -> RedisFailure {
        switch try eval(script, keys, args, file: file, line: line) {
        case .success(let v):
            XCTFail("\(script.source.file) replied \(v), a failure was expected", file: file, line: line)
            throw TestFailure("no failure")
        case .failure(let f): return f
        }
    }

    static let now = "1700000000000"
    let k = StreamKeys("h0:req1")

    /// The six keys `create` gets, in its order.
    var createKeys: [String] { [k.meta, k.lease, k.events, k.text, k.offsets, k.request] }

    /// Creates stream `k` (`Scripts.create`): owner alice, session s1, lease held by `i1`.
    @discardableResult
    func createStream(request: String = "the request", atRest: String = "plain", budget: String = "relay:budget:{u:h0}:2026-01",
                      prompt: Int = 12, maxlen: Int = 100) throws -> Scripts.CreateReply {
        try reply(Scripts.create, createKeys, ["alice", "s1", "i1", Self.now, "60000", "3000", budget, String(prompt),
                                               String(maxlen), request, atRest])
    }

    /// `XADD`s plain delta events `seqs` to stream `k`.
    func addDeltas(_ seqs: ClosedRange<Int>) throws {
        for s in seqs { try redis.cli("XADD", k.events, "NOMKSTREAM", "\(s)-0", "e", #"{"type":"delta","content":"t\#(s)"}"#) }
    }

    func delta(_ s: Int) -> SequencedEvent { SequencedEvent(seq: UInt64(s), json: #"{"type":"delta","content":"t\#(s)"}"#) }

    // MARK: create, open

    func testCreateWritesTheMetaLeaseAndAnEmptyStreamOnceAndDeletesLeftovers() throws {
        try redis.cli("SET", k.text, "leftover")
        XCTAssertEqual(try createStream(), .created)
        XCTAssertEqual(try redis.cli("HGET", k.meta, "state"), "running")
        XCTAssertEqual(try redis.cli("HMGET", k.meta, "owner", "sid", "instance", "budget", "prompt", "maxlen", "atrest"),
                       "alice\ns1\ni1\nrelay:budget:{u:h0}:2026-01\n12\n100\nplain")
        XCTAssertEqual(try redis.cli("GET", k.lease), "i1")
        XCTAssertEqual(try redis.cli("EXISTS", k.events), "1")
        XCTAssertEqual(try redis.cli("XLEN", k.events), "0")
        XCTAssertEqual(try redis.cli("GET", k.request), "the request")
        XCTAssertEqual(try redis.cli("EXISTS", k.text), "0", "the leftover text is deleted")
        try redis.cli("XADD", k.events, "NOMKSTREAM", "1-0", "e", "{}")
        XCTAssertEqual(try createStream(), .idTaken)
        XCTAssertEqual(try redis.cli("XLEN", k.events), "1", "a taken id is left as it is")
    }

    func testOpenFindsNoStreamWithoutAMeta() throws {
        XCTAssertEqual(try reply(Scripts.open, [k.meta, k.events, k.text], []), .noStream)
    }

    func testOpenReadsTheOwnerStateWindowSidAndTextLength() throws {
        try createStream()
        XCTAssertEqual(try reply(Scripts.open, [k.meta, k.events, k.text], []),
                       .stream(StreamInfo(owner: "alice", state: .running, lastSeq: 0, firstRetainedSeq: nil, sid: "s1", textLength: 0)))
        try addDeltas(1...4)
        try redis.cli("XTRIM", k.events, "MAXLEN", "2")
        try redis.cli("SET", k.text, "t1t2t3t4")
        XCTAssertEqual(try reply(Scripts.open, [k.meta, k.events, k.text], []),
                       .stream(StreamInfo(owner: "alice", state: .running, lastSeq: 4, firstRetainedSeq: 3, sid: "s1", textLength: 8)))
    }

    // MARK: catchUp

    func testCatchUpFindsTheTextGone() throws {
        XCTAssertEqual(try reply(Scripts.catchUp, [k.text, k.offsets, k.meta], ["0", "2", "0"]), .textGone)
    }

    func testCatchUpCutsThePlainTextBetweenTwoEventsEndOffsets() throws {
        try createStream()
        try redis.cli("SET", k.text, "helloworld!")
        try redis.cli("BITFIELD", k.offsets, "SET", "u32", "#1", "5", "SET", "u32", "#2", "10", "SET", "u32", "#3", "11")
        XCTAssertEqual(try reply(Scripts.catchUp, [k.text, k.offsets, k.meta], ["1", "2", "0"]),
                       .text(Scripts.CatchUpText(start: 5, end: 10, ends: [0, 0, 0, 10], text: Array("world".utf8), sealed: false)))
        XCTAssertEqual(try reply(Scripts.catchUp, [k.text, k.offsets, k.meta], ["0", "1", "0"]),
                       .text(Scripts.CatchUpText(start: 0, end: 5, ends: [0, 0, 0, 5], text: Array("hello".utf8), sealed: false)))
    }

    func testCatchUpReturnsTheWholeTextKeyOfASealedStream() throws {
        try createStream(atRest: "sealed")
        try redis.cli("SET", k.text, "sealed-records")
        try redis.cli("BITFIELD", k.offsets, "SET", "u32", "#1", "3", "SET", "u32", "#2", "6")
        XCTAssertEqual(try reply(Scripts.catchUp, [k.text, k.offsets, k.meta], ["1", "2", "0"]),
                       .text(Scripts.CatchUpText(start: 3, end: 6, ends: [0, 0, 0, 6], text: Array("sealed-records".utf8), sealed: true)))
    }

    // MARK: appendFinal

    /// ARGV of `appendFinal` for seq `seq`: state `done`, lossless, no record, `epoch`.
    func finalArgs(_ seq: Int, epoch: Int = 0, record: String = "", text: [String] = []) -> [String] {
        [String(seq), #"{"type":"done"}"#, "100", "60000", "done", "1", record, "90000", String(epoch)] + text
    }

    var finalKeys: [String] { [k.events, k.meta, k.text, k.offsets, k.answer, k.request] }

    func testAppendFinalStoresTheEventTextAndRecordThenFencesTheStream() throws {
        try createStream()
        try addDeltas(1...1)
        let stored = try reply(Scripts.appendFinal, finalKeys, finalArgs(2, record: "the record", text: ["0", "t1", "1", "2", "2", "2"]))
        XCTAssertEqual(stored.seq, 2)
        XCTAssertEqual(try redis.cli("HMGET", k.meta, "state", "last_seq"), "done\n2")
        XCTAssertEqual(try redis.cli("GET", k.text), "t1")
        XCTAssertEqual(try redis.cli("BITFIELD", k.offsets, "GET", "u32", "#1", "GET", "u32", "#2"), "2\n2")
        XCTAssertEqual(try redis.cli("GET", k.answer), "the record")
        XCTAssertGreaterThan(Int(try redis.cli("PTTL", k.answer)) ?? 0, 60_000, "the record's own lifetime")
        XCTAssertTrue(try redis.cli("XADD", k.events, "3-0", "e", "{}").contains("exhausted the last possible ID"), "fenced")
    }

    func testAppendFinalRefusesAGoneStreamAsNoStream() throws {
        XCTAssertEqual(try failure(Scripts.appendFinal, finalKeys, finalArgs(1)).code, .noStream)
    }

    func testAppendFinalRefusesAnEndedStreamAsFinished() throws {
        try createStream()
        _ = try reply(Scripts.appendFinal, finalKeys, finalArgs(1))
        let f = try failure(Scripts.appendFinal, finalKeys, finalArgs(2))
        XCTAssertEqual(f.code, .finished)
        XCTAssertEqual(f.message, "FINISHED done")
    }

    func testAppendFinalRefusesAStaleEpochAsFinishedTaken() throws {
        try createStream()
        try redis.cli("HSET", k.meta, "epoch", "2")
        let f = try failure(Scripts.appendFinal, finalKeys, finalArgs(1, epoch: 1))
        XCTAssertEqual(f.code, .finished)
        XCTAssertEqual(f.message, "FINISHED taken")
        XCTAssertEqual(try redis.cli("HGET", k.meta, "state"), "running", "nothing written")
    }

    func testAppendFinalRefusesASeqThatIsNotTheTopPlusOneAsOutOfOrder() throws {
        try createStream()
        try addDeltas(1...3)
        XCTAssertEqual(try failure(Scripts.appendFinal, finalKeys, finalArgs(6)).code, .outOfOrder(lastSeq: 3))
        XCTAssertEqual(try failure(Scripts.appendFinal, finalKeys, finalArgs(3)).code, .outOfOrder(lastSeq: 3))
    }

    // MARK: appendStatus

    var statusKeys: [String] { [k.events, k.meta, k.text, k.offsets] }

    func testAppendStatusFindsAGoneStream() throws {
        XCTAssertEqual(try reply(Scripts.appendStatus, statusKeys, ["0", "10", "0", "0"]), .gone)
    }

    func testAppendStatusReadsTheTailAfterTheAcknowledgedSeqAndTheStoredTextEnd() throws {
        try createStream()
        try addDeltas(1...4)
        try redis.cli("SET", k.text, "t1t2")
        try redis.cli("BITFIELD", k.offsets, "SET", "u32", "#1", "2", "SET", "u32", "#2", "4")
        XCTAssertEqual(try reply(Scripts.appendStatus, statusKeys, ["2", "1", "2", "0"]),
                       .tail(Scripts.AppendStatusTail(state: "running", topSeq: 4, entries: [delta(3)], textEnd: 4)))
        XCTAssertEqual(try reply(Scripts.appendStatus, statusKeys, ["2", "10", "0", "0"]),
                       .tail(Scripts.AppendStatusTail(state: "running", topSeq: 4, entries: [delta(3), delta(4)], textEnd: nil)),
                       "no text asked for")
    }

    func testAppendStatusReportsAShortTextKeyAndAStaleEpoch() throws {
        try createStream()
        try addDeltas(1...2)
        try redis.cli("SET", k.text, "t1")
        try redis.cli("BITFIELD", k.offsets, "SET", "u32", "#1", "2", "SET", "u32", "#2", "4")
        XCTAssertEqual(try reply(Scripts.appendStatus, statusKeys, ["2", "10", "2", "0"]),
                       .tail(Scripts.AppendStatusTail(state: "running", topSeq: 2, entries: [], textEnd: nil)),
                       "the text key is shorter than seq 2's end offset")
        XCTAssertEqual(try reply(Scripts.appendStatus, statusKeys, ["2", "10", "1", "0", "9"]),
                       .tail(Scripts.AppendStatusTail(state: "running", topSeq: 2, entries: [], textEnd: nil)),
                       "shorter than the stored length asked for")
        try redis.cli("HSET", k.meta, "epoch", "1")
        XCTAssertEqual(try reply(Scripts.appendStatus, statusKeys, ["2", "10", "0", "0"]),
                       .tail(Scripts.AppendStatusTail(state: AppendStop.takenState, topSeq: 2, entries: [], textEnd: nil)))
    }
}
