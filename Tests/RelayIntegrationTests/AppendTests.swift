import Foundation
import RelayCore
import RelayRedis
import RelayTestKit
import XCTest
import RelayEventStore

/// The per-event append as plain pipelined commands (no script; docs/DATA_MODEL.md
/// "Appends"), against a
/// real `redis-server`: the empty stream at creation, resends after lost replies and a
/// dropped connection (text stored once, every event once, each published once), the
/// fence after a lease expiry, and the catch-up still byte-exact.
final class AppendTests: RelayTestCase {
    /// Pieces that end inside words, emoji ZWJ sequences, Arabic with diacritics.
    static let pieces = ["Hel", "lo 👩‍👩‍👧", "‍👦 ", "مَرْ", "حَبًا", " e\u{301}", "té 🇸🇦", "\n\n", "end", "", " ✓"]

    private func newID() -> RequestID { try! RequestID(validating: "append" + UUID().uuidString.replacingOccurrences(of: "-", with: "")) }

    /// Creates `id` and an appender for it on the loop; returns the appender's outcome box.
    private func start(_ h: AppendHarness, _ id: RequestID, appender: LockedBox<StreamAppender?>) throws -> AppendOutcome {
        try startAppender(loop: h.loop, log: h.log, id, appender: appender)
    }

    /// A harness, a created stream and its appender.
    private func fixture(maxLen: Int = 200) throws
        -> (AppendHarness, RequestID, StreamKeys, LockedBox<StreamAppender?>, AppendOutcome) {
        let h = try appendHarness(maxLen: maxLen)
        let id = newID()
        let a = LockedBox<StreamAppender?>(nil)
        let o = try start(h, id, appender: a)
        return (h, id, StreamKeys(id), a, o)
    }

    private func append(_ h: AppendHarness, _ a: LockedBox<StreamAppender?>, _ events: [(UInt64, StreamEvent)]) {
        h.run {
            for (seq, e) in events { a.value!.append(seq: seq, event: e) }
        }
    }

    private func entrySeqs(_ k: StreamKeys) throws -> [UInt64] {
        try redis.cli("XRANGE", k.events, "-", "+").split(separator: "\n")
            .compactMap { l in l.hasSuffix("-0") ? EventLog.seq(ofEntryID: String(l)) : nil }
    }

    private func publishCalls() throws -> Int {
        let stats = try redis.cli("INFO", "commandstats")
        guard let line = stats.split(whereSeparator: \.isNewline).first(where: { $0.hasPrefix("cmdstat_publish:") }),
              let calls = line.split(separator: "=").dropFirst().first?.split(separator: ",").first else { return 0 }
        return Int(calls) ?? 0
    }

    /// The text between events `from` and `to` as `Scripts.catchUp` returns it (its reply's
    /// text element, the bytes between the two events' stored end offsets).
    private func catchUp(_ k: StreamKeys, _ from: Int, _ to: Int) throws -> String {
        let textOnly = "local function catchUp()\n\(Scripts.catchUp.text)\nend\nlocal r = catchUp()\nif not r then return '' end\nreturn r[4]"
        return try redis.cliRaw(["EVAL", textOnly, "2", k.text, k.offsets, String(from), String(to)])
    }

