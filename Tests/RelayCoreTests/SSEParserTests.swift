import Foundation
import XCTest
@testable import RelayCore
import RelayHTTP

/// Vectors for `SSEParser`, written from WHATWG HTML §9.2.5 "Parsing an event stream" and
/// §9.2.6 "Interpreting an event stream". Every vector goes through `assertParses`, which feeds
/// it whole, split in two at every byte boundary, byte by byte and (short vectors) split in three
/// at every pair of boundaries, and requires the same items, `lastEventId` and `retry` each time.
final class SSEParserTests: XCTestCase {
    typealias Item = SSEParser.Item

    private func ev(_ data: String, type: String = "message", id: String = "") -> Item {
        .event(SSEMessage(type: type, data: data, lastEventId: id))
    }

    private struct Outcome: Equatable, CustomStringConvertible {
        var items: [Item]
        var lastEventId: String
        var retry: Int?
        var description: String { "items=\(items) lastEventId=\(lastEventId.debugDescription) retry=\(String(describing: retry))" }
    }

    /// Feeds `chunks` in order, then `finish()`; `finish()` must return nothing.
    private func run(_ chunks: [ArraySlice<UInt8>], maxLineBytes: Int = 1 << 20) throws -> Outcome {
        var p = SSEParser(maxLineBytes: maxLineBytes)
        var items: [Item] = []
        for c in chunks { items += try p.feed(Array(c)) }
        let tail = p.finish()
        XCTAssertEqual(tail, [], "finish() dispatches nothing per §9.2.5")
        return Outcome(items: items, lastEventId: p.lastEventId, retry: p.retry)
    }

    private func assertParses(_ text: String, _ expected: [Item], lastEventId: String = "", retry: Int? = nil,
                              file: StaticString = #filePath, line: UInt = #line) {
        assertParses(Array(text.utf8), expected, lastEventId: lastEventId, retry: retry, file: file, line: line)
    }

    private func assertParses(_ bytes: [UInt8], _ expected: [Item], lastEventId: String = "", retry: Int? = nil,
                              file: StaticString = #filePath, line: UInt = #line) {
        let want = Outcome(items: expected, lastEventId: lastEventId, retry: retry)
        let all = bytes[...]
        var plans: [(String, [ArraySlice<UInt8>])] = [("whole", [all])]
        for k in 0...bytes.count {
            plans.append(("split at \(k)", [all[..<k], all[k...]]))
        }
        plans.append(("byte by byte", bytes.indices.map { all[$0..<$0 + 1] }))
        if bytes.count <= 48 {
            for a in 0...bytes.count {
                for b in a...bytes.count {
                    plans.append(("split at \(a),\(b)", [all[..<a], all[a..<b], all[b...]]))
                }
            }
        }
        for (name, chunks) in plans {
            do {
                let got = try run(chunks)
                if got != want {
                    XCTFail("\(name): got \(got), want \(want)", file: file, line: line)
                    return  // one report per vector is enough
                }
            } catch {
                XCTFail("\(name): threw \(error)", file: file, line: line)
                return
            }
        }
        // The other entry points agree with [UInt8].
        do {
            var p1 = SSEParser(), p2 = SSEParser()
            let viaData = try p1.feed(Data(bytes))
            let viaRaw = try bytes.withUnsafeBytes { try p2.feed($0) }
            XCTAssertEqual(viaData, expected, "feed(Data)", file: file, line: line)
            XCTAssertEqual(viaRaw, expected, "feed(UnsafeRawBufferPointer)", file: file, line: line)
            if let s = String(validating: bytes, as: UTF8.self) {
                var p3 = SSEParser()
                XCTAssertEqual(try p3.feed(s), expected, "feed(String)", file: file, line: line)
            }
        } catch {
            XCTFail("threw \(error)", file: file, line: line)
        }
    }

    // MARK: - The spec's own examples (§9.2.6)

