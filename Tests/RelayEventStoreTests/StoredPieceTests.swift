import RelayCore
import XCTest
@testable import RelayEventStore

/// One codec for text and parts (docs/DATA_MODEL.md §4, §14): a part's JSON is stored as
/// its event's piece, marked in the offsets' top bit and in a retained answer's lengths
/// (`RA2`), and every reader — the lossless catch-up, the retained answer, a takeover —
/// gives back the same events: deltas with their text, parts as they were sent.
final class StoredPieceTests: XCTestCase {
    private let done = "{\"type\":\"done\",\"finish_reason\":\"stop\",\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":4,\"total_tokens\":7}}"

    /// Reasoning, a tool call whose arguments come in pieces, a source, data and text.
    private let answer: [StreamEvent] = [
        .part(.reasoning("Think")), .part(.reasoning(" first")),
        .part(.toolCallStart(id: "call_1", name: "get_weather")),
        .part(.toolCallDelta(id: "call_1", arguments: "{\"city\":")), .part(.toolCallDelta(id: "call_1", arguments: "\"الرياض\"}")),
        .part(.toolCallEnd(id: "call_1", name: "get_weather", input: try! LenientJSON.parse(#"{"city":"الرياض"}"#))),
        .delta("It is "), .delta("سبت 🙂"), .delta(""),
        .part(.source(id: "s1", url: "https://example.com/w", title: "W \"q\"\n")),
        .part(.data(name: "card", id: nil, value: .array([.number("1"), .null]))),
        .delta("\n\nDone."),
    ]

    func testThePieceOfAPartIsItsJSONMarkedAndOfADeltaItsText() {
        let d = StreamEvent.delta("héllo")
        XCTAssertEqual(StoredPiece(d, json: d.json), StoredPiece(bytes: "héllo", isPart: false))
        let p = StreamEvent.part(.reasoning("x"))
        XCTAssertEqual(StoredPiece(p, json: p.json), StoredPiece(bytes: p.json, isPart: true))
        let end = StreamEvent.done(finishReason: "stop", usage: Usage(promptTokens: 1, completionTokens: 1))
        XCTAssertEqual(StoredPiece(end, json: end.json), StoredPiece(bytes: "", isPart: false))
        XCTAssertEqual(StoredPiece.word(end: 5, isPart: true), 0x8000_0005)
        XCTAssertEqual(StoredPiece.word(end: 0x7FFF_FFFF, isPart: false), 0x7FFF_FFFF)
        XCTAssertTrue(StoredPiece.end(ofWord: 0x8000_0005) == (5, true))
        XCTAssertTrue(StoredPiece.end(ofWord: 7) == (7, false))
    }

    /// A marked piece must be one line of part JSON; a delta piece whole characters.
    func testAStoredPieceThatIsNotAnEventReadsAsDamage() {
        let ok = Array(StreamEvent.part(.reasoning("x")).json.utf8)
        XCTAssertNotNil(StoredPiece.event(seq: 1, bytes: ok[...], isPart: true))
        XCTAssertNil(StoredPiece.event(seq: 1, bytes: Array("plain text".utf8)[...], isPart: true), "text marked as a part")
        XCTAssertNil(StoredPiece.event(seq: 1, bytes: Array(#"{"type":"delta","content":"x"}"#.utf8)[...], isPart: true), "a delta marked as a part")
        XCTAssertNil(StoredPiece.event(seq: 1, bytes: Array("{\"type\":\"reasoning\",\n\"content\":\"x\"}".utf8)[...], isPart: true), "two lines")
        XCTAssertNil(StoredPiece.event(seq: 1, bytes: Array("é".utf8).prefix(1), isPart: false), "half a character")
        XCTAssertEqual(StoredPiece.event(seq: 4, bytes: ok[...], isPart: false)?.json, StreamEvent.delta(String(decoding: ok, as: UTF8.self)).json,
                       "unmarked, a part's JSON is a delta's text")
    }

    /// The text key and offsets a writer stores for an answer (`TextCheckpoint`, `OffsetRuns`).
    private func stored(_ events: [StreamEvent]) -> (text: [UInt8], offsets: [UInt8]) {
        var c = TextCheckpoint(trim: StreamTrim(maxLen: 200))
        for (i, e) in events.enumerated() { c.add(seq: UInt64(i + 1), piece: StoredPiece(e, json: e.json)) }
        let w = c.take()!
        var offsets = [UInt8](repeating: 0, count: 4)   // seq 0
        for r in OffsetRuns.runs(w.offsets) {
            if offsets.count < r.byteOffset + r.bytes.count { offsets += [UInt8](repeating: 0, count: r.byteOffset + r.bytes.count - offsets.count) }
            offsets.replaceSubrange(r.byteOffset..<(r.byteOffset + r.bytes.count), with: r.bytes)
        }
        return (w.text, offsets)
    }

    func testACatchUpFromEveryCutGivesBackThePartsAndTheDeltasAsSent() throws {
        let (text, offsets) = stored(answer)
        func end(_ seq: Int) -> Int { seq == 0 ? 0 : StoredPiece.end(ofWord: offsets[(4 * seq)..<(4 * seq + 4)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }).end }
        for from in 0..<answer.count {
            for to in (from + 1)...answer.count {
                let got = try XCTUnwrap(CatchUpEvents.events(from: UInt64(from), to: UInt64(to), start: end(from),
                                                             ends: offsets[(4 * (from + 1))..<(4 * (to + 1))], text: text[end(from)..<end(to)]),
                                        "\(from)…\(to)")
                XCTAssertEqual(got, (from..<to).map { SequencedEvent(seq: UInt64($0 + 1), json: answer[$0].json) }, "\(from)…\(to)")
            }
        }
    }

    func testARetainedAnswerWithPartsIsRA2AndGivesBackEveryEventAfterAnyCut() throws {
        var b = RetentionBuffer(maxBytes: 1 << 20)
        for e in answer { b.add(StoredPiece(e, json: e.json)) }
        let a = RetainedAnswer(owner: "alice", sid: "s", finalSeq: UInt64(answer.count + 1), createdMs: 1, finishedMs: 2,
                               text: b.text, pieces: b.pieces, doneJSON: done)
        let bytes = a.encoded()
        XCTAssertEqual(Array(bytes.prefix(4)), Array("RA2\n".utf8))
        let back = try RetainedAnswer(decoding: bytes)
        XCTAssertEqual(back, a)
        for k in 0...answer.count {
            let want = (k..<answer.count).map { SequencedEvent(seq: UInt64($0 + 1), json: answer[$0].json) }
                + [SequencedEvent(seq: UInt64(answer.count + 1), json: done)]
            XCTAssertEqual(back.events(after: UInt64(k)), want, "after \(k)")
        }
        XCTAssertEqual(back.answerText, "It is سبت 🙂\n\nDone.")
        XCTAssertEqual(back.partJSONs, answer.compactMap { if case .part = $0 { return $0.json } else { return nil } })
        // Text alone stays RA1, as every relay version reads it.
        var t = RetentionBuffer(maxBytes: 1 << 20)
        t.add(delta: "only text")
        let plain = RetainedAnswer(owner: "a", sid: "s", finalSeq: 2, createdMs: 1, finishedMs: 2, text: t.text, pieces: t.pieces, doneJSON: done)
        XCTAssertEqual(Array(plain.encoded().prefix(4)), Array("RA1\n".utf8))
    }

    /// An RA2 record whose marked piece is not part JSON, or an RA1 record read as if its
    /// lengths were marked, is refused.
    func testADamagedRA2RecordIsRefused() throws {
        var b = RetentionBuffer(maxBytes: 1 << 20)
        b.add(StoredPiece(bytes: "not json", isPart: true))
        let a = RetainedAnswer(owner: "a", sid: "s", finalSeq: 2, createdMs: 1, finishedMs: 2, text: b.text, pieces: b.pieces, doneJSON: done)
        XCTAssertThrowsError(try RetainedAnswer(decoding: a.encoded()))
        var t = RetentionBuffer(maxBytes: 1 << 20)
        t.add(delta: "abcd")
        var ra1 = RetainedAnswer(owner: "a", sid: "s", finalSeq: 2, createdMs: 1, finishedMs: 2, text: t.text, pieces: t.pieces, doneJSON: done).encoded()
        ra1.replaceSubrange(0..<4, with: Array("RA2\n".utf8))
        XCTAssertThrowsError(try RetainedAnswer(decoding: ra1), "length 4 read as 2 bytes, not a part: does not add up")
    }

    /// The cap counts the record as it will be encoded: a part switches every length to RA2.
    func testTheRetentionCapCountsTheRecordAsItWillBeEncoded() {
        var b = RetentionBuffer(maxBytes: 1 << 20)
        for _ in 0..<30 { b.add(delta: String(repeating: "x", count: 100)) }   // 100 < 128: 1 LEB128 byte each in RA1
        XCTAssertEqual(b.bodyBytes, RetainedAnswer.bodyBytes(textBytes: 3000, lengthBytes: 30))
        let p = StreamEvent.part(.reasoning("r"))
        b.add(StoredPiece(p, json: p.json))   // 200 ≥ 128: 2 bytes each in RA2
        XCTAssertEqual(b.bodyBytes, RetainedAnswer.bodyBytes(textBytes: 3000 + p.json.utf8.count, lengthBytes: 60 + 1))
        var small = RetentionBuffer(maxBytes: 40)
        small.add(StoredPiece(p, json: p.json))
        small.add(StoredPiece(bytes: String(repeating: "y", count: 30), isPart: false))
        XCTAssertTrue(small.isOverCap)
        XCTAssertEqual(small.pieces, [])
    }

    /// A takeover rebuilds every event before the retained entries from the text key's
    /// pieces and the offsets' marks, then the retained ones: the answer so far, typed.
    func testATakeoverRebuildsThePartsAndTheTextSoFar() throws {
        let (text, offsets) = stored(answer)
        func end(_ seq: Int) -> Int { StoredPiece.end(ofWord: offsets[(4 * seq)..<(4 * seq + 4)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }).end }
        for firstRetained in 1...answer.count {
            let entries = (firstRetained...answer.count).map { SequencedEvent(seq: UInt64($0), json: answer[$0 - 1].json) }
            let prefix = String(decoding: text[0..<(firstRetained > 1 ? end(firstRetained - 1) : 0)], as: UTF8.self)
            let t = Scripts.TakeoverTaken(epoch: 1, topSeq: UInt64(answer.count), request: "{}", prefix: prefix, entries: entries,
                                          continuations: 1, owner: "o", sid: "s", priorPrompt: 0, offsets: offsets, wholeText: [],
                                          atRest: "plain")
            let taken = try EventLog.taken(t, keys: StreamKeys(try RequestID(validating: "t1234567890abcdef")), mode: .plain, cipher: nil).get()
            XCTAssertEqual(taken.events, answer, "oldest retained \(firstRetained)")
            XCTAssertEqual(taken.text, "It is سبت 🙂\n\nDone.")
            XCTAssertEqual(taken.tokens, 2 + 2 + 4, "reasoning, argument pieces and deltas")
            XCTAssertEqual(taken.pieceBytes, text)
            XCTAssertEqual(taken.pieces.map { $0.isPart }, answer.map { if case .part = $0 { return true } else { return false } })
        }
    }
}
