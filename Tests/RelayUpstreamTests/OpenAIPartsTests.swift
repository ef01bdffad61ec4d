import RelayTestSupport
import Foundation
import RelayCore
@testable import RelayUpstream
import XCTest

/// `RELAY_UPSTREAM=openai` streams that carry parts (docs/PROTOCOL.md §5.5, docs/UPSTREAMS.md
/// "Parts"): `delta.tool_calls` → tool-call parts, `reasoning_content` / `reasoning` →
/// reasoning, through the adapter against the fake server; broken calls end the answer with
/// one `502 upstream_error` naming the upstream and the call.
final class OpenAIPartsTests: UpstreamTestCase {
    typealias S = OpenAIPartStreams

    /// The events' JSON lines, as clients get them.
    private func lines(_ events: [StreamEvent]) -> [String] { events.map(\.json) }

    /// A stream of `chunks` (SSE events), each sent as its own write.
    private func stream(_ chunks: [String]) -> FakeUpstreamServer.Script {
        .init([.head(status: 200, contentType: "text/event-stream")] + chunks.map { .send($0.bytes) })
    }

    private var finishToolCalls: String { S.chunk("{}", finish: "tool_calls") }

    func testFunctionCallingGuideStreamBecomesOneToolCallWithItsArgumentsParsed() throws {
        let (events, _) = try runOpenAI(Self.sse(S.functionCallingGuide))
        let id = "call_DdmO9pD3xa9XTPNJ32zg2hcA"
        let pieces = ["{\\\"", "location", "\\\":\\\"", "Paris", ",", " France", "\\\"}"]
        XCTAssertEqual(lines(events),
                       ["{\"type\":\"tool_call_start\",\"id\":\"\(id)\",\"name\":\"get_weather\"}"]
                       + pieces.map { "{\"type\":\"tool_call_delta\",\"id\":\"\(id)\",\"arguments\":\"\($0)\"}" }
                       + ["{\"type\":\"tool_call_end\",\"id\":\"\(id)\",\"name\":\"get_weather\",\"input\":{\"location\":\"Paris, France\"}}",
                          "{\"type\":\"done\",\"finish_reason\":\"tool_calls\",\"usage\":{\"prompt_tokens\":73,\"completion_tokens\":16,\"total_tokens\":89}}"])
        assertMultiIdle()
    }

    func testReasoningContentBecomesReasoningPartsBeforeTheText() throws {
        let (events, _) = try runOpenAI(Self.sse(S.deepSeekReasoner))
        XCTAssertEqual(events, [.part(.reasoning("Compare")), .part(.reasoning(" 9.11 and 9.8:")), .part(.reasoning(" 0.80 > 0.11.")),
                                .delta("9.8"), .delta(" is greater."),
                                .done(finishReason: "stop", usage: Usage(promptTokens: 15, completionTokens: 12))])
    }

    /// OpenRouter's `delta.reasoning`; a server sending both fields (the same text) gives
    /// one piece; a reasoning field of another type is ignored, not the chunk.
    func testReasoningFieldIsReasoningAndBothFieldsGiveOnePiece() throws {
        let body = S.chunk("{\"role\":\"assistant\",\"content\":\"\",\"reasoning\":\"Think\"}")
            + S.chunk("{\"reasoning_content\":\" twice\",\"reasoning\":\" twice\"}")
            + S.chunk("{\"content\":\"Done\",\"reasoning\":{\"effort\":\"low\"}}")
            + S.chunk("{\"content\":null,\"reasoning\":null}", finish: "stop") + OpenAIFixtures.done
        let (events, up) = try runOpenAIUpstream(body)
        XCTAssertEqual(Array(events.dropLast()), [.part(.reasoning("Think")), .part(.reasoning(" twice")), .delta("Done")])
        XCTAssertEqual(up.skippedChunks, 0)
    }

