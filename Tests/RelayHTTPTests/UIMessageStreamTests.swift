import RelayCore
import XCTest
@testable import RelayHTTP

/// The AI SDK UI Message Stream dialect (docs/PROTOCOL.md §4.6): each relay event becomes
/// its chunks, parts open and close in order, every chunk has an id that never skips an
/// event, a resume inside a part reopens it, and the stream ends with `[DONE]`.
final class UIMessageStreamTests: XCTestCase {
    private let events: [StreamEvent] = [
        .part(.reasoning("Plan")), .part(.reasoning(" it")),
        .part(.toolCallStart(id: "call_1", name: "lookup")),
        .part(.toolCallDelta(id: "call_1", arguments: "{\"q\":")), .part(.toolCallDelta(id: "call_1", arguments: "1}")),
        .part(.toolCallEnd(id: "call_1", name: "lookup", input: try! LenientJSON.parse(#"{"q":1}"#))),
        .part(.toolResult(id: "call_1", output: .number("2"))),
        .part(.source(id: "s1", url: "https://example.com", title: "Ex")),
        .delta("Hello"), .delta(" \"world\""),
        .part(.data(name: "card", id: "c1", value: .bool(true))),
        .part(.reasoningRedacted(data: "opaque")),
        .delta("!"),
        .done(finishReason: "tool_calls", usage: Usage(promptTokens: 3, completionTokens: 7), budgetLimited: true),
    ]

    private func sequenced(from k: Int = 0) -> [SequencedEvent] {
        events.enumerated().dropFirst(k).map { SequencedEvent(seq: UInt64($0.offset + 1), json: $0.element.json) }
    }

    /// (id, data) of each SSE block in `text`.
    private func blocks(_ text: String) -> [(id: UInt64, data: String)] {
        text.components(separatedBy: "\n\n").filter { !$0.isEmpty }.map { b in
            var id: UInt64 = .max, data = ""
            for line in b.split(separator: "\n") {
                if line.hasPrefix("data: ") { data = String(line.dropFirst(6)) }
                if line.hasPrefix("id: ") { id = UInt64(line.dropFirst(4)) ?? .max }
            }
            return (id, data)
        }
    }

    func testEveryEventBecomesItsChunksInOrderThenDone() {
        var ui = UIMessageStream(after: 0)
        let text = ui.start(messageId: "chat-1").text + (ui.frame(sequenced())?.text ?? "")
        let got = blocks(text)
        XCTAssertEqual(got.map(\.data), [
            #"{"type":"start","messageId":"chat-1"}"#,
            #"{"type":"reasoning-start","id":"reasoning-1"}"#,
            #"{"type":"reasoning-delta","id":"reasoning-1","delta":"Plan"}"#,
            #"{"type":"reasoning-delta","id":"reasoning-1","delta":" it"}"#,
            #"{"type":"reasoning-end","id":"reasoning-1"}"#,
            #"{"type":"tool-input-start","toolCallId":"call_1","toolName":"lookup"}"#,
            #"{"type":"tool-input-delta","toolCallId":"call_1","inputTextDelta":"{\"q\":"}"#,
            #"{"type":"tool-input-delta","toolCallId":"call_1","inputTextDelta":"1}"}"#,
            #"{"type":"tool-input-available","toolCallId":"call_1","toolName":"lookup","input":{"q":1}}"#,
            #"{"type":"tool-output-available","toolCallId":"call_1","output":2}"#,
            #"{"type":"source-url","sourceId":"s1","url":"https://example.com","title":"Ex"}"#,
            #"{"type":"text-start","id":"text-9"}"#,
            #"{"type":"text-delta","id":"text-9","delta":"Hello"}"#,
            #"{"type":"text-delta","id":"text-9","delta":" \"world\""}"#,
            #"{"type":"text-end","id":"text-9"}"#,
            #"{"type":"data-card","id":"c1","data":true}"#,
            #"{"type":"reasoning-start","id":"reasoning-12","providerMetadata":{"anthropic":{"redactedData":"opaque"}}}"#,
            #"{"type":"reasoning-end","id":"reasoning-12"}"#,
            #"{"type":"text-start","id":"text-13"}"#,
            #"{"type":"text-delta","id":"text-13","delta":"!"}"#,
            #"{"type":"text-end","id":"text-13"}"#,
            #"{"type":"finish","finishReason":"tool-calls","messageMetadata":{"usage":{"promptTokens":3,"completionTokens":7,"totalTokens":10,"budgetLimited":true}}}"#,
            "[DONE]",
        ])
        // Ids: an event's chunk has its seq; an added chunk repeats the seq before it.
        XCTAssertEqual(got.map(\.id), [0, 0, 1, 2, 2, 3, 4, 5, 6, 7, 8, 8, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14])
        XCTAssertTrue(ui.isFinished)
        XCTAssertNil(ui.frame(sequenced()), "nothing after [DONE]")
    }

    /// From every cut, the chunks after it are the uninterrupted run's from that event on,
    /// with the part it lands in opened again; ids never go back.
    func testAResumeFromEveryCutReopensThePartItLandsIn() {
        for k in 0..<events.count {
            var ui = UIMessageStream(after: UInt64(k))
            let got = blocks(ui.start(messageId: "m").text + (ui.frame(sequenced(from: k))?.text ?? ""))
            XCTAssertEqual(got.first?.id, UInt64(k))
            XCTAssertEqual(got.map(\.id), got.map(\.id).sorted(), "from \(k)")
            XCTAssertEqual(got.last?.data, "[DONE]")
            // The first delta chunk after the cut follows a start chunk of its part.
            if let i = got.firstIndex(where: { $0.data.contains("-delta\"") && !$0.data.contains("tool-input") }) {
                let kind = got[i].data.contains("text-delta") ? "text-start" : "reasoning-start"
                XCTAssertTrue(got[..<i].contains { $0.data.contains(kind) }, "from \(k): \(got[i].data) is opened")
            }
            // Each stored event after k appears under its own seq, but the argument pieces of a
            // call that started before the cut (the AI SDK refuses them on this response).
            let later: Set<UInt64> = Set(got.map { $0.id }.filter { $0 > UInt64(k) })
            let want = Set(((k + 1)...events.count).filter { seq in
                guard case .part(.toolCallDelta) = events[seq - 1] else { return true }
                return k < 3   // call_1 starts at seq 3
            }.map { UInt64($0) })
            XCTAssertEqual(later, want, "from \(k)")
            // Every tool-input-delta follows its call's tool-input-start on this response.
            for (i, b) in got.enumerated() where b.data.contains("tool-input-delta") {
                XCTAssertTrue(got[..<i].contains { $0.data.contains("tool-input-start") }, "from \(k): \(b.data) without its start")
            }
        }
    }

    /// `useChat` keeps a call's streamed input per response: a `tool-input-delta` for a call whose
    /// `tool-input-start` came on an earlier response fails the chat. A resume inside the
    /// arguments writes no such chunk; `tool-input-available` (with the whole input) still comes.
    func testAResumeInsideAToolCallsArgumentsWritesNoDeltaOfThatCall() {
        var ui = UIMessageStream(after: 4)   // after call_1's start (3) and its first piece (4)
        let got = blocks(ui.start(messageId: "m").text + (ui.frame(sequenced(from: 4))?.text ?? ""))
        XCTAssertFalse(got.contains { $0.data.contains("tool-input-delta") }, got.map(\.data).joined(separator: "\n"))
        XCTAssertEqual(got.first { $0.data.contains("tool-input-available") }?.id, 6)
        XCTAssertEqual(got.first { $0.data.contains("tool-input-available") }?.data,
                       #"{"type":"tool-input-available","toolCallId":"call_1","toolName":"lookup","input":{"q":1}}"#)
    }

    func testAnErrorEndsWithTheErrorChunkAndDone() {
        var ui = UIMessageStream(after: 4)
        _ = ui.frame([SequencedEvent(seq: 5, json: StreamEvent.delta("a").json)])
        let f = ui.error(APIError(.sessionRevoked, "revoked"))
        XCTAssertEqual(blocks(f?.text ?? "").map(\.data), [#"{"type":"text-end","id":"text-5"}"#,
                                                            #"{"type":"error","errorText":"session_revoked: revoked"}"#, "[DONE]"])
        XCTAssertEqual(blocks(f?.text ?? "").map(\.id), [5, 5, 5], "the last seq sent: a resume from it loses nothing")
        XCTAssertNil(ui.error(APIError(.sessionRevoked, "again")))
    }

    func testTheFormatIsChosenByQueryOrHeaderAndAnythingElseIsRefused() throws {
        XCTAssertEqual(try StreamDialect.requested(formats: [], uiStreamHeader: []), .relay)
        XCTAssertEqual(try StreamDialect.requested(formats: ["ai-sdk"], uiStreamHeader: []), .uiMessageStream)
        XCTAssertEqual(try StreamDialect.requested(formats: [], uiStreamHeader: ["v1"]), .uiMessageStream)
        for (f, h) in [(["ai"], [String]()), (["ai-sdk", "ai-sdk"], []), ([], ["v2"]), (["AI-SDK"], [])] {
            XCTAssertThrowsError(try StreamDialect.requested(formats: f, uiStreamHeader: h)) {
                XCTAssertEqual(($0 as? APIError)?.code, .invalidRequest)
            }
        }
    }
}
