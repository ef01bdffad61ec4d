import RelayTestSupport
import Foundation
import RelayCore
@testable import RelayUpstream
import XCTest

/// `RELAY_UPSTREAM=anthropic` streams that carry parts (docs/PROTOCOL.md §5.5,
/// docs/UPSTREAMS.md "Parts"): `tool_use` blocks → tool-call parts, `thinking` →
/// reasoning, `redacted_thinking` → redacted reasoning, citations with a URL → sources,
/// through the adapter against the fake server; broken calls end the answer with one
/// `502 upstream_error` naming the upstream and the call.
final class AnthropicPartsTests: UpstreamTestCase {
    typealias S = AnthropicPartStreams

    private func lines(_ events: [StreamEvent]) -> [String] { events.map(\.json) }

    private func stream(_ events: [String]) -> FakeUpstreamServer.Script {
        .init([.head(status: 200, contentType: "text/event-stream")] + events.map { .send($0.bytes) })
    }

    private let start = AnthropicFixtures.messageStart(input: 9)
    private let end = AnthropicFixtures.messageDelta(stop: "tool_use", output: 20) + AnthropicFixtures.messageStop

    func testToolUseExampleBecomesTextThenOneToolCallWithItsInputParsed() throws {
        let (events, _) = try runAnthropic(Self.sse(S.toolUse))
        let id = "toolu_01T1x1fJ34qAmk2tNTrN7Up6"
        let text = ["Okay", ",", " let", "'s", " check", " the", " weather", " for", " San", " Francisco", ",", " CA", ":"]
        let pieces = ["{\\\"location\\\":", " \\\"San", " Francisc", "o,", " CA\\\"", ", ", "\\\"unit\\\": \\\"fah", "renheit\\\"}"]
        XCTAssertEqual(lines(events),
                       text.map { "{\"type\":\"delta\",\"content\":\"\($0)\"}" }
                       + ["{\"type\":\"tool_call_start\",\"id\":\"\(id)\",\"name\":\"get_weather\"}"]
                       + pieces.map { "{\"type\":\"tool_call_delta\",\"id\":\"\(id)\",\"arguments\":\"\($0)\"}" }
                       + ["{\"type\":\"tool_call_end\",\"id\":\"\(id)\",\"name\":\"get_weather\",\"input\":{\"location\":\"San Francisco, CA\",\"unit\":\"fahrenheit\"}}",
                          "{\"type\":\"done\",\"finish_reason\":\"tool_calls\",\"usage\":{\"prompt_tokens\":472,\"completion_tokens\":89,\"total_tokens\":561}}"])
        assertMultiIdle()
    }

    /// The example reports no usage: the completion tokens are counted from the reasoning
    /// pieces and the text (docs/PROTOCOL.md §5.5), the prompt estimated.
    func testExtendedThinkingExampleBecomesReasoningThenTextWithoutTheSignature() throws {
        let (events, _) = try runAnthropic(Self.sse(S.extendedThinking))
        let thinking = ["I need to find the GCD of 1071 and 462 using the Euclidean algorithm.\n\n1071 = 2 × 462 + 147",
                        "\n462 = 3 × 147 + 21\n147 = 7 × 21 + 0\n\nSo GCD(1071, 462) = 21"]
        let answer = "The greatest common divisor of 1071 and 462 is **21**."
        let completion = (thinking + [answer]).map { max(1, SimulatedTokenizer.estimateTokens($0)) }.reduce(0, +)
        XCTAssertEqual(events, thinking.map { .part(.reasoning($0)) } + [
            .delta(answer),
            .done(finishReason: "stop", usage: Usage(promptTokens: Self.question.estimatedPromptTokens, completionTokens: completion)),
        ])
        XCTAssertEqual(lines(events).first, "{\"type\":\"reasoning\",\"content\":\"I need to find the GCD of 1071 and 462 using the Euclidean algorithm.\\n\\n1071 = 2 × 462 + 147\"}")
    }