    /// §9.2.6: "The following stream contains four blocks…": a comment block fires nothing,
    /// `id: 1` sets the ID carried by the first event, a bare `id` resets it, and only the
    /// first space after the colon is dropped.
    func testSpecExampleFourBlocks() {
        let stream = ": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n\n"
        assertParses(stream, [
            .comment("test stream"),
            ev("first event", id: "1"),
            ev("second event", id: ""),
            ev(" third event", id: ""),
        ])
    }

    /// Same stream without the final blank line: "the end of the stream is not enough to trigger
    /// the dispatch of the last event".
    func testSpecExampleLastBlockNeedsBlankLine() {
        assertParses("data: first event\nid: 1\n\ndata:  third event\n", [ev("first event", id: "1")], lastEventId: "1")
    }

    /// §9.2.6: "data\n\ndata\ndata\n\ndata:" fires two events, "" and "\n"; the last block is
    /// discarded because no blank line follows it.
    func testSpecExampleBareDataLines() {
        assertParses("data\n\ndata\ndata\n\ndata:", [ev(""), ev("\n")])
    }

    /// §9.2.6: "data:test\n\ndata: test\n\n" fires two identical events (the space after the
    /// colon is ignored if present).
    func testSpecExampleSpaceAfterColonOptional() {
        assertParses("data:test\n\ndata: test\n\n", [ev("test"), ev("test")])
    }

    /// §9.2.2 example of event types: `event: add` / `event: remove`.
    func testSpecExampleEventTypes() {
        let stream = "event: add\ndata: 73857293\n\nevent: remove\ndata: 2153\n\nevent: add\ndata: 113411\n\n"
        assertParses(stream, [ev("73857293", type: "add"), ev("2153", type: "remove"), ev("113411", type: "add")])
    }

    /// The relay's own frames (docs/PROTOCOL.md, `SSEFrame`) round-trip: a heartbeat, then the
    /// first event with the connection's `retry:` in its block.
    func testRelayFramesRoundTrip() throws {
        let json = #"{"type":"delta","content":"Clause 3 — عربي 😀"}"#
        let stream = SSEFrame.ping + SSEFrame.retry(milliseconds: 1000) + SSEFrame.event(seq: 7, json: json)
        assertParses(stream, [.comment("ping"), ev(json, id: "7")], lastEventId: "7", retry: 1000)
    }

    // MARK: - Line terminators (§9.2.5)

    func testLineEndingsLFCRLFAndCR() {
        assertParses("data: a\nid: 1\n\n", [ev("a", id: "1")], lastEventId: "1")
        assertParses("data: a\r\nid: 1\r\n\r\n", [ev("a", id: "1")], lastEventId: "1")
        assertParses("data: a\rid: 1\r\r", [ev("a", id: "1")], lastEventId: "1")
        assertParses("data: a\r\ndata: b\rdata: c\n\r\n", [ev("a\nb\nc")])
    }

    /// A CR-only stream is processed line by line as CRs arrive (no waiting for an LF).
    func testCROnlyStream() throws {
        assertParses("data: a\rdata: b\r\r:c\rdata: d\r\r", [ev("a\nb"), .comment("c"), ev("d")])
        var p = SSEParser()
        XCTAssertEqual(try p.feed("data: x\r\r"), [ev("x")], "event must be dispatched without waiting for a following byte")
    }

    /// CR at the end of one chunk and LF at the start of the next is one terminator, not a CR line
    /// plus an empty LF line (which would dispatch "a" and "b" separately).
    func testCRLFSplitAcrossChunksIsOneTerminator() throws {
        var p = SSEParser()
        XCTAssertEqual(try p.feed("data: a\r"), [])
        XCTAssertEqual(try p.feed("\ndata: b\r"), [])
        XCTAssertEqual(try p.feed(""), [], "empty chunk must not forget the pending CR")
        XCTAssertEqual(try p.feed("\n\r"), [ev("a\nb")])
        XCTAssertEqual(try p.feed("\n"), [])
        XCTAssertEqual(try p.feed("data: c\n\n"), [ev("c")])
    }

