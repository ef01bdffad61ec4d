import XCTest
@testable import RelayCore
import RelayHTTP

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
