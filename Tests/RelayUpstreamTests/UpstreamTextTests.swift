import RelayTestSupport
import Foundation
import RelayCore
@testable import RelayUpstream
import XCTest

/// Against the fake server (docs/UPSTREAMS.md): upstream text never kills an answer (split
/// surrogate halves joined, unpaired halves and invalid UTF-8 → U+FFFD, undocumented chunk
/// shapes skipped and counted), in both dialects; the dialects' error shapes still end it.
final class UpstreamTextTests: UpstreamTestCase {
    private let counters = UpstreamTextCounters()

    private func openAI(_ body: [UInt8]) throws -> (events: [StreamEvent], upstream: SSEStreamUpstream<OpenAIDialect>) {
        let s = try server([Self.openAIPath: .init([.head(status: 200, contentType: "text/event-stream"), .send(body)])])
        let up = try HTTPUpstreamFactory(.openAI, config: config(s), multi: harness.multi, counters: counters)
            .makeUpstream(for: Self.question, loop: harness.loop)
        return (harness.collect(up), try XCTUnwrap(up as? SSEStreamUpstream<OpenAIDialect>))
    }

    private func anthropic(_ body: [UInt8]) throws -> (events: [StreamEvent], upstream: SSEStreamUpstream<AnthropicDialect>) {
        let s = try server([Self.anthropicPath: .init([.head(status: 200, contentType: "text/event-stream"), .send(body)])])
        let up = try HTTPUpstreamFactory(.anthropic, config: config(s), multi: harness.multi, counters: counters)
            .makeUpstream(for: Self.question, loop: harness.loop)
        return (harness.collect(up), try XCTUnwrap(up as? SSEStreamUpstream<AnthropicDialect>))
    }

    private var openAIEnd: String { OpenAIFixtures.finish("stop") + OpenAIFixtures.usage(prompt: 5, completion: 3) + OpenAIFixtures.done }
    private var anthropicEnd: String { AnthropicFixtures.blockStop + AnthropicFixtures.messageDelta(stop: "end_turn", output: 3) + AnthropicFixtures.messageStop }
    private var anthropicStart: String { AnthropicFixtures.messageStart(input: 5) + AnthropicFixtures.blockStart }

    /// The issue's case: `"\ud83d"`, then `"\ude00"` in the next delta.
    func testOpenAIEmojiSplitIntoTwoEscapedHalvesIsJoined() throws {
        let body = OpenAIFixtures.roleChunk + OpenAIFixtures.content("Smile ") + OpenAIFixtures.content("\\ud83d")
            + OpenAIFixtures.content("\\ude00") + OpenAIFixtures.content(" done") + openAIEnd
        let (events, up) = try openAI(body.bytes)
        XCTAssertEqual(events.text, "Smile 😀 done")
        XCTAssertTrue(events.deltas.contains("😀"), "the joined emoji goes out as one delta: \(events.deltas)")
        XCTAssertEqual(events.last, .done(finishReason: "stop", usage: Usage(promptTokens: 5, completionTokens: 3)))
        XCTAssertEqual(up.replacedSurrogateHalves, 0)
        XCTAssertEqual(counters.replacedSurrogateHalves, 0)
    }

    func testAnthropicEmojiSplitIntoTwoEscapedHalvesIsJoined() throws {
        let body = anthropicStart + AnthropicFixtures.text("Hi \\ud83d") + AnthropicFixtures.ping
            + AnthropicFixtures.text("\\ude00!") + anthropicEnd
        let (events, _) = try anthropic(body.bytes)
        XCTAssertEqual(events.deltas, ["Hi ", "😀!"])
        XCTAssertEqual(events.last, .done(finishReason: "stop", usage: Usage(promptTokens: 5, completionTokens: 3)))
    }