    /// "\r\n\n" is two lines (CRLF, then LF), "\n\r" is two lines (LF, then CR).
    func testLFCRIsTwoTerminators() {
        assertParses("data: a\n\rdata: b\r\n\n", [ev("a"), ev("b")])
    }

    // MARK: - BOM (§9.2.5 "UTF-8 decode")

    func testLeadingBOMStripped() {
        assertParses([0xEF, 0xBB, 0xBF] + Array("data: x\n\n".utf8), [ev("x")])
    }

    /// Only one BOM is stripped: a second one makes the first field name "\u{FEFF}data" (ignored).
    func testOnlyOneBOMStripped() {
        assertParses("\u{FEFF}\u{FEFF}data: x\n\ndata: y\n\n", [ev("y")])
    }

    /// A BOM after stream start is content, not stripped.
    func testBOMOnlyAtStreamStart() {
        assertParses("data: a\n\n\u{FEFF}data: b\n\n:\u{FEFF}c\n", [ev("a"), .comment("\u{FEFF}c")])
    }

    /// A partial BOM (EF BB then not BF) is not a BOM: its bytes stay in the line (and decode to
    /// U+FFFD), so the field name is "\u{FFFD}data" and nothing is dispatched.
    func testPartialBOMIsContent() {
        assertParses([0xEF, 0xBB] + Array("data: x\n\ndata: y\n\n".utf8), [ev("y")])
        assertParses([0xEF, 0xBB, 0x0A] + Array("data: x\n\n".utf8), [ev("x")])
    }

    /// `finish()` starts a new stream (reconnection): its BOM is stripped again.
    func testBOMStrippedAgainAfterFinish() throws {
        var p = SSEParser()
        XCTAssertEqual(try p.feed("\u{FEFF}data: a\n\n"), [ev("a")])
        p.finish()
        XCTAssertEqual(try p.feed("\u{FEFF}data: b\n\n"), [ev("b")])
    }

    // MARK: - Comments and field syntax (§9.2.6)

    func testCommentLines() {
        assertParses(":hello\n: hello\n:  two\n:\n: \n:: x\n", [
            .comment("hello"), .comment("hello"), .comment(" two"), .comment(""), .comment(""), .comment(": x"),
        ])
    }

    /// Comments do not end or reset the event around them.
    func testCommentInsideEvent() {
        assertParses("event: t\ndata: a\n: keepalive\ndata: b\n\n", [.comment("keepalive"), ev("a\nb", type: "t")])
    }

    func testFieldWithoutColonHasEmptyValue() {
        // `event` with empty value leaves the type "message"; `data` appends an empty line.
        assertParses("event: x\nevent\ndata\ndata\n\n", [ev("\n")])
        // `id` with no colon resets the last event ID to empty.
        assertParses("id: 3\ndata: a\n\nid\ndata: b\n\n", [ev("a", id: "3"), ev("b", id: "")])
    }

    func testOnlyOneLeadingSpaceRemoved() {
        assertParses("data:  x\n\ndata:\tx\n\ndata:x \n\n", [ev(" x"), ev("\tx"), ev("x ")])
    }

    /// The value starts after the first colon; later colons are part of it.
    func testColonsInValueKept() {
        assertParses("data: a:b: c\n\nid: 1:2\ndata::\n\n", [ev("a:b: c"), ev(":", id: "1:2")], lastEventId: "1:2")
    }

    /// Unknown fields are ignored; names are case-sensitive and exact ("data " is not "data").
    func testUnknownAndMiscasedFieldsIgnored() {
        assertParses("Data: x\nDATA: x\ndata : x\ndatas: x\nfoo: bar\nEvent: t\nID: 9\n\n", [], lastEventId: "")
        assertParses("foo: bar\ndata: x\nevents: t\n\n", [ev("x")])
    }

    // MARK: - event / data / dispatch (§9.2.6)