    func testCreationMakesAnEmptyStreamThatReadsAsEmpty() throws {
        let h = try appendHarness()
        let id = newID()
        let k = StreamKeys(id)
        _ = try start(h, id, appender: LockedBox(nil))
        XCTAssertEqual(try redis.cli("TYPE", k.events), "stream")
        XCTAssertEqual(try redis.cli("XLEN", k.events), "0")
        XCTAssertTrue(try redis.cli("XINFO", "STREAM", k.events).contains("0-1"), "last generated ID 0-1")
        XCTAssertGreaterThan(Int(try redis.cli("PTTL", k.events)) ?? -1, 0, "the empty stream has the TTL")
        XCTAssertEqual(try redis.cli("HGET", k.meta, "last_seq"), "", "no per-event last_seq")
        let info = LockedBox<StreamInfo?>(nil), events = LockedBox<[SequencedEvent]?>(nil)
        nonisolated(unsafe) let log = h.log
        h.run {
            log.open(id) { r in info.value = (try? r.get()) ?? nil }
            log.range(id, after: 0) { r in events.value = try? r.get() }
        }
        try eventually(5, "open and range to answer") { info.value != nil && events.value != nil }
        XCTAssertEqual(info.value?.lastSeq, 0)
        XCTAssertNil(info.value?.firstRetainedSeq)
        XCTAssertEqual(info.value?.state, .running)
        XCTAssertEqual(events.value?.count, 0)
    }

    func testTheCapStaysExactAndTheCatchUpByteExact() throws {
        let (h, _, k, a, o) = try fixture(maxLen: 3)
        let pieces = Self.pieces
        append(h, a, pieces.enumerated().map { (UInt64($0.offset + 1), .delta($0.element)) })
        try eventually(5, "every event acknowledged") { a.value?.ackedSeq == UInt64(pieces.count) }
        XCTAssertNil(o.failure.value)
        XCTAssertEqual(try redis.cli("XLEN", k.events), "3", "MAXLEN caps the stream exactly")
        XCTAssertEqual(try entrySeqs(k), Array(UInt64(pieces.count - 2)...UInt64(pieces.count)))
        for from in 0..<pieces.count {
            for to in from..<pieces.count {
                XCTAssertEqual(try catchUp(k, from, to), pieces[from..<to].joined(), "catch-up \(from)…\(to)")
            }
        }
    }

    /// `EventLog.writeText` stores the text and each end offset where the catch-up reads
    /// them (`BITFIELD … GET u32 #<seq>`), and whatever keys a write creates get the TTL,
    /// also at a start past 0 (keys evicted, deleted or lost mid-stream).
    func testTextWritesStoreWhatTheCatchUpReadsAndGiveTheKeysTheTTL() throws {
        let h = try appendHarness()
        nonisolated(unsafe) let log = h.log
        let results = LockedBox<[Bool]>([])
        func write(_ k: StreamKeys, _ w: TextCheckpoint.Write) throws {
            let n = results.value.count
            h.run { log.writeText(k, w) { r in results.mutate { $0.append((try? r.get()) != nil) } } }
            try eventually(5, "write \(n + 1) answered") { results.value.count == n + 1 }
            XCTAssertEqual(results.value.last, true)
        }
        let k = StreamKeys(newID())
        try write(k, TextCheckpoint.Write(start: 0, text: "héllo", offsets: [.init(seq: 1, end: 2), .init(seq: 2, end: 6),
                                                                           .init(seq: 5, end: 6), .init(seq: 6, end: 0x0102_0304)]))
        XCTAssertEqual(try redis.cli("GET", k.text), "héllo")
        let got = try redis.cli("BITFIELD", k.offsets, "GET", "u32", "#1", "GET", "u32", "#2", "GET", "u32", "#3",
                                "GET", "u32", "#5", "GET", "u32", "#6")
        XCTAssertEqual(got.split(separator: "\n"), ["2", "6", "0", "6", "16909060"])
        try write(k, TextCheckpoint.Write(start: 6, text: "!", offsets: [.init(seq: 7, end: 7)]))
        XCTAssertEqual(try redis.cli("GET", k.text), "héllo!")
        XCTAssertEqual(try redis.cli("BITFIELD", k.offsets, "GET", "u32", "#7"), "7")
        // Keys that are gone, written at a start past 0: such a write sets the TTL too (a
        // key written only past 0 would otherwise live forever).
        let lost = StreamKeys(newID())
        try write(lost, TextCheckpoint.Write(start: 6, text: "abc", offsets: [.init(seq: 3, end: 9)]))
        for key in [k.text, k.offsets, lost.text, lost.offsets] {
            XCTAssertGreaterThan(Int(try redis.cli("PTTL", key)) ?? -1, 0, "\(key) has the TTL")
        }
    }