    func testReasoningTwoInterleavedCallsAndTextInOrderThenDone() throws {
        let (events, _) = try runOpenAI(stream(S.reasoningTwoCallsAndText))
        XCTAssertEqual(Array(events.dropLast()), S.reasoningTwoCallsAndTextEvents)
        XCTAssertEqual(events.last, .done(finishReason: "tool_calls", usage: Usage(promptTokens: 40, completionTokens: 61)))
    }

    func testTheSameStreamSplitEveryFewBytesGivesTheSameEvents() throws {
        let body = S.reasoningTwoCallsAndText.joined().bytes
        let script = FakeUpstreamServer.Script([.head(status: 200, contentType: "text/event-stream"),
                                                .trickle(body, pieceSize: 7, pauseMs: 0)])
        let (events, _) = try runOpenAI(script)
        XCTAssertEqual(Array(events.dropLast()), S.reasoningTwoCallsAndTextEvents)
    }

    /// A call's pieces in one chunk, several calls in one chunk, no `index` (position in the
    /// array), and arguments an object instead of a string: all one call each.
    func testWholeCallsInOneChunkWithoutIndexAndObjectArguments() throws {
        let body = S.chunk("{\"tool_calls\":[{\"id\":\"a\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"x\\\":1}\"}},"
                           + "{\"id\":\"b\",\"type\":\"function\",\"function\":{\"name\":\"g\",\"arguments\":{\"y\":[true]}}}]}")
            + finishToolCalls + OpenAIFixtures.done
        let (events, _) = try runOpenAI(Self.sse(body))
        XCTAssertEqual(lines(events).dropLast(), [
            "{\"type\":\"tool_call_start\",\"id\":\"a\",\"name\":\"f\"}",
            "{\"type\":\"tool_call_delta\",\"id\":\"a\",\"arguments\":\"{\\\"x\\\":1}\"}",
            "{\"type\":\"tool_call_start\",\"id\":\"b\",\"name\":\"g\"}",
            "{\"type\":\"tool_call_delta\",\"id\":\"b\",\"arguments\":\"{\\\"y\\\":[true]}\"}",
            "{\"type\":\"tool_call_end\",\"id\":\"a\",\"name\":\"f\",\"input\":{\"x\":1}}",
            "{\"type\":\"tool_call_end\",\"id\":\"b\",\"name\":\"g\",\"input\":{\"y\":[true]}}",
        ])
    }

    func testACallWithoutArgumentsEndsWithAnEmptyObject() throws {
        let body = S.toolCall(index: 0, id: "call_now", name: "now", arguments: "") + finishToolCalls + OpenAIFixtures.done
        let (events, _) = try runOpenAI(Self.sse(body))
        XCTAssertEqual(Array(events.dropLast()), [.part(.toolCallStart(id: "call_now", name: "now")),
                                                  .part(.toolCallEnd(id: "call_now", name: "now", input: .object([])))])
    }

    /// "A call ends when the choice's finish_reason arrives (or the stream ends)".
    func testCallsStillOpenAtDoneEndBeforeDone() throws {
        let body = S.toolCall(index: 0, id: "c", name: "f", arguments: "{}") + OpenAIFixtures.done
        let (events, _) = try runOpenAI(Self.sse(body))
        XCTAssertEqual(events, [.part(.toolCallStart(id: "c", name: "f")), .part(.toolCallDelta(id: "c", arguments: "{}")),
                                .part(.toolCallEnd(id: "c", name: "f", input: .object([]))),
                                .done(finishReason: "stop", usage: Usage(promptTokens: Self.question.estimatedPromptTokens, completionTokens: 1))])
    }

    func testCallsEndAtTheFinishReasonWhenTheStreamClosesWithoutDone() throws {
        let body = S.toolCall(index: 0, id: "c", name: "f", arguments: "[1]") + finishToolCalls
        let (events, _) = try runOpenAI(Self.sse(body, chunked: false))
        XCTAssertEqual(events.map(\.json).dropLast(), [
            "{\"type\":\"tool_call_start\",\"id\":\"c\",\"name\":\"f\"}",
            "{\"type\":\"tool_call_delta\",\"id\":\"c\",\"arguments\":\"[1]\"}",
            "{\"type\":\"tool_call_end\",\"id\":\"c\",\"name\":\"f\",\"input\":[1]}",
        ])
        guard case .done("tool_calls", _, _)? = events.last else { return XCTFail("done: \(String(describing: events.last))") }
    }

