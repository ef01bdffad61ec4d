import RelayCore
import XCTest
@testable import RelayUpstream

/// An agent backend's AI SDK UI Message Stream read into the relay's events (docs/AGENTS.md):
/// the chunks of a pydantic-ai Vercel AI adapter run (recorded shape: reasoning, two tool
/// calls whose arguments interleave by call, their outputs in a second step, text), and the
/// rules of docs/PROTOCOL.md §5.5 enforced on what a backend sends.
final class UIMessageChunkReaderTests: XCTestCase {
    /// The chunks as pydantic-ai 2.78's VercelAIAdapter streams a FunctionModel run.
    static let recorded = [
        #"{"type":"start"}"#, #"{"type":"start-step"}"#,
        #"{"type":"reasoning-start","id":"r1"}"#,
        #"{"type":"reasoning-delta","id":"r1","delta":"I "}"#, #"{"type":"reasoning-delta","id":"r1","delta":"should check. "}"#,
        #"{"type":"reasoning-end","id":"r1"}"#,
        #"{"type":"tool-input-start","toolCallId":"call_law","toolName":"lookup_governing_law"}"#,
        #"{"type":"tool-input-delta","toolCallId":"call_law","inputTextDelta":"{\"cou"}"#,
        #"{"type":"tool-input-delta","toolCallId":"call_law","inputTextDelta":"ntry\": \"SA\"}"}"#,
        #"{"type":"tool-input-start","toolCallId":"call_date","toolName":"current_date"}"#,
        #"{"type":"tool-input-delta","toolCallId":"call_date","inputTextDelta":"{}"}"#,
        #"{"type":"tool-input-available","toolCallId":"call_law","toolName":"lookup_governing_law","input":{"country":"SA"}}"#,
        #"{"type":"tool-input-available","toolCallId":"call_date","toolName":"current_date","input":{}}"#,
        #"{"type":"tool-output-available","toolCallId":"call_law","output":{"law":"Civil Transactions Law"}}"#,
        #"{"type":"tool-output-available","toolCallId":"call_date","output":{"date":"2026-12-07"}}"#,
        #"{"type":"finish-step"}"#, #"{"type":"start-step"}"#,
        #"{"type":"text-start","id":"t1"}"#,
        #"{"type":"text-delta","delta":"Here ","id":"t1"}"#, #"{"type":"text-delta","delta":"it is.","id":"t1"}"#,
        #"{"type":"text-end","id":"t1"}"#,
        #"{"type":"data-weather","id":"w","data":{"c":31}}"#, #"{"type":"data-progress","data":1,"transient":true}"#,
        #"{"type":"source-url","sourceId":"s1","url":"https://example.com","title":"Ex"}"#,
        #"{"type":"finish-step"}"#, #"{"type":"finish","finishReason":"stop"}"#, "[DONE]",
    ]