    /// End offsets written as binary runs (`SETRANGE`, `OffsetRuns`) read back one by one
    /// as `GET u32 #<seq>` exactly as if each had been a `SET u32`: even and odd first
    /// seqs, a gap between writes, and bytes that are not UTF-8 (0x80 and up, CR, LF, NUL)
    /// up to 2³² − 1.
    func testOffsetRunsReadBackAsTheirOwnU32() throws {
        let h = try appendHarness()
        nonisolated(unsafe) let log = h.log
        let done = LockedBox(0)
        let k = StreamKeys(newID())
        let values: [UInt64: Int] = [2: 0x8000_0000, 3: 7, 4: 0xFFFF_FFFF, 5: 0xFFFF_FFFE, 6: 1, 7: 0x7FFF_FFFF,
                                     8: 0x0102_0304, 11: 0x8765_4321, 12: 0x0D0A_0D0A, 13: 0xC3_28_A0_A1, 14: 0]
        let first = [2, 3, 4, 5, 6, 7, 8].map { TextCheckpoint.Offset(seq: UInt64($0), word: UInt32(values[UInt64($0)]!)) }
        let second = [11, 12, 13, 14].map { TextCheckpoint.Offset(seq: UInt64($0), word: UInt32(values[UInt64($0)]!)) }
        XCTAssertEqual(OffsetRuns.runs(first).count, 1, "one SETRANGE per write of consecutive seqs")
        h.run {
            log.writeText(k, TextCheckpoint.Write(start: 0, text: "", offsets: first)) { _ in done.mutate { $0 += 1 } }
            log.writeText(k, TextCheckpoint.Write(start: 0, text: "", offsets: second)) { _ in done.mutate { $0 += 1 } }
        }
        try eventually(5, "both writes answered") { done.value == 2 }
        for seq: UInt64 in 1...15 {
            XCTAssertEqual(try redis.cli("BITFIELD", k.offsets, "GET", "u32", "#\(seq)"), String(values[seq] ?? 0), "seq \(seq)")
        }
    }

    /// Through the appender: the text keys vanish mid-stream and the next group's write
    /// re-creates them; if the generation then stops without a TTL refresh or a final
    /// event (its process killed), they still expire.
    func testTextKeysLostMidStreamExpireEvenIfTheGenerationDies() throws {
        let (h, _, k, a, o) = try fixture()
        append(h, a, (1...50).map { (UInt64($0), .delta("t\($0)")) })
        try eventually(5, "1…50 and their text stored") { a.value?.ackedSeq == 50 && a.value?.textStoredThrough == 50 }
        try redis.cli("DEL", k.text, k.offsets)
        append(h, a, (51...75).map { (UInt64($0), .delta("t\($0)")) })
        try eventually(5, "51…75 and their text stored") { a.value?.ackedSeq == 75 && a.value?.textStoredThrough == 75 }
        h.run { a.value = nil }   // the process dies: no refresh, no final event
        XCTAssertNil(o.failure.value)
        for key in [k.meta, k.text, k.offsets] {
            XCTAssertGreaterThan(Int(try redis.cli("PTTL", key)) ?? -1, 0, "\(key) expires with the stream")
        }
    }

    func testAppendsAfterTheStreamVanishedFailWithoutRecreatingIt() throws {
        let (h, _, k, a, o) = try fixture()
        try redis.cli("DEL", k.events, k.meta)
        append(h, a, [(1, .delta("lost")), (2, .delta(" too"))])
        try eventually(5, "the appender to report the gone stream") { o.failure.value != nil }
        XCTAssertEqual(o.failure.value, .streamGone)
        try eventually(5, "no key of the stream to be left") {
            try redis.cli("EXISTS", k.events, k.meta, k.text, k.offsets) == "0"
        }
        XCTAssertEqual(try publishCalls(), 0, "nothing unstored is published")
    }