    func testArgumentsThatDoNotParseEndTheAnswerWithAnErrorAndNoEnd() throws {
        let body = S.toolCall(index: 0, id: "call_bad", name: "get_weather", arguments: "{\"city\": ")
            + S.toolCall(index: 0, arguments: "\"Riyadh\"") + finishToolCalls + OpenAIFixtures.done
        let (events, _) = try runOpenAI(Self.sse(body))
        assertEndsWithError(events, status: 502, code: "upstream_error",
                            containing: "OpenAI-compatible upstream sent arguments for tool call \"call_bad\" (get_weather) that are not JSON")
        XCTAssertFalse(events.contains { if case .part(.toolCallEnd) = $0 { return true } else { return false } })
        XCTAssertEqual(events.count, 4, "start, two pieces, the error: \(events)")
        assertMultiIdle()
    }

    /// `finish_reason: "length"` inside a call (the `max_tokens` the relay sent, its grant): the
    /// call stays open with its incomplete arguments and the answer ends `length` (docs/PROTOCOL.md
    /// §5.5), as when the relay cuts it itself; never a 502 for arguments that could not be whole.
    /// With `[DONE]` or with the stream closing after the finish reason.
    func testALengthCutInsideACallLeavesItOpenAndEndsWithLength() throws {
        for chunked in [true, false] {
            let body = S.toolCall(index: 0, id: "call_cut", name: "get_weather", arguments: "{\"city\": ")
                + S.chunk("{}", finish: "length") + (chunked ? OpenAIFixtures.done : "")
            let (events, _) = try runOpenAI(Self.sse(body, chunked: chunked))
            XCTAssertEqual(events.dropLast(), [.part(.toolCallStart(id: "call_cut", name: "get_weather")),
                                               .part(.toolCallDelta(id: "call_cut", arguments: "{\"city\": "))], "chunked \(chunked)")
            guard case .done("length", _, _)? = events.last else { return XCTFail("done length: \(String(describing: events.last))") }
        }
    }

    func testACallWithoutAnIdOrANameEndsTheAnswer() throws {
        let noID = S.chunk("{\"tool_calls\":[{\"index\":0,\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"\"}}]}")
        let (a, _) = try runOpenAI(Self.sse(OpenAIFixtures.content("Hi") + noID + finishToolCalls + OpenAIFixtures.done))
        XCTAssertEqual(a.first, .delta("Hi"))
        assertEndsWithError(a, status: 502, code: "upstream_error",
                            containing: "OpenAI-compatible upstream started the tool call at index 0 without an id")
        XCTAssertEqual(a.count, 2)

        let noName = S.chunk("{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"function\":{\"arguments\":\"{}\"}}]}")
        let (b, _) = try runOpenAI(Self.sse(noName + finishToolCalls + OpenAIFixtures.done))
        assertEndsWithError(b, status: 502, code: "upstream_error", containing: "started tool call \"call_1\" without a name")
        XCTAssertEqual(b.count, 1)
    }

    /// A piece for an index whose call ended (at the finish reason) is a piece of no call.
    func testArgumentsAfterTheFinishReasonEndTheAnswer() throws {
        let body = S.toolCall(index: 0, id: "c", name: "f", arguments: "{}") + finishToolCalls
            + S.toolCall(index: 0, arguments: "{}") + OpenAIFixtures.done
        let (events, _) = try runOpenAI(Self.sse(body))
        assertEndsWithError(events, status: 502, code: "upstream_error", containing: "started the tool call at index 0 without an id")
        XCTAssertEqual(events.dropLast().last, .part(.toolCallEnd(id: "c", name: "f", input: .object([]))))
    }