    /// Redacted thinking passes through; the server tool's input and result blocks are
    /// Anthropic's own (no parts); a cited URL is one source however often it is cited; a
    /// document citation without a URL is no source.
    func testWebSearchCitationsBecomeOneSourcePerURLAndServerToolsStayOut() throws {
        let (events, _) = try runAnthropic(Self.sse(S.webSearchWithCitations))
        XCTAssertEqual(lines(events), [
            "{\"type\":\"reasoning_redacted\",\"data\":\"EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPkNRj2YfWXGmKDxH4mPnZ5sQ7vB8URj2pLmN3kG2B0=\"}",
            "{\"type\":\"delta\",\"content\":\"Here's the current weather in New York City: \"}",
            "{\"type\":\"source\",\"id\":\"src_1\",\"url\":\"https://world-weather.info/forecast/usa/new_york/may-2025/\",\"title\":\"Weather in New York City in May 2025 (New York)\"}",
            "{\"type\":\"delta\",\"content\":\"partly sunny, with a high of 68°F\"}",
            "{\"type\":\"done\",\"finish_reason\":\"stop\",\"usage\":{\"prompt_tokens\":2679,\"completion_tokens\":510,\"total_tokens\":3189}}",
        ])
    }

    func testSearchResultCitationsWithAnHTTPSourceAreSourcesWithoutATitleWhenNone() throws {
        let cite = { (c: String) in S.blockDelta(0, "{\"type\":\"citations_delta\",\"citation\":\(c)}") }
        let body = start + S.blockStart(0, "{\"type\":\"text\",\"text\":\"\"}")
            + cite("{\"type\":\"search_result_location\",\"source\":\"https://docs.example.com/a\",\"title\":null,\"cited_text\":\"x\",\"search_result_index\":0,\"start_block_index\":0,\"end_block_index\":0}")
            + cite("{\"type\":\"search_result_location\",\"source\":\"internal-kb-42\",\"title\":\"KB\",\"cited_text\":\"x\"}")
            + cite("{\"type\":\"web_search_result_location\",\"url\":\"https://b.example.org/\",\"title\":\"B\",\"cited_text\":\"y\"}")
            + S.blockStop(0) + AnthropicFixtures.messageDelta(stop: "end_turn", output: 4) + AnthropicFixtures.messageStop
        let (events, _) = try runAnthropic(Self.sse(body))
        XCTAssertEqual(Array(events.dropLast()), [.part(.source(id: "src_1", url: "https://docs.example.com/a", title: nil)),
                                                  .part(.source(id: "src_2", url: "https://b.example.org/", title: "B"))])
    }

    func testThinkingTextAndTwoToolUsesInOrderThenDone() throws {
        let (events, _) = try runAnthropic(stream(S.thinkingTwoToolUsesAndText))
        XCTAssertEqual(Array(events.dropLast()), S.thinkingTwoToolUsesAndTextEvents)
        XCTAssertEqual(events.last, .done(finishReason: "tool_calls", usage: Usage(promptTokens: 40, completionTokens: 61)))
    }

    func testTheSameStreamSplitEveryFewBytesGivesTheSameEvents() throws {
        let script = FakeUpstreamServer.Script([.head(status: 200, contentType: "text/event-stream"),
                                                .trickle(S.thinkingTwoToolUsesAndText.joined().bytes, pieceSize: 5, pauseMs: 0)])
        let (events, _) = try runAnthropic(script)
        XCTAssertEqual(Array(events.dropLast()), S.thinkingTwoToolUsesAndTextEvents)
    }

    func testAToolUseWithoutInputPiecesEndsWithAnEmptyObject() throws {
        let body = start + S.toolUseStart(0, id: "toolu_now", name: "now") + S.blockStop(0) + end
        let (events, _) = try runAnthropic(Self.sse(body))
        XCTAssertEqual(Array(events.dropLast()), [.part(.toolCallStart(id: "toolu_now", name: "now")),
                                                  .part(.toolCallEnd(id: "toolu_now", name: "now", input: .object([])))])
    }

    func testInputThatDoesNotParseEndsTheAnswerAtTheBlockStopWithNoEnd() throws {
        let body = start + S.toolUseStart(0, id: "toolu_bad", name: "get_weather") + S.inputJSON(0, "{\"city\": \"Riy")
            + S.blockStop(0) + end
        let (events, _) = try runAnthropic(Self.sse(body))
        XCTAssertEqual(events.first, .part(.toolCallStart(id: "toolu_bad", name: "get_weather")))
        assertEndsWithError(events, status: 502, code: "upstream_error",
                            containing: "Anthropic upstream sent arguments for tool call \"toolu_bad\" (get_weather) that are not JSON")
        XCTAssertEqual(events.count, 3, "start, the piece, the error: \(events)")
    }