    func testEventTypeResetsAfterDispatch() {
        assertParses("event: a\ndata: 1\n\ndata: 2\n\n", [ev("1", type: "a"), ev("2")])
    }

    /// Last `event` field of a block wins.
    func testLastEventFieldWins() {
        assertParses("event: a\nevent: b\ndata: 1\n\n", [ev("1", type: "b")])
    }

    /// A blank line with an empty data buffer dispatches nothing but resets the event type.
    func testBlankLineWithoutDataResetsTypeOnly() {
        assertParses("event: a\n\ndata: 2\n\n", [ev("2")])
        assertParses("\n\n\n", [])
    }

    func testMultipleDataLinesJoinedWithLF() {
        assertParses("data: a\ndata:\ndata: b\n\n", [ev("a\n\nb")])
        assertParses("data: a\ndata\n\n", [ev("a\n")])
    }

    /// NUL is an ordinary character in data.
    func testNULInDataKept() {
        assertParses("data: a\u{0}b\n\n", [ev("a\u{0}b")])
    }

    // MARK: - id (§9.2.6)

    func testIdPersistsAcrossEvents() {
        assertParses("id: 1\ndata: a\n\ndata: b\n\n", [ev("a", id: "1"), ev("b", id: "1")], lastEventId: "1")
    }

    /// Dispatch step 1 sets the last event ID string before the empty-data check: an id-only
    /// block updates it without firing an event.
    func testIdOnlyBlockSetsLastEventIdWithoutEvent() {
        assertParses("id: 5\n\n", [], lastEventId: "5")
        assertParses("id: 5\n\ndata: a\n\n", [ev("a", id: "5")], lastEventId: "5")
    }

    func testEmptyIdResetsLastEventId() {
        assertParses("id: 1\ndata: a\n\nid:\ndata: b\n\n", [ev("a", id: "1"), ev("b", id: "")], lastEventId: "")
        assertParses("id: 1\n\nid: \n\n", [], lastEventId: "")
    }

    /// An id set after the data in the same block still applies to that block's event.
    func testIdAfterDataInBlock() {
        assertParses("data: a\nid: 7\n\n", [ev("a", id: "7")], lastEventId: "7")
    }

    func testIdContainingNULIgnored() {
        assertParses("id: 1\ndata: a\n\nid: 2\u{0}3\ndata: b\n\nid: \u{0}\n\n", [ev("a", id: "1"), ev("b", id: "1")],
                     lastEventId: "1")
    }

    /// `lastEventId` only moves at a blank line (the spec's "last event ID string" vs. buffer).
    func testLastEventIdCommittedAtBlankLineOnly() throws {
        var p = SSEParser()
        _ = try p.feed("id: 1\ndata: a\n\nid: 2\n")
        XCTAssertEqual(p.lastEventId, "1")
        _ = try p.feed("\n")
        XCTAssertEqual(p.lastEventId, "2")
    }

    // MARK: - retry (§9.2.6)

    func testRetryDigitsOnly() {
        assertParses("retry: 1000\n", [], retry: 1000)
        assertParses("retry: 1000\nretry: 10x\n", [], retry: 1000)
        assertParses("retry: 10x\n", [], retry: nil)
        assertParses("retry: 007\n", [], retry: 7)
        assertParses("retry:0\n", [], retry: 0)
        assertParses("retry: 5\nretry:\nretry\nretry:  6\nretry: -1\nretry: +1\nretry: 1.5\nretry: 1e3\nretry: ٣\n",
                     [], retry: 5)
        assertParses("retry: 5\nretry: 99999999999999999999999\n", [], retry: 5)  // does not fit Int: ignored
    }

    /// retry applies immediately and neither dispatches nor disturbs the event around it.
    func testRetryInsideEvent() {
        assertParses("data: a\nretry: 250\ndata: b\n\n", [ev("a\nb")], retry: 250)
        assertParses("retry: 250\n\n", [], retry: 250)
    }

    // MARK: - UTF-8 (§9.2.5 "UTF-8 decode")