    func testResendsAfterLostRepliesAndADroppedConnectionStoreEverythingOnce() throws {
        let (h, _, k, a, o) = try fixture()
        let pieces = Self.pieces
        // 1. Replies lost from the 4th XADD on, the commands applied (a connection that
        //    dropped after Redis ran them).
        let ch = h.channel
        h.run { ch.loseReplies(afterXADDs: 4) }
        append(h, a, pieces.enumerated().map { (UInt64($0.offset + 1), .delta($0.element)) })
        try eventually(10, "the first \(pieces.count) events to be acknowledged") { o.drained.value >= 1 && a.value?.ackedSeq == UInt64(pieces.count) }
        XCTAssertGreaterThan(h.channel.lostReplies, 0, "replies were lost")
        // 2. A dropped connection with commands not applied: writes paused, the
        //    connection killed with its commands still queued.
        try redis.cli("CLIENT", "PAUSE", "10000", "WRITE")
        let more = ["more ", "text ", "after ", "the drop"]
        let base = UInt64(pieces.count)
        append(h, a, more.enumerated().map { (base + UInt64($0.offset + 1), .delta($0.element)) })
        try eventually(5, "the paused append to be queued in Redis") {
            try redis.cli("CLIENT", "LIST").contains("cmd=xadd") || redis.cli("CLIENT", "LIST").contains("cmd=setrange")
                || redis.cli("CLIENT", "LIST").contains("cmd=bitfield")
        }
        try redis.cli("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
        try redis.cli("CLIENT", "UNPAUSE")
        let last = base + UInt64(more.count) + 1
        append(h, a, [(last, .done(finishReason: "stop", usage: Usage(promptTokens: 3, completionTokens: 3)))])
        try eventually(10, "every event to be acknowledged after the reconnection") { a.value?.ackedSeq == last }
        XCTAssertNil(o.failure.value)
        let all = pieces + more
        XCTAssertEqual(try entrySeqs(k), Array(1...last), "every event stored once, in order")
        XCTAssertEqual(try redis.cliRaw(["GET", k.text]), all.joined(), "the text is stored once: positional writes")
        XCTAssertEqual(try publishCalls(), Int(last), "each event published once, after it was stored")
        XCTAssertEqual(try redis.cli("HMGET", k.meta, "state", "last_seq"), "done\n\(last)")
        for from in [0, 1, 3, 5, 10, 12, all.count - 1] {
            for to in [from, from + 1, all.count - 2, all.count] where to >= from && to < all.count {
                XCTAssertEqual(try catchUp(k, from, to), all[from..<to].joined(), "catch-up \(from)…\(to)")
            }
        }
        XCTAssertTrue(try redis.cli("XINFO", "STREAM", k.events).contains("18446744073709551615-18446744073709551615"),
                      "the final event fences the stream")
        for key in [k.events, k.meta, k.text, k.offsets] {
            XCTAssertGreaterThan(Int(try redis.cli("PTTL", key)) ?? -1, 0, "\(key) has a TTL")
        }
    }

    /// The drain is reported once the last event's publish is answered (a draining
    /// relay may exit right after its generations ended) — and not at all when more
    /// events were queued meanwhile: the owner drops its appender on a drain after the
    /// final event, and a drain reported early lost that final event (seen in
    /// `ScaleOutTests`: `upstream_lost` after the whole answer).
    func testADrainIsReportedOnlyWithNothingQueued() throws {
        let (h, _, _, a, o) = try fixture()
        let backlogAtDrain = LockedBox<[Int]>([])
        let ch = h.channel
        h.run {
            a.value!.onDrained = { backlogAtDrain.mutate { $0.append(a.value!.backlog) } }
            // Seq 1's XADD reply drains the queue (its publish is on the way); before
            // that publish is answered, the last delta and the final event are queued.
            ch.afterNextXADDReply = {
                a.value!.append(seq: 2, event: .delta(" b"))
                a.value!.append(seq: 3, event: .done(finishReason: "length", usage: Usage(promptTokens: 1, completionTokens: 2)))
            }
            a.value!.append(seq: 1, event: .delta("a"))
        }
        try eventually(5, "the final event acknowledged") { a.value?.ackedSeq == 3 && !backlogAtDrain.value.isEmpty }
        XCTAssertNil(o.failure.value)
        XCTAssertEqual(backlogAtDrain.value, [0], "drained once, with nothing queued")
        XCTAssertEqual(try publishCalls(), 3)
    }

    func testALeaseExpiryFencesTheLapsedOwner() throws {
        let (h, id, k, a, o) = try fixture()
        append(h, a, [(1, .delta("one ")), (2, .delta("two ")), (3, .delta("three"))])
        try eventually(5, "3 events acknowledged") { a.value?.ackedSeq == 3 }
        // The owner stalls past its lease: another instance ends the stream.
        let expiry = try expireLease(id, k, on: h)
        XCTAssertEqual(expiry, 4, "upstream_lost at top + 1")
        // The stalled owner wakes up and goes on appending.
        append(h, a, [(4, .delta(" four")), (5, .delta(" five")), (6, .done(finishReason: "stop", usage: Usage(promptTokens: 3, completionTokens: 3)))])
        try eventually(5, "the old owner to learn it was fenced") { o.failure.value != nil }
        XCTAssertEqual(o.failure.value, .foreignEntry(seq: 4), "the lease expiry's upstream_lost holds seq 4")
        XCTAssertEqual(try entrySeqs(k), [1, 2, 3, 4], "nothing follows the terminal event")
        XCTAssertTrue(try redis.cli("XRANGE", k.events, "4-0", "4-0").contains("upstream_lost"))
        XCTAssertEqual(try redis.cli("HMGET", k.meta, "state", "last_seq"), "failed\n4")
        XCTAssertEqual(try publishCalls(), 4, "the old owner published only its stored events (3) + upstream_lost")
        // The text of 1…3 was still buffered (TextCheckpoint): their entries are retained
        // and a catch-up never reads it; the refused events' text was never written.
        XCTAssertFalse(try redis.cli("GET", k.text).contains("four"), "no text of a refused event")
        XCTAssertEqual(o.drained.value, 1, "drained once (after 3), never after the fence")
    }

    /// Event `i`'s text (1-based): varied lengths, multi-byte characters.
    private static func piece(_ i: Int) -> String { pieces[i % pieces.count] + String(repeating: "x", count: i % 7) }

    func testTheTextIsWrittenPerGroupAndAlwaysCoversWhatTheTrimRemoved() throws {
        let (h, _, k, a, o) = try fixture()
        let before = try commandCalls("setrange")
        var seq = 0
        while seq < 1_000 {
            let n = 37
            append(h, a, (seq + 1...seq + n).map { (UInt64($0), .delta(Self.piece($0))) })
            seq += n
            try eventually(5, "events through \(seq) acknowledged") { a.value?.ackedSeq == UInt64(seq) }
            let seqs = try entrySeqs(k)
            XCTAssertLessThanOrEqual(seqs.count, 200, "never above the cap")
            if seq >= 200 { XCTAssertGreaterThanOrEqual(seqs.count, 193, "at least the cap minus the trim step") }
            let first = Int(seqs.first ?? 1)
            // Everything older than the oldest retained entry is readable as text.
            XCTAssertEqual(try catchUp(k, 0, first - 1), (1..<first).map(Self.piece).joined(), "through \(seq)")
        }
        let writes = try commandCalls("setrange") - before
        XCTAssertLessThanOrEqual(writes, 2 * (1_000 / 25 + 27), "two SETRANGEs (text, offsets) per group of 25 events (or per append round), not per event: \(writes)")
        append(h, a, [(UInt64(seq + 1), .done(finishReason: "stop", usage: Usage(promptTokens: 1, completionTokens: seq)))])
        try eventually(5, "the final event acknowledged") { o.drained.value > 0 && a.value?.ackedSeq == UInt64(seq + 1) }
        XCTAssertEqual(try catchUp(k, 0, seq), (1...seq).map(Self.piece).joined(), "the final event wrote the rest")
        XCTAssertEqual(try catchUp(k, 500, seq), (501...seq).map(Self.piece).joined())
        XCTAssertNil(o.failure.value)
    }

    func testEventsWaitForAFailingTextWriteInsteadOfOutrunningIt() throws {
        let (h, _, k, a, o) = try fixture()
        // The offsets key of the wrong type: every text write fails (-WRONGTYPE).
        try redis.cli("RPUSH", k.offsets, "not a bitfield")
        append(h, a, (1...300).map { (UInt64($0), .delta(Self.piece($0))) })
        try eventually(5, "the first 100 events acknowledged") { a.value?.ackedSeq == 100 }
        let stalled = try commandCalls("bitfield")
        XCTAssertEqual(a.value?.ackedSeq, 100, "no event more than 100 above the stored text is sent")
        XCTAssertEqual(try entrySeqs(k).first, 1, "nothing whose text is not stored was trimmed")
        XCTAssertNil(o.failure.value)
        try redis.cli("DEL", k.offsets)
        try eventually(10, "every event acknowledged once the write succeeds") { a.value?.ackedSeq == 300 }
        let first = Int(try entrySeqs(k).first ?? 1)
        XCTAssertGreaterThan(first, 100)
        XCTAssertEqual(try catchUp(k, 0, first - 1), (1..<first).map(Self.piece).joined(), "the text resent at its offsets")
        XCTAssertLessThan(try commandCalls("bitfield") - stalled, 200, "failed writes are retried with a pause")
        XCTAssertNil(o.failure.value)
    }

    /// Whatever a catch-up can be asked for now is byte-exact: for each `Last-Event-ID`
    /// below the oldest retained entry, the text of the events up to that entry.
    private func assertEveryCatchUpExact(_ k: StreamKeys, _ text: (Int) -> String, _ context: String,
                                         file: StaticString = #filePath, line: UInt = #line) throws {
        let first = Int(try entrySeqs(k).first ?? 1)
        for from in 0..<max(0, first - 1) {
            let want = (from + 1..<first).map(text).joined()
            let got = try catchUp(k, from, first - 1)
            guard got != want else { continue }
            // The first wrong position only (each is a long text).
            return XCTFail("\(context): catch-up \(from)…\(first - 1) returned \(got.utf8.count) bytes, "
                           + "\(got.utf8.filter { $0 == 0 }.count) of them NUL, instead of \(want.utf8.count)", file: file, line: line)
        }
    }

    /// `RELAY_BUFFER_EVENTS=1`: a lease expiry appends its terminal entry with `MAXLEN 1`,
    /// trimming the owner's last event: its text must already be stored, even when the
    /// owner's text write for it failed (the owner then stalled past its lease).
    func testALeaseExpiryAtCapOneTrimsOnlyStoredText() throws {
        let (h, id, k, a, _) = try fixture(maxLen: 1)
        append(h, a, (1...3).map { (UInt64($0), .delta(Self.piece($0))) })
        try eventually(5, "events 1…3 and their text stored") {
            try a.value?.ackedSeq == 3 && catchUp(k, 0, 3) == (1...3).map(Self.piece).joined()
        }
        let ch = h.channel
        h.run { ch.refused = ["SETRANGE", "BITFIELD"] }
        append(h, a, [(4, .delta(Self.piece(4))), (5, .delta(Self.piece(5)))])
        // The refused text write was retried after the tail verification: the appender
        // has sent whatever it sends without it.
        try eventually(5, "the text write to be refused twice") { h.channel.refusedCount.value >= 4 }
        // The owner stalls past its lease: another instance ends the stream.
        let expiry = try expireLease(id, k, on: h)
        XCTAssertGreaterThan(expiry, 3)
        XCTAssertEqual(try redis.cli("XLEN", k.events), "1")
        try assertEveryCatchUpExact(k, Self.piece, "after the expiry")
    }

    /// A lease expiry run by a relay with a smaller `RELAY_BUFFER_EVENTS` than the owner's
    /// (a rolling configuration change) must not trim the owner's events whose text is
    /// still buffered: the owner's hold rule (`TextCheckpoint.holdAfter`) follows the
    /// owner's cap.
    func testALeaseExpiryByARelayWithASmallerCapTrimsOnlyStoredText() throws {
        let (h, id, k, a, _) = try fixture()
        append(h, a, (1...100).map { (UInt64($0), .delta(Self.piece($0))) })
        try eventually(5, "100 events and their text stored") { a.value?.ackedSeq == 100 && a.value?.textStoredThrough == 100 }
        append(h, a, (101...110).map { (UInt64($0), .delta(Self.piece($0))) })
        try eventually(5, "10 more acknowledged, their text buffered") { a.value?.ackedSeq == 110 }
        XCTAssertEqual(a.value?.textStoredThrough, 100)
        let expiry = try expireLease(id, k, on: try appendHarness(maxLen: 10))
        XCTAssertEqual(expiry, 111)
        try assertEveryCatchUpExact(k, Self.piece, "after an expiry with cap 10")
        XCTAssertEqual(try redis.cli("XLEN", k.events), "111", "trimmed with the owner's cap (200)")
    }

    /// Events 1…125 stored with their text, then the failover of the two tests below: the
    /// new primary holds every entry but the text only through 100.
    private func storeThrough125ThenLoseTheTextAfter100(_ h: AppendHarness, _ a: LockedBox<StreamAppender?>,
                                                        _ k: StreamKeys, _ text: (Int) -> String) throws {
        append(h, a, (1...100).map { (UInt64($0), .delta(text($0))) })
        try eventually(5, "events 1…100 and their text stored") { a.value?.ackedSeq == 100 && a.value?.textStoredThrough == 100 }
        append(h, a, (101...125).map { (UInt64($0), .delta(text($0))) })
        try eventually(5, "events 101…125 and their text stored") { a.value?.ackedSeq == 125 && a.value?.textStoredThrough == 125 }
        let end100 = (1...100).map(text).joined().utf8.count
        _ = try redis.cliRaw(["EVAL", """
            redis.call('SET', KEYS[1], redis.call('GETRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1), 'KEEPTTL')
            for i = 101, 125 do redis.call('BITFIELD', KEYS[2], 'SET', 'u32', '#' .. i, 0) end
            return 1
            """, "2", k.text, k.offsets, String(end100)])
    }

    /// Redis acknowledged a text write and then lost it while keeping every acknowledged
    /// `XADD` (a failover to a replica that had not received it, or a restart from an
    /// AOF/RDB written just before it: both keep the order of the commands, and the
    /// `XADD`s of the events it covers went out before it). Before the change to one text
    /// write per 25 events each event's text preceded its `XADD`, so the tail check
    /// caught it; now the appender must check the stored text as well, and must not go on
    /// trimming events whose text is gone: the catch-up would return NUL bytes.
    func testATextWriteLostByAFailoverIsNotPapered() throws {
        let (h, _, k, a, o) = try fixture()
        let text = { (i: Int) in Self.piece(i) }
        try storeThrough125ThenLoseTheTextAfter100(h, a, k, text)
        XCTAssertEqual(try catchUp(k, 0, 100), (1...100).map(text).joined())
        let before = h.connections.value
        try redis.cli("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
        try eventually(5, "the appender to reconnect") { h.connections.value > before }
        append(h, a, (126...400).map { (UInt64($0), .delta(text($0))) }
               + [(401, .done(finishReason: "stop", usage: Usage(promptTokens: 1, completionTokens: 400)))])
        try eventually(10, "the stream to end or fail") { o.failure.value != nil || a.value?.ackedSeq == 401 }
        try assertEveryCatchUpExact(k, text, "after the failover")
        guard case .textWentBack? = o.failure.value else { return XCTFail("the lost text ends the stream: \(String(describing: o.failure.value))") }
    }

    /// The failover of `testATextWriteLostByAFailoverIsNotPapered`, but the first tail read
    /// after the reconnection fails (an error reply: the appender reads again
    /// `verifyDelayMs` later). Until the tail is verified the appender must not write text
    /// either: a `SETRANGE` past the shortened `text` key zero-pads the lost bytes, and a
    /// text write confirmed before the tail read moves the checked offset onto text
    /// written after the loss, so the check passes and the catch-up returns NUL bytes.
    /// (With hiredis' libevent adapter the first tail read is only sent after the text
    /// write went out, so its reply cannot be in yet; anything that delays the read, or a
    /// write path that flushes sooner, let the text reply win.)
    func testATextWriteLostByAFailoverIsNotPaperedWhenTheFirstTailReadFails() throws {
        let (h, _, k, a, o) = try fixture()
        let text = { (i: Int) in Self.piece(i) }
        try storeThrough125ThenLoseTheTextAfter100(h, a, k, text)
        let before = h.connections.value
        try redis.cli("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
        try eventually(5, "the appender to reconnect") { h.connections.value > before }
        // The tail read (`EVALSHA`, or `EVAL`) fails until the test lets it through.
        let ch = h.channel
        h.run { ch.refused = ["EVALSHA", "EVAL"] }
        append(h, a, (126...400).map { (UInt64($0), .delta(text($0))) }
               + [(401, .done(finishReason: "stop", usage: Usage(promptTokens: 1, completionTokens: 400)))])
        try eventually(5, "the first tail read to fail") { h.channel.refusedCount.value >= 1 }
        h.run { ch.refused = [] }
        try eventually(10, "the stream to end or fail") { o.failure.value != nil || a.value?.ackedSeq == 401 }
        try assertEveryCatchUpExact(k, text, "after the failover")
        guard case .textWentBack? = o.failure.value else { return XCTFail("the lost text ends the stream: \(String(describing: o.failure.value))") }
    }

    /// The owner stalled past its lease: the lease lapses and the instance of `h` ends
    /// the stream (`EventLog.expireLease`, `upstream_lost`). Returns the seq it appended
    /// (0: nothing done, -1: no stream, -99: a failure).
    private func expireLease(_ id: RequestID, _ k: StreamKeys, on h: AppendHarness) throws -> Int64 {
        try redis.cli("DEL", k.lease)
        let lost = APIError(.upstreamLost, "the relay instance generating this answer stopped; retry the request").asEvent
        let expiry = LockedBox<Int64?>(nil)
        nonisolated(unsafe) let log = h.log
        h.run {
            log.expireLease(id, event: lost) { r in
                switch (try? r.get())?.expiry {
                case .ended(let seq)?: expiry.value = Int64(seq)
                case .ownerAlive?: expiry.value = 0
                case .vanished?: expiry.value = -1
                case nil: expiry.value = -99
                }
            }
        }
        try eventually(5, "the lease expiry") { expiry.value != nil }
        return expiry.value ?? -99
    }

    private func commandCalls(_ name: String) throws -> Int {
        let stats = try redis.cli("INFO", "commandstats")
        guard let line = stats.split(whereSeparator: \.isNewline).first(where: { $0.hasPrefix("cmdstat_\(name):") }),
              let calls = line.split(separator: "=").dropFirst().first?.split(separator: ",").first else { return 0 }
        return Int(calls) ?? 0
    }
}