    /// An agent backend (`RELAY_UPSTREAM=ai-sdk`) that splits an emoji's surrogate pair across two
    /// `text-delta` chunks (or two `reasoning-delta` chunks) gets it joined, as the model APIs do.
    func testAISDKBackendEmojiSplitIntoTwoEscapedHalvesIsJoined() throws {
        func chunk(_ json: String) -> String { "data: \(json)\n\n" }
        let body = chunk(#"{"type":"reasoning-delta","id":"r","delta":"Think \ud83e"}"#) + chunk(#"{"type":"reasoning-delta","id":"r","delta":"\udd14"}"#)
            + chunk(#"{"type":"text-delta","id":"t","delta":"Smile \ud83d"}"#) + chunk(#"{"type":"text-delta","id":"t","delta":"\ude00 done"}"#)
            + chunk(#"{"type":"finish","finishReason":"stop"}"#) + "data: [DONE]\n\n"
        let s = try server(["/agent": .init([.head(status: 200, contentType: "text/event-stream"), .send(body.bytes)])])
        var c = config(s)
        c.baseURL = "\(s.baseURL)/agent"
        let up = try HTTPUpstreamFactory(.uiMessageStream, config: c, multi: harness.multi, counters: counters)
            .makeUpstream(for: Self.question, loop: harness.loop)
        let events = harness.collect(up)
        XCTAssertEqual(events.text, "Smile 😀 done")
        let reasoning = events.compactMap { e -> String? in if case .part(.reasoning(let t)) = e { return t }; return nil }.joined()
        XCTAssertEqual(reasoning, "Think 🤔")
        XCTAssertEqual(counters.replacedSurrogateHalves, 0)
        XCTAssertEqual(events.last.map { if case .done = $0 { return true } else { return false } }, true)
    }

    func testUnpairedHalvesBecomeReplacementCharacters() throws {
        // A high half followed by plain text, a lone low half, and a high half at the very end.
        let body = OpenAIFixtures.content("a\\ud83d") + OpenAIFixtures.content("b") + OpenAIFixtures.content("\\ude00c")
            + OpenAIFixtures.content("d\\udbff") + openAIEnd
        let (events, up) = try openAI(body.bytes)
        XCTAssertEqual(events.text, "a\u{FFFD}b\u{FFFD}cd\u{FFFD}")
        XCTAssertTrue(events.last?.isTerminal == true)
        if case .done = events.last {} else { XCTFail("not done: \(String(describing: events.last))") }
        XCTAssertEqual(up.replacedSurrogateHalves, 3)
        XCTAssertEqual(counters.replacedSurrogateHalves, 3)

        let (a, _) = try anthropic((anthropicStart + AnthropicFixtures.text("x\\udbff") + anthropicEnd).bytes)
        XCTAssertEqual(a.text, "x\u{FFFD}", "a half held at the end goes out as U+FFFD before done")
        if case .done = a.last {} else { XCTFail("not done: \(String(describing: a.last))") }
        XCTAssertEqual(counters.replacedSurrogateHalves, 4)
    }

    func testInvalidUTF8BecomesReplacementCharacters() throws {
        let bad: [UInt8] = [0x61, 0xFF, 0x62, 0xC3, 0x28, 0xED, 0xA0, 0x80]  // a, FF, b, C3 (, CESU-style surrogate
        func openAIChunk(_ raw: [UInt8]) -> [UInt8] {
            Array("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"".utf8) + raw + Array("\"}}]}\n\n".utf8)
        }
        let (events, _) = try openAI(openAIChunk(bad) + openAIEnd.bytes)
        XCTAssertEqual(events.text, "a\u{FFFD}b\u{FFFD}(\u{FFFD}\u{FFFD}\u{FFFD}")
        if case .done = events.last {} else { XCTFail("not done: \(String(describing: events.last))") }

        let anthropicChunk = Array("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"".utf8)
            + bad + Array("\"}}\n\n".utf8)
        let (a, _) = try anthropic(anthropicStart.bytes + anthropicChunk + anthropicEnd.bytes)
        XCTAssertEqual(a.text, "a\u{FFFD}b\u{FFFD}(\u{FFFD}\u{FFFD}\u{FFFD}")
        if case .done = a.last {} else { XCTFail("not done: \(String(describing: a.last))") }
    }

    func testOpenAIUnexpectedShapesAreSkippedAndCounted() throws {
        let odd = ["data: {\"choices\":[{\"delta\":{\"content\":42}}]}\n\n",
                   "data: [1,2,3]\n\n",
                   "data: \"just a string\"\n\n",
                   "data: {\"choices\":\"none\"}\n\n",
                   "data: {\"choices\":[7]}\n\n",
                   "data: {\"choices\":[{\"index\":0,\"delta\":\"text\"}]}\n\n",
                   "data: {\"usage\":{\"prompt_tokens\":\"many\"}}\n\n",
                   "data: null\n\n"]
        let body = OpenAIFixtures.content("ok") + odd.joined() + OpenAIFixtures.content(" still here") + openAIEnd
        let (events, up) = try openAI(body.bytes)
        XCTAssertEqual(events.deltas, ["ok", " still here"])
        XCTAssertEqual(events.last, .done(finishReason: "stop", usage: Usage(promptTokens: 5, completionTokens: 3)))
        XCTAssertEqual(up.skippedChunks, odd.count)
        XCTAssertEqual(counters.skippedChunks, odd.count)
    }

    func testAnthropicUnexpectedShapesAreSkippedAndCounted() throws {
        let odd = [AnthropicFixtures.event("content_block_delta", "{\"type\":\"content_block_delta\",\"index\":0}"),
                   AnthropicFixtures.event("content_block_delta", "{\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\"}}"),
                   AnthropicFixtures.event("content_block_delta", "{\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":[1]}}"),
                   AnthropicFixtures.event("message_delta", "{\"type\":\"message_delta\",\"usage\":{\"output_tokens\":\"x\"}}"),
                   AnthropicFixtures.event("content_block_delta", "[\"not an object\"]")]
        let body = anthropicStart + AnthropicFixtures.text("ok") + odd.joined() + AnthropicFixtures.text("!") + anthropicEnd
        let (events, up) = try anthropic(body.bytes)
        XCTAssertEqual(events.deltas, ["ok", "!"])
        XCTAssertEqual(events.last, .done(finishReason: "stop", usage: Usage(promptTokens: 5, completionTokens: 3)))
        XCTAssertEqual(up.skippedChunks, odd.count)
        XCTAssertEqual(counters.skippedChunks, odd.count)
    }

    /// The dialects' error shapes still end the answer, even with odd inner types.
    func testErrorShapesStillFail() throws {
        let (o, _) = try openAI((OpenAIFixtures.content("x") + "data: {\"error\":{\"message\":7,\"code\":429}}\n\n" + openAIEnd).bytes)
        assertEndsWithError(o, status: 502, code: "upstream_error", containing: "upstream 429")
        let (o2, _) = try openAI((OpenAIFixtures.content("x") + "data: {\"error\":\"boom\"}\n\n").bytes)
        assertEndsWithError(o2, status: 502, code: "upstream_error", containing: "boom")
        let (a, _) = try anthropic((anthropicStart + AnthropicFixtures.event("error", "{\"type\":\"error\",\"error\":\"x\"}") + anthropicEnd).bytes)
        assertEndsWithError(a, status: 502, code: "upstream_error", containing: "upstream error")
        XCTAssertEqual(counters.skippedChunks, 0)
    }
}