    /// `max_tokens` (the relay's grant) reached inside a `tool_use` block: Anthropic stops the
    /// block with its input cut short, then says `max_tokens`. The call stays open and the answer
    /// ends `length` (docs/PROTOCOL.md §5.5), as when the relay cuts it itself; never a 502.
    func testAToolUseCutByMaxTokensStaysOpenAndTheAnswerEndsWithLength() throws {
        let body = start + S.toolUseStart(0, id: "toolu_cut", name: "get_weather") + S.inputJSON(0, "{\"city\": \"Riy")
            + S.blockStop(0) + AnthropicFixtures.messageDelta(stop: "max_tokens", output: 16) + AnthropicFixtures.messageStop
        let (events, _) = try runAnthropic(Self.sse(body))
        XCTAssertEqual(Array(events.dropLast()), [.part(.toolCallStart(id: "toolu_cut", name: "get_weather")),
                                                  .part(.toolCallDelta(id: "toolu_cut", arguments: "{\"city\": \"Riy"))])
        guard case .done("length", _, _)? = events.last else { return XCTFail("done length: \(String(describing: events.last))") }
    }

    func testAToolUseWithoutAnIdEndsTheAnswer() throws {
        let body = start + S.blockStart(0, "{\"type\":\"tool_use\",\"name\":\"f\",\"input\":{}}") + S.blockStop(0) + end
        let (events, _) = try runAnthropic(Self.sse(body))
        assertEndsWithError(events, status: 502, code: "upstream_error", containing: "Anthropic upstream started the tool call at index 0 without an id")
        XCTAssertEqual(events.count, 1)
    }

    /// An `input_json_delta` is a piece of a `tool_use` block's input: for a text block or
    /// a block that never started it belongs to no call.
    func testInputForABlockThatIsNoToolUseEndsTheAnswer() throws {
        let text = start + AnthropicFixtures.blockStart + AnthropicFixtures.text("Hi") + S.inputJSON(0, "{}") + S.blockStop(0) + end
        let (a, _) = try runAnthropic(Self.sse(text))
        XCTAssertEqual(a.first, .delta("Hi"))
        assertEndsWithError(a, status: 502, code: "upstream_error",
                            containing: "Anthropic upstream sent arguments for a tool call at index 0, where none is open")
        let unknown = start + S.inputJSON(5, "{}") + end
        let (b, _) = try runAnthropic(Self.sse(unknown))
        assertEndsWithError(b, status: 502, code: "upstream_error", containing: "tool call at index 5, where none is open")
    }

    func testAToolUseStillOpenAtMessageStopEndsTheAnswerInsteadOfDone() throws {
        let body = start + S.toolUseStart(1, id: "toolu_open", name: "f") + S.inputJSON(1, "{}") + end
        let (events, _) = try runAnthropic(Self.sse(body))
        assertEndsWithError(events, status: 502, code: "upstream_error",
                            containing: "Anthropic upstream ended the answer with tool call \"toolu_open\" (f) still open")
    }

    func testADuplicateToolUseIdEndsTheAnswer() throws {
        let body = start + S.toolUseStart(0, id: "toolu_same", name: "f") + S.blockStop(0)
            + S.toolUseStart(1, id: "toolu_same", name: "f") + S.blockStop(1) + end
        let (events, _) = try runAnthropic(Self.sse(body))
        assertEndsWithError(events, status: 502, code: "upstream_error", containing: "started tool call \"toolu_same\" (f) twice")
        XCTAssertEqual(events.count, 3, "the first call's start and end, the error")
    }

    /// A thinking piece split inside an emoji (two escaped halves) is joined, apart from the
    /// text around it.
    func testReasoningSurrogateHalvesAreJoinedApartFromTheText() throws {
        let think = { (t: String) in S.blockDelta(0, "{\"type\":\"thinking_delta\",\"thinking\":\"\(t)\"}") }
        let body = start + S.blockStart(0, "{\"type\":\"thinking\",\"thinking\":\"\"}") + think("Hmm \\ud83e")
            + AnthropicFixtures.text("Hi \\ud83d") + think("\\udd14") + AnthropicFixtures.text("\\ude00") + S.blockStop(0)
            + AnthropicFixtures.messageDelta(stop: "end_turn", output: 4) + AnthropicFixtures.messageStop
        let (events, _) = try runAnthropic(Self.sse(body))
        XCTAssertEqual(Array(events.dropLast()), [.part(.reasoning("Hmm ")), .delta("Hi "), .part(.reasoning("🤔")), .delta("😀")])
    }
}
