import Foundation
import RelayTestKit
import XCTest
import RelayCore
import RelayHTTP
@testable import RelayClient

/// Typed answer parts (docs/PROTOCOL.md §5.5) through `RelayStream` on a scripted relay and a
/// virtual clock: `ChatUpdate.parts` beside the text, in the background, and over long-poll
/// reads. Resumes inside a part are the vectors of `conformance/parts.json`
/// (`PartsConformanceTests`).
final class RelayStreamPartsTests: XCTestCase {
    let urls = [URL(string: "http://relay-a.test")!, URL(string: "http://relay-b.test")!]
    let request = ChatRequest(messages: [ChatMessage(role: "user", content: "Weather in Riyadh?")])
    let text = "It is sunny in Riyadh today, with clear skies and a light wind."
    let events: [StreamEvent] = [
        .part(.reasoning("The user wants the weather.")),
        .part(.toolCallStart(id: "call_1", name: "get_weather")),
        .part(.toolCallDelta(id: "call_1", arguments: #"{"city":"Riyadh"}"#)),
        .part(.toolCallEnd(id: "call_1", name: "get_weather", input: try! LenientJSON.parse(#"{"city":"Riyadh"}"#))),
        .delta("It is sunny in Riyadh today, "),
        .part(.source(id: "s1", url: "https://example.com/weather", title: nil)),
        .delta("with clear skies and a light wind."),
        .done(finishReason: "stop", usage: Usage(promptTokens: 5, completionTokens: 4)),
    ]
    var parts: [AnswerPart] { events.compactMap { if case .part(let p) = $0 { return p } else { return nil } } }

    func client(_ transport: ScriptedTransport, _ clock: VirtualClock) -> RelayChatClient {
        RelayChatClient(baseURLs: urls, tokenProvider: { _ in "t" }, clock: clock, transport: transport, random: { 0 })
    }

    func partUpdates(_ u: [ChatUpdate]) -> [PartsUpdate] {
        u.compactMap { if case .parts(let p) = $0 { return p } else { return nil } }
    }

    func testPartsArriveAsUpdatesInSeqOrderAndNeverInTheText() async throws {
        let t = ScriptedTransport()
        let stream = client(t, VirtualClock()).startChat(request)
        let log = UpdateLog(stream)
        try await t.waitForRequests(1)
        t.open(0, frames: MockRelay.frames(events))
        t.send([.end(error: nil)], to: 0)
        let u = try await log.finished()
        XCTAssertEqual(partUpdates(u).map(\.part), parts)
        XCTAssertEqual(partUpdates(u).last?.parts, parts)
        XCTAssertEqual(stream.parts.parts, parts, "the stream keeps the parts the last update carried")
        XCTAssertEqual(partUpdates(u).last?.toolCalls.first?.input, try LenientJSON.parse(#"{"city":"Riyadh"}"#))
        XCTAssertEqual(u.finalText, text)
        XCTAssertTrue(u.renders.allSatisfy { text.hasPrefix($0.text) }, "no render ever shows a part")
        XCTAssertEqual(u.completion, .finished(finishReason: "stop"))
        XCTAssertEqual(u.telemetry?.tokensReceived, 2, "telemetry counts the text's deltas")
    }

    /// In the foreground a decided paragraph is released as its delta arrives; in the
    /// background it waits for the foreground, while the part after it is sent at once.
    func testPartsArriveInTheBackgroundWhileTheTextWaitsForTheForeground() async throws {
        let t = ScriptedTransport()
        let stream = client(t, VirtualClock()).startChat(request)
        let log = UpdateLog(stream)
        try await t.waitForRequests(1)
        stream.enterBackground()
        let paragraph = "It is sunny in Riyadh today, with clear skies.\n\n"
        let source = AnswerPart.source(id: "s1", url: "https://example.com/weather", title: "Weather")
        t.open(0, frames: MockRelay.frames([.delta(paragraph), .part(source)]))
        try await log.wait("the part in the background") { self.partUpdates($0).count == 1 }
        XCTAssertTrue(log.updates.renders.isEmpty, "the paragraph before the part waits for the foreground")
        stream.enterForeground()
        try await log.wait("the text on foreground") { $0.renders.last?.text == paragraph }
        t.send([.data(Data(SSEFrame.event(seq: 3, json: events[7].json).utf8)), .end(error: nil)], to: 0)
        let u = try await log.finished()
        XCTAssertEqual(partUpdates(u).map(\.part), [source])
        XCTAssertEqual(u.finalText, paragraph)
    }

    /// A long-poll read's events are the events an SSE response carries: an `input` keeps
    /// its members' order, its number literals and a U+FEFF in a string.
    func testPartsOverLongPollAreTheEventsAnSSEResponseCarries() async throws {
        let t = ScriptedTransport()
        let c = client(t, VirtualClock())
        c.readMode = .longPoll
        let log = UpdateLog(c.startChat(request))
        try await t.waitForRequests(1)
        t.send([.response(status: 200, contentType: "text/event-stream", retryAfter: nil)], to: 0)
        try await t.waitForRequests(2)
        let end = #"{"type":"tool_call_end","id":"call_1","name":"plot","input":{"z":1.50,"a":["\#u{FEFF}x",1e3]}}"#
        let body = #"[{"type":"tool_call_start","id":"call_1","name":"plot"},"# + end + ","
            + #"{"type":"done","finish_reason":"tool_calls","usage":{"prompt_tokens":1,"completion_tokens":0,"total_tokens":1}}]"#
        t.send([.response(status: 200, contentType: "application/json", retryAfter: nil,
                          stream: StreamReadHeaders(nextOffset: "00000000000000000003", closed: true)),
                .data(Data(body.utf8)), .end(error: nil)], to: 1)
        let u = try await log.finished()
        XCTAssertEqual(partUpdates(u).last?.part, try StreamEvent(json: end).part)
        XCTAssertEqual(partUpdates(u).last?.toolCall?.input?.compactJSON, #"{"z":1.50,"a":["\#u{FEFF}x",1e3]}"#)
        XCTAssertEqual(u.completion, .finished(finishReason: "tool_calls"))
    }
}

extension StreamEvent {
    /// The part, when this is a part event.
    var part: AnswerPart? { if case .part(let p) = self { return p } else { return nil } }
}