    func testARecordedBackendStreamBecomesTheRelaysEventsInOrder() throws {
        var r = UIMessageChunkReader()
        var events: [StreamEvent] = []
        var ends: [String?] = []
        for c in Self.recorded {
            switch try r.read(c) {
            case .events(let e): events += e
            case .end(let reason): ends.append(reason)
            case .fail(let why): XCTFail(why)
            }
        }
        XCTAssertEqual(events, [
            .part(.reasoning("I ")), .part(.reasoning("should check. ")),
            .part(.toolCallStart(id: "call_law", name: "lookup_governing_law")),
            .part(.toolCallDelta(id: "call_law", arguments: "{\"cou")), .part(.toolCallDelta(id: "call_law", arguments: "ntry\": \"SA\"}")),
            .part(.toolCallStart(id: "call_date", name: "current_date")), .part(.toolCallDelta(id: "call_date", arguments: "{}")),
            .part(.toolCallEnd(id: "call_law", name: "lookup_governing_law", input: try LenientJSON.parse(#"{"country":"SA"}"#))),
            .part(.toolCallEnd(id: "call_date", name: "current_date", input: .object([]))),
            .part(.toolResult(id: "call_law", output: try LenientJSON.parse(#"{"law":"Civil Transactions Law"}"#))),
            .part(.toolResult(id: "call_date", output: try LenientJSON.parse(#"{"date":"2026-12-07"}"#))),
            .delta("Here "), .delta("it is."),
            .part(.data(name: "weather", id: "w", value: try LenientJSON.parse(#"{"c":31}"#))),
            .part(.source(id: "s1", url: "https://example.com", title: "Ex")),
        ], "transient data is not part of the message")
        XCTAssertEqual(ends, ["stop", nil])
        XCTAssertEqual(r.tokens, 2 + 3 + 2, "reasoning, argument and text deltas")
    }

    func testAToolCallWhoseInputArrivesWholeGetsItsStartFirst() throws {
        var r = UIMessageChunkReader()
        XCTAssertEqual(try r.read(#"{"type":"tool-input-available","toolCallId":"c","toolName":"f","input":[1]}"#),
                       .events([.part(.toolCallStart(id: "c", name: "f")), .part(.toolCallEnd(id: "c", name: "f", input: .array([.number("1")])))]))
        XCTAssertEqual(try r.read(#"{"type":"tool-output-error","toolCallId":"c","errorText":"boom"}"#),
                       .events([.part(.toolResult(id: "c", output: try LenientJSON.parse(#"{"error":"boom"}"#)))]))
        XCTAssertEqual(try r.read(#"{"type":"finish","finishReason":"tool-calls"}"#), .end(finishReason: "tool_calls"))
    }

    /// The end of a backend's stream keeps the rule of §5.5: a call still open is refused before
    /// a `stop` or `tool_calls` end, however the end comes (`[DONE]` without a `finish` is a
    /// `stop`), and allowed in an answer that was cut (`length`), as the relay's own cut at
    /// the granted tokens leaves it.
    func testAnOpenCallAtTheEndIsRefusedUnlessTheAnswerWasCut() throws {
        let open = [#"{"type":"tool-input-start","toolCallId":"c1","toolName":"f"}"#,
                    #"{"type":"tool-input-delta","toolCallId":"c1","inputTextDelta":"{\"a\":"}"#]
        func end(_ last: String) throws -> UIMessageChunkReader.Step {
            var r = UIMessageChunkReader()
            for c in open { _ = try r.read(c) }
            return try r.read(last)
        }
        for refused in ["[DONE]", #"{"type":"finish"}"#, #"{"type":"finish","finishReason":"stop"}"#,
                        #"{"type":"finish","finishReason":"tool-calls"}"#] {
            XCTAssertThrowsError(try end(refused), "\(refused) with c1 open")
        }
        XCTAssertEqual(try end(#"{"type":"finish","finishReason":"length"}"#), .end(finishReason: "length"))
        var r = UIMessageChunkReader()
        for c in open { _ = try r.read(c) }
        _ = try r.read(#"{"type":"finish","finishReason":"length"}"#)
        XCTAssertEqual(try r.read("[DONE]"), .end(finishReason: nil), "the [DONE] after a finish ends nothing more")
    }

    /// What breaks §5.5 is refused with a reason, never passed on.
    func testChunksAgainstThePartRulesAreRefused() {
        let bad: [[String]] = [
            ["not json"], [#"{"no":"type"}"#],
            [#"{"type":"tool-input-delta","toolCallId":"x","inputTextDelta":"{"}"#],
            [#"{"type":"tool-input-start","toolCallId":"x","toolName":"f"}"#, #"{"type":"tool-input-start","toolCallId":"x","toolName":"f"}"#],
            [#"{"type":"tool-input-start","toolCallId":"","toolName":"f"}"#],
            [#"{"type":"tool-output-available","toolCallId":"never","output":1}"#],
            [#"{"type":"tool-input-start","toolCallId":"x","toolName":"f"}"#, #"{"type":"finish"}"#],
            [#"{"type":"data-bad name","data":1}"#], [#"{"type":"text-delta","id":"t"}"#],
            [#"{"type":"tool-input-start","toolCallId":"x","toolName":"f"}"#,
             "{\"type\":\"tool-input-delta\",\"toolCallId\":\"x\",\"inputTextDelta\":\"\(String(repeating: "a", count: UIMessageChunkReader.maxArgumentBytes + 1))\"}"],
        ]
        for chunks in bad {
            var r = UIMessageChunkReader()
            var refused = false
            for c in chunks {
                do { _ = try r.read(c) } catch { refused = true }
            }
            XCTAssertTrue(refused, "\(chunks.map { $0.prefix(80) })")
        }
        var r = UIMessageChunkReader()
        XCTAssertEqual(try r.read(#"{"type":"error","errorText":"model overloaded"}"#), .fail("model overloaded"))
    }
}