    /// Multi-byte characters in every position; `assertParses` splits inside every one of them.
    func testUTF8SplitMidCharacter() {
        let arabic = "مرحبا بالعالم"
        let emoji = "👋🏽 👨‍👩‍👧 🇸🇦"
        assertParses("event: رسالة\nid: ١٢٣\ndata: \(arabic)\ndata: \(emoji)\n\n: تعليق 😀\n", [
            ev("\(arabic)\n\(emoji)", type: "رسالة", id: "١٢٣"),
            .comment("تعليق 😀"),
        ], lastEventId: "١٢٣")
    }

    /// Invalid sequences become U+FFFD, one per maximal subpart (WHATWG Encoding, UTF-8 decoder).
    func testInvalidUTF8Replaced() {
        var bytes = Array("data: ".utf8)
        bytes += [0xFF, 0x61]                 // lone invalid byte → FFFD, then "a"
        bytes += [0xF0, 0x9F, 0x98]           // truncated 4-byte sequence → one FFFD
        bytes += [0x62]
        bytes += [0xC0, 0x80]                 // overlong NUL → FFFD FFFD (not U+0000)
        bytes += [0xED, 0xA0, 0x80]           // UTF-16 surrogate → FFFD ×3
        bytes += Array("\n\n".utf8)
        assertParses(bytes, [ev("\u{FFFD}a\u{FFFD}b\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}")])
    }

    /// A truncated sequence at a line end does not swallow the terminator or the next line.
    func testTruncatedSequenceAtLineEnd() {
        let bytes = Array("data: a".utf8) + [0xE2, 0x82] + Array("\ndata: b\n\n".utf8)
        assertParses(bytes, [ev("a\u{FFFD}\nb")])
    }

    /// An overlong-encoded NUL in an id is not U+0000, so the id is accepted (as U+FFFD U+FFFD).
    func testOverlongNULInIdIsNotNUL() {
        let bytes = Array("id: ".utf8) + [0xC0, 0x80] + Array("\n\n".utf8)
        assertParses(bytes, [], lastEventId: "\u{FFFD}\u{FFFD}")
    }

    // MARK: - End of stream (§9.2.5)

    func testFinishDiscardsIncompleteEventAndItsId() throws {
        var p = SSEParser()
        XCTAssertEqual(try p.feed("id: 1\ndata: x\n\nid: 2\nevent: t\ndata: y\n"), [ev("x", id: "1")])
        XCTAssertEqual(p.finish(), [])
        XCTAssertEqual(p.lastEventId, "1", "the id of the discarded block must not become the last event ID")
        // Next stream (reconnection): discarded data/type/id do not leak; the committed id is kept.
        XCTAssertEqual(try p.feed("data: z\n\n"), [ev("z", id: "1")])
    }

    func testFinishDiscardsUnterminatedLine() throws {
        var p = SSEParser()
        XCTAssertEqual(try p.feed("data: a\n\n: ping"), [ev("a")])
        XCTAssertEqual(p.finish(), [])
        XCTAssertEqual(try p.feed("\n"), [], "the discarded partial comment must not complete on the next stream")
        XCTAssertEqual(try p.feed("data"), [])
        p.finish()
        XCTAssertEqual(try p.feed("\n\n"), [], "the discarded partial `data` line must not dispatch")
    }

    func testFinishForgetsPendingCR() throws {
        var p = SSEParser()
        XCTAssertEqual(try p.feed("data: a\r"), [])
        p.finish()
        // New stream: a leading LF is a blank line of its own (empty data: nothing dispatched),
        // and the old block's data is gone.
        XCTAssertEqual(try p.feed("\ndata: b\n\n"), [ev("b")])
    }

    // MARK: - Line length limit

