import XCTest
@testable import RelayCore
import RelayHTTP
import RelayTestKit

final class StreamEventTests: XCTestCase {
    func testDeltaRoundTripsWithEscapes() throws {
        let text = "Line \"1\"\n\tعربي 😀 \\ \u{01}"
        let e = StreamEvent.delta(text)
        XCTAssertFalse(e.json.contains("\n"))
        XCTAssertEqual(try StreamEvent(json: e.json), e)
    }

    func testDoneShape() throws {
        let e = StreamEvent.done(finishReason: "stop", usage: Usage(promptTokens: 35, completionTokens: 410))
        XCTAssertEqual(e.json, #"{"type":"done","finish_reason":"stop","usage":{"prompt_tokens":35,"completion_tokens":410,"total_tokens":445}}"#)
        XCTAssertEqual(try StreamEvent(json: e.json), e)
        XCTAssertTrue(SequencedEvent(seq: 1, json: e.json).isTerminal)
    }

    func testErrorShape() throws {
        let e = StreamEvent.error(status: 401, code: "session_revoked", message: "revoked")
        XCTAssertEqual(e.json, #"{"type":"error","status":401,"code":"session_revoked","message":"revoked"}"#)
        XCTAssertTrue(SequencedEvent(seq: 1, json: e.json).isTerminal)
        XCTAssertFalse(SequencedEvent(seq: 1, json: StreamEvent.delta("x").json).isTerminal)
    }

    /// `isTerminal` compares bytes in place: exactly the two prefixes, nothing
    /// shorter, no other type, and a string without contiguous UTF-8 gets the same answer.
    func testIsTerminalIsExactlyTheDoneAndErrorPrefixes() {
        for (json, terminal) in [
            (#"{"type":"done"}"#, true), (#"{"type":"error"}"#, true),
            (#"{"type":"done","finish_reason":"stop"}"#, true),
            (#"{"type":"delta","content":"{\"type\":\"done\""}"#, false),
            (#"{"type":"don"#, false), (#"{"type":"error"#, false), ("", false), ("{", false),
            (#"{"type":"Done"}"#, false), (#" {"type":"done"}"#, false), (#"{"type":"doneX"}"#, false),
        ] {
            XCTAssertEqual(SequencedEvent(seq: 1, json: json).isTerminal, terminal, json)
            let bridged = NSString(string: json) as String   // may be non-contiguous: the fallback
            XCTAssertEqual(SequencedEvent(seq: 1, json: bridged).isTerminal, terminal, "bridged " + json)
        }
    }

    func testSSEFrame() {
        XCTAssertEqual(SSEFrame.event(seq: 7, json: #"{"type":"delta","content":"Clause 3"}"#),
                       "data: {\"type\":\"delta\",\"content\":\"Clause 3\"}\nid: 7\n\n", "the id last, just before the blank line")
        XCTAssertEqual(SSEFrame.retry(milliseconds: 1000), "retry: 1000\n", "a field line of the first event's block")
        XCTAssertEqual(SSEFrame.ping, ": ping\n", "one comment line, no blank line: it ends no block")
    }
}

final class AnswerPartEventTests: XCTestCase {
    /// Every part type writes the documented shape (docs/PROTOCOL.md §5.5) and reads back equal.
    func testEveryPartWritesItsDocumentedShapeAndReadsBack() throws {
        let input = try LenientJSON.parse(#"{ "city" : "Riyadh", "days": [1, 2.5e0], "x": null, "ok": true }"#)
        let cases: [(AnswerPart, String)] = [
            (.reasoning("The user wants"), #"{"type":"reasoning","content":"The user wants"}"#),
            (.reasoningRedacted(data: "EqQBCkYI"), #"{"type":"reasoning_redacted","data":"EqQBCkYI"}"#),
            (.toolCallStart(id: "call_1", name: "get_weather"), #"{"type":"tool_call_start","id":"call_1","name":"get_weather"}"#),
            (.toolCallDelta(id: "call_1", arguments: "{\"ci"), #"{"type":"tool_call_delta","id":"call_1","arguments":"{\"ci"}"#),
            (.toolCallEnd(id: "call_1", name: "get_weather", input: input),
             #"{"type":"tool_call_end","id":"call_1","name":"get_weather","input":{"city":"Riyadh","days":[1,2.5e0],"x":null,"ok":true}}"#),
            (.toolResult(id: "call_1", output: .array([.string(JSONString("sunny")), .number("31")])),
             #"{"type":"tool_result","id":"call_1","output":["sunny",31]}"#),
            (.source(id: "s1", url: "https://example.com/a", title: "A"), #"{"type":"source","id":"s1","url":"https://example.com/a","title":"A"}"#),
            (.source(id: "s1", url: "https://example.com/a", title: nil), #"{"type":"source","id":"s1","url":"https://example.com/a"}"#),
            (.data(name: "weather", id: "w1", value: .array([.number("1")])), #"{"type":"data","name":"weather","id":"w1","data":[1]}"#),
            (.data(name: "weather", id: nil, value: .null), #"{"type":"data","name":"weather","data":null}"#),
        ]
        for (part, json) in cases {
            XCTAssertEqual(StreamEvent.part(part).json, json)
            XCTAssertEqual(try StreamEvent(json: json), .part(part), json)
            let e = SequencedEvent(seq: 3, json: json)
            XCTAssertEqual(e.kind, .part, json)
            XCTAssertFalse(e.isTerminal, json)
        }
        XCTAssertEqual(SequencedEvent(seq: 1, json: StreamEvent.delta("x").json).kind, .delta)
    }

    /// A part whose required fields are missing or of the wrong type is refused, never
    /// half-read; an unknown type stays `unknownType` so that clients can skip it.
    func testMalformedPartsAreRefused() {
        for json in [#"{"type":"reasoning"}"#, #"{"type":"tool_call_start","id":"","name":"f"}"#,
                     #"{"type":"tool_call_start","id":"c","name":1}"#, #"{"type":"tool_call_end","id":"c","name":"f"}"#,
                     #"{"type":"source","id":"s","url":"https://x","title":3}"#, #"{"type":"data","name":"a b","data":1}"#,
                     #"{"type":"data","name":"ok"}"#] {
            XCTAssertThrowsError(try StreamEvent(json: json), json) { XCTAssertEqual($0 as? StreamEventDecodingError, .malformed, json) }
        }
        XCTAssertThrowsError(try StreamEvent(json: #"{"type":"file","url":"x"}"#)) {
            XCTAssertEqual($0 as? StreamEventDecodingError, .unknownType("file"))
        }
    }

    /// Compact JSON keeps every string unit, escapes what RFC 8259 §7 requires, and keeps
    /// an unpaired surrogate as its escape, on one line.
    func testCompactJSONKeepsStringsExactOnOneLine() throws {
        let v = try LenientJSON.parse("{\n  \"a\": \"line\\nbreak \\\"q\\\" \\ud83d\",\n  \"b\": \"😀 \\u2028\"\n}")
        XCTAssertEqual(v.compactJSON, #"{"a":"line\nbreak \"q\" \ud83d","b":"😀 \u2028"}"#)
        XCTAssertEqual(try LenientJSON.parse(v.compactJSON), v)
    }

    func testOnlyReasoningAndArgumentPiecesCountAsTokens() {
        XCTAssertTrue(AnswerPart.reasoning("a").countsAsToken)
        XCTAssertTrue(AnswerPart.toolCallDelta(id: "c", arguments: "{").countsAsToken)
        XCTAssertFalse(AnswerPart.toolCallStart(id: "c", name: "f").countsAsToken)
        XCTAssertFalse(AnswerPart.toolCallEnd(id: "c", name: "f", input: .object([])).countsAsToken)
        XCTAssertFalse(AnswerPart.source(id: "s", url: "u", title: nil).countsAsToken)
    }
}

final class CompactJSONStringTests: XCTestCase {
    /// The one-pass UTF-16 → UTF-8 writer of string values gives what escaping the decoded
    /// string gives (`JSONText.quoted`) for every well-formed string, random units included,
    /// and keeps each unpaired surrogate as its escape.
    func testStringsAreWrittenAsJSONTextEscapesThem() {
        var rng = SplitMix64(seed: 42)
        let samples: [[UInt16]] = [[], Array("plain".utf16), Array("\"q\" \\ \n\r\t\u{01}\u{1F} \u{2028}\u{2029}".utf16),
                                   Array("é中🙂 عربي".utf16), Array("\u{7F}\u{80}\u{7FF}\u{800}\u{FFFF}\u{10000}\u{10FFFF}".utf16)]
        var all = samples
        for _ in 0..<500 {
            var units: [UInt16] = []
            for _ in 0..<Int(rng.next() % 20) {
                switch rng.next() % 5 {
                case 0: units.append(UInt16(rng.next() % 0x80))
                case 1: units.append(UInt16(0x80 + rng.next() % 0x780))
                case 2: units.append(UInt16(0x800 + rng.next() % 0xD000))
                case 3: units += Array(String(UnicodeScalar(UInt32(0x10000 + rng.next() % 0xFFFFF))!).utf16)
                default: units.append(UInt16(0xE000 + rng.next() % 0x2000))
                }
            }
            all.append(units)
        }
        for units in all {
            let text = String(decoding: units, as: UTF16.self)
            XCTAssertEqual(JSONValue.string(JSONString(units: units)).compactJSON, JSONText.quoted(text), "\(units)")
        }
        XCTAssertEqual(JSONValue.string(JSONString(units: [0x61, 0xD83D, 0x62, 0xDE00])).compactJSON, #""a\ud83db\ude00""#)
    }
}