    func testADuplicateCallIdEndsTheAnswer() throws {
        let body = S.toolCall(index: 0, id: "same", name: "f", arguments: "{}") + S.toolCall(index: 1, id: "same", name: "g", arguments: "{}")
            + finishToolCalls + OpenAIFixtures.done
        let (events, _) = try runOpenAI(Self.sse(body))
        assertEndsWithError(events, status: 502, code: "upstream_error", containing: "started tool call \"same\" (g) twice")
    }

    func testArgumentsOverTheCapEndTheAnswerBeforeThePieceThatCrossesIt() throws {
        let half = String(repeating: "x", count: ToolCallAssembler.maxArgumentBytes / 2)
        let body = S.toolCall(index: 0, id: "big", name: "f", arguments: "\"" + half) + S.toolCall(index: 0, arguments: half + "\"")
            + finishToolCalls + OpenAIFixtures.done
        let (events, _) = try runOpenAI(Self.sse(body))
        assertEndsWithError(events, status: 502, code: "upstream_error",
                            containing: "sent more than 1048576 bytes of arguments for tool call \"big\" (f)")
        XCTAssertEqual(events.count, 3, "start, the first piece, the error")
    }

    /// docs/PROTOCOL.md §5.5: reasoning and argument pieces are generated tokens, counted
    /// like a delta's text when the upstream reports no usage, and in a stopped stream's usage.
    func testReasoningAndArgumentPiecesCountAsCompletionTokensWithoutUsage() throws {
        let chunks = S.reasoningTwoCallsAndText.filter { !$0.contains("\"usage\"") }
        let (events, _) = try runOpenAI(stream(chunks))
        var expected = 0
        for e in events {
            switch e {
            case .delta(let t), .part(.reasoning(let t)), .part(.toolCallDelta(_, let t)):
                expected += max(1, SimulatedTokenizer.estimateTokens(t))
            default: break
            }
        }
        XCTAssertGreaterThan(expected, S.textPieces.count + S.reasoningPieces.count)
        XCTAssertEqual(events.last, .done(finishReason: "tool_calls",
                                          usage: Usage(promptTokens: Self.question.estimatedPromptTokens, completionTokens: expected)))

        // Stopped after the reasoning, both starts and one argument piece.
        let prefix = Array(S.reasoningTwoCallsAndText.prefix(1 + S.reasoningPieces.count + 3))
        let s = try server([Self.openAIPath: .init([.head(status: 200, contentType: "text/event-stream"), .send(prefix.joined().bytes), .holdOpen])])
        let up = try HTTPUpstreamFactory(.openAI, config: config(s), multi: harness.multi).makeUpstream(for: Self.question, loop: harness.loop)
        let count = S.reasoningPieces.count + 3
        var seen = 0
        let partial = harness.collect(up) { _ in
            seen += 1
            return seen < count
        }
        XCTAssertEqual(partial.count, count)
        XCTAssertEqual(partial.last, .part(.toolCallDelta(id: S.calls[0].id, arguments: S.calls[0].pieces[0])))
        let counted = S.reasoningPieces.map { max(1, SimulatedTokenizer.estimateTokens($0)) }.reduce(0, +)
            + max(1, SimulatedTokenizer.estimateTokens(S.calls[0].pieces[0]))
        XCTAssertEqual(up.cancel().completionTokens, counted, "cancel() counts the reasoning and argument pieces emitted")
    }

    /// Runs `body` and returns the events and the adapter.
    private func runOpenAIUpstream(_ body: String) throws -> ([StreamEvent], SSEStreamUpstream<OpenAIDialect>) {
        let s = try server([Self.openAIPath: Self.sse(body)])
        let up = try HTTPUpstreamFactory(.openAI, config: config(s), multi: harness.multi).makeUpstream(for: Self.question, loop: harness.loop)
        return (harness.collect(up), try XCTUnwrap(up as? SSEStreamUpstream<OpenAIDialect>))
    }
}