    func testEndlessLineThrows() throws {
        var p = SSEParser(maxLineBytes: 64)
        XCTAssertEqual(try p.feed("data: ok\n\ndata: "), [ev("ok")])
        let chunk = [UInt8](repeating: 0x61, count: 16)
        var fed = 6
        var thrown: Error?
        while fed < 10_000 {
            do { _ = try p.feed(chunk) } catch { thrown = error; break }
            fed += chunk.count
        }
        XCTAssertEqual(thrown as? SSEParserError, .lineTooLong(limit: 64))
        XCTAssertEqual(fed, 54, "must throw as soon as the partial line passes 64 bytes, not at its end")
        // Sticky until finish().
        XCTAssertThrowsError(try p.feed("\n\n")) { XCTAssertEqual($0 as? SSEParserError, .lineTooLong(limit: 64)) }
        p.finish()
        XCTAssertEqual(try p.feed("data: again\n\n"), [ev("again")])
    }

    func testLineLimitBoundary() throws {
        let exact = "data: " + String(repeating: "x", count: 10)  // 16 bytes
        for terminator in ["\n", "\r", "\r\n"] {
            var p = SSEParser(maxLineBytes: 16)
            XCTAssertEqual(try p.feed(exact + terminator + terminator), [ev(String(repeating: "x", count: 10))])
            var q = SSEParser(maxLineBytes: 16)
            XCTAssertThrowsError(try q.feed(exact + "x" + terminator)) {
                XCTAssertEqual($0 as? SSEParserError, .lineTooLong(limit: 16))
            }
        }
        // Byte by byte, the 17th byte of a line throws whatever comes after.
        var p = SSEParser(maxLineBytes: 16)
        let bytes = Array((exact + "x").utf8)
        for b in bytes.dropLast() { XCTAssertEqual(try p.feed([b]), []) }
        XCTAssertThrowsError(try p.feed([bytes.last!]))
        // The BOM does not count toward the first line.
        var bom = SSEParser(maxLineBytes: 16)
        XCTAssertEqual(try bom.feed("\u{FEFF}" + exact + "\n\n"), [ev(String(repeating: "x", count: 10))])
    }

    /// A line too long inside one chunk throws even when complete, and the throw rolls back
    /// `lastEventId`/`retry` so events lost with the throw are replayed after reconnection.
    func testThrowRollsBackIdAndRetry() throws {
        var p = SSEParser(maxLineBytes: 32)
        XCTAssertEqual(try p.feed("id: 1\ndata: a\n\n"), [ev("a", id: "1")])
        let long = String(repeating: "y", count: 40)
        XCTAssertThrowsError(try p.feed("id: 2\nretry: 9\ndata: b\n\ndata: \(long)\n\n")) {
            XCTAssertEqual($0 as? SSEParserError, .lineTooLong(limit: 32))
        }
        XCTAssertEqual(p.lastEventId, "1")
        XCTAssertNil(p.retry)
    }

    /// Comments count toward the limit too.
    func testLongCommentThrows() {
        var p = SSEParser(maxLineBytes: 8)
        XCTAssertThrowsError(try p.feed(": 123456789\n"))
    }

    // MARK: - Large input

    /// A 1 MiB data line in 1 KiB chunks, then many small events in one chunk.
    func testLongLineInManyChunksAndManyEvents() throws {
        var p = SSEParser()
        let payload = [UInt8]((0..<(1 << 20) - 6).map { UInt8(0x61 + $0 % 26) })
        let stream = Array("data: ".utf8) + payload + Array("\n\n".utf8)
        var items: [Item] = []
        var i = 0
        while i < stream.count {
            items += try p.feed(Array(stream[i..<min(i + 1024, stream.count)]))
            i += 1024
        }
        XCTAssertEqual(items, [ev(String(decoding: payload, as: UTF8.self))])

        var many = ""
        for n in 1...5000 { many += "id: \(n)\ndata: {\"n\":\(n)}\n\n" }
        let got = try p.feed(many)
        XCTAssertEqual(got.count, 5000)
        XCTAssertEqual(got.last, ev(#"{"n":5000}"#, id: "5000"))
        XCTAssertEqual(p.lastEventId, "5000")
    }
}
