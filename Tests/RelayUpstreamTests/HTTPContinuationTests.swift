import RelayTestSupport
import Foundation
import RelayConfiguration
import RelayCore
import RelayLoop
@testable import RelayUpstream
import XCTest

/// `HTTPUpstreamFactory.prepareContinuation` against test upstreams that speak each streaming
/// format and honour a final assistant message as their server documents
/// (`ContinuableAnswerUpstream`): the answer so far plus the continuation is the uninterrupted
/// answer at every token cut (nothing repeated, nothing dropped), the continuation asks for the
/// rest of the grant only, and an upstream that cannot continue refuses.
final class HTTPContinuationTests: UpstreamTestCase {
    static let answer = ContinuableAnswerUpstream.standard
    static let request = ChatRequest(messages: [ChatMessage(role: "user", content: "Summarise clause 3, please.")], maxTokens: 100)

    enum Fake { case anthropic(ContinuableAnswerUpstream), openAI(ContinuableAnswerUpstream.OpenAIServer) }

    /// A fake upstream answering `answer` as `fake`, and a factory pointed at it.
    func upstream(_ fake: Fake, continuation: HTTPContinuation?) throws -> (HTTPUpstreamFactory, FakeUpstreamServer) {
        let s = try server([:])
        var c = config(s)
        c.continuation = continuation
        switch fake {
        case .anthropic(let a):
            s.setResponder(Self.anthropicPath) { a.anthropicScript($0) }
            return (HTTPUpstreamFactory(.anthropic, config: c, multi: harness.multi), s)
        case .openAI(let kind):
            let a = Self.answer
            s.setResponder(Self.openAIPath) { a.openAIScript($0, as: kind) }
            return (HTTPUpstreamFactory(.openAI, config: c, multi: harness.multi), s)
        }
    }

    /// Cuts the uninterrupted answer after every delta (0…all), continues each cut and checks
    /// text so far + continuation == the answer, the request (prefill, max_tokens) and the
    /// continuation's own usage.
    func assertSeamlessAtEveryCut(_ fake: Fake, continuation: HTTPContinuation?,
                                  file: StaticString = #filePath, line: UInt = #line) throws {
        let (factory, s) = try upstream(fake, continuation: continuation)
        let first = harness.collect(try factory.makeUpstream(for: Self.request, loop: harness.loop))
        XCTAssertEqual(first.deltas, Self.answer.tokens, "the uninterrupted answer, one delta per token", file: file, line: line)
        let deltas = first.deltas
        var cutsAfterWhitespace = 0
        for k in 0...deltas.count {
            let soFar = AnswerSoFar(text: deltas[..<k].joined(), completionTokens: k)
            if soFar.text.last?.isWhitespace == true { cutsAfterWhitespace += 1 }
            let events = harness.collect(try factory.prepareContinuation(Self.request, soFar: soFar).make(loop: harness.loop))
            XCTAssertEqual(soFar.text + events.text, Self.answer.text,
                           "cut after \(k) tokens (\(soFar.text.debugDescription)): continuation \(events.text.debugDescription)",
                           file: file, line: line)
            XCTAssertEqual(events.filter(\.isTerminal).count, 1, file: file, line: line)
            guard case .done(let reason, let usage, _)? = events.last else {
                XCTFail("cut after \(k): ends with \(String(describing: events.last))", file: file, line: line)
                continue
            }
            XCTAssertEqual(reason, .stop, file: file, line: line)
            let prefill = ContinuationSeam.split(soFar.text).prefill
            // The model writes the held-back whitespace again: real tokens, reported as such.
            XCTAssertEqual(usage.completionTokens, Self.answer.continuation(after: prefill)?.count,
                           "the continuation's own tokens, as reported", file: file, line: line)
            let body = try XCTUnwrap(s.requests.last, file: file, line: line).json
            XCTAssertEqual(body["max_tokens"] as? Int, 100 - k, "the rest of the grant", file: file, line: line)
            let messages = body["messages"] as? [[String: Any]] ?? []
            if prefill.isEmpty {
                XCTAssertEqual(messages.count, 1, "nothing but whitespace so far: no assistant message", file: file, line: line)
            } else {
                XCTAssertEqual(messages.last?["role"] as? String, "assistant", file: file, line: line)
                XCTAssertEqual(messages.last?["content"] as? String, prefill, file: file, line: line)
            }
            let promptChars = Self.request.messages[0].content.count + prefill.count
            XCTAssertEqual(usage.promptTokens, promptChars, "the prompt as the upstream reports it, prefill included", file: file, line: line)
        }
        XCTAssertGreaterThanOrEqual(cutsAfterWhitespace, 4, "cuts right after whitespace are covered", file: file, line: line)
    }

    func testAnthropicPrefillContinuesWithoutRepeatingOrDroppingAToken() throws {
        try assertSeamlessAtEveryCut(.anthropic(Self.answer), continuation: nil)
    }

    func testVLLMContinueFinalMessageContinuesWithoutRepeatingOrDroppingAToken() throws {
        try assertSeamlessAtEveryCut(.openAI(.vllm), continuation: .vllm)
    }

    /// The same when the test upstream writes each token apart (one body piece per delta).
    func testAPacedPrefillContinuationIsSeamlessToo() throws {
        var paced = Self.answer
        paced.pauseMsPerToken = 1
        try assertSeamlessAtEveryCut(.anthropic(paced), continuation: nil)
    }

    func testLlamaServerFinalAssistantMessageContinuesWithoutRepeatingOrDroppingAToken() throws {
        try assertSeamlessAtEveryCut(.openAI(.llamaCpp), continuation: .llamaCpp)
    }

    /// The OpenAI-compatible default is `off`: no continuation is attempted, the stream ends
    /// with `upstream_lost` (the caller's handling of `ContinuationUnsupported`).
    func testOpenAICompatibleUpstreamDoesNotContinueByDefault() throws {
        let (factory, s) = try upstream(.openAI(.openAI), continuation: nil)
        XCTAssertEqual(factory.continuation, .off)
        XCTAssertThrowsError(try factory.prepareContinuation(Self.request, soFar: AnswerSoFar(text: "Clause 3", completionTokens: 2))) {
            XCTAssertTrue($0 is ContinuationUnsupported, "\($0)")
        }
        XCTAssertTrue(s.requests.isEmpty, "nothing sent")
    }

    func testAnthropicUpstreamConfiguredOffDoesNotContinue() throws {
        let (factory, s) = try upstream(.anthropic(Self.answer), continuation: .off)
        XCTAssertThrowsError(try factory.prepareContinuation(Self.request, soFar: AnswerSoFar(text: "Clause", completionTokens: 1))) {
            XCTAssertEqual(($0 as? ContinuationUnsupported)?.reason, "upstream anthropic: continuation off")
        }
        XCTAssertTrue(s.requests.isEmpty)
    }

    /// A mode of the other API (set programmatically) is refused like `off`.
    func testMismatchedModeDoesNotContinue() throws {
        let (factory, _) = try upstream(.openAI(.vllm), continuation: .anthropicPrefill)
        XCTAssertThrowsError(try factory.prepareContinuation(Self.request, soFar: AnswerSoFar(text: "x", completionTokens: 1))) {
            XCTAssertTrue($0 is ContinuationUnsupported)
        }
    }

    /// `max_tokens` is what the grant leaves: the continuation stops there with `length`.
    func testContinuationStopsAtTheRestOfTheGrant() throws {
        for fake in [Fake.anthropic(Self.answer), .openAI(.vllm)] {
            let (factory, s) = try upstream(fake, continuation: fake.isAnthropic ? nil : .vllm)
            let request = ChatRequest(messages: Self.request.messages, maxTokens: 11)
            let soFar = AnswerSoFar(text: Self.answer.tokens[..<8].joined(), completionTokens: 8)
            XCTAssertFalse(soFar.text.last!.isWhitespace, "a cut where the model need not write whitespace again")
            let events = harness.collect(try factory.prepareContinuation(request, soFar: soFar).make(loop: harness.loop))
            XCTAssertEqual(events.deltas, Array(Self.answer.tokens[8..<11]))
            XCTAssertEqual(s.requests.last?.json["max_tokens"] as? Int, 3)
            guard case .done(let reason, let usage, _)? = events.last else { return XCTFail("\(events)") }
            XCTAssertEqual(reason, .length)
            XCTAssertEqual(usage.completionTokens, 3)
        }
    }

    func testUsedUpGrantIsNotContinued() throws {
        let (factory, s) = try upstream(.anthropic(Self.answer), continuation: nil)
        let request = ChatRequest(messages: Self.request.messages, maxTokens: 5)
        XCTAssertThrowsError(try factory.prepareContinuation(request, soFar: AnswerSoFar(text: "Clause 3 of the lease", completionTokens: 5))) {
            XCTAssertTrue(($0 as? ContinuationUnsupported)?.reason.contains("used up") == true, "\($0)")
        }
        XCTAssertTrue(s.requests.isEmpty)
    }

    /// A model that refuses prefill (400) ends the continuation with `upstream_lost`, as an
    /// upstream that cannot continue, naming the upstream's reason.
    func testAnthropicModelWithoutPrefillEndsWithUpstreamLost() throws {
        var noPrefill = Self.answer
        noPrefill.prefillSupported = false
        let (factory, _) = try upstream(.anthropic(noPrefill), continuation: nil)
        let events = harness.collect(try factory.prepareContinuation(Self.request, soFar: AnswerSoFar(text: "Clause 3", completionTokens: 2))
            .make(loop: harness.loop))
        assertEndsWithError(events, status: 503, code: "upstream_lost", containing: "does not support assistant message prefill")
        XCTAssertTrue(events.deltas.isEmpty)
    }

    /// Only a refusal of the request's shape becomes `upstream_lost`; a server error stays
    /// `upstream_error`, as on a first call.
    func testContinuationServerErrorStaysUpstreamError() throws {
        let s = try server([Self.anthropicPath: Self.errorAnswer(529, AnthropicFixtures.apiError)])
        let factory = HTTPUpstreamFactory(.anthropic, config: config(s), multi: harness.multi)
        let events = harness.collect(try factory.prepareContinuation(Self.request, soFar: AnswerSoFar(text: "Clause", completionTokens: 1))
            .make(loop: harness.loop))
        assertEndsWithError(events, status: 502, code: "upstream_error", containing: "api_error")
    }

    /// A first call that gets a 400 is `upstream_error` as before: the refusal rule is the
    /// continuation's only.
    func testFirstCallRefusalStaysUpstreamError() throws {
        let s = try server([Self.anthropicPath: Self.errorAnswer(400, "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"bad\"}}")])
        let factory = HTTPUpstreamFactory(.anthropic, config: config(s), multi: harness.multi)
        let events = harness.collect(try factory.makeUpstream(for: Self.request, loop: harness.loop))
        assertEndsWithError(events, status: 502, code: "upstream_error", containing: "invalid_request_error")
    }
}

extension HTTPContinuationTests.Fake {
    var isAnthropic: Bool { if case .anthropic = self { return true } else { return false } }
}

/// The continuation request bodies, field by field, as the APIs document them.
final class HTTPContinuationBodyTests: XCTestCase {
    static let messages = [ChatMessage(role: "system", content: "Be brief."), ChatMessage(role: "user", content: "Clause 3?")]

    func json(_ bytes: [UInt8]) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any] ?? [:]
    }

    /// Messages API prefill: the final message is `{"role":"assistant","content":<text so far
    /// without trailing whitespace>}`; `system` stays a top-level field.
    func testAnthropicBodyEndsWithTheAssistantPrefill() {
        let b = json(AnthropicDialect.body(model: "claude-test", messages: Self.messages, maxTokens: 90,
                                           summaryInstruction: nil, prefill: "Clause 3 says"))
        XCTAssertEqual(b["system"] as? String, "Be brief.")
        XCTAssertEqual(b["max_tokens"] as? Int, 90)
        XCTAssertEqual(b["stream"] as? Bool, true)
        let m = b["messages"] as? [[String: String]] ?? []
        XCTAssertEqual(m, [["role": "user", "content": "Clause 3?"], ["role": "assistant", "content": "Clause 3 says"]])
        XCTAssertEqual(Set(b.keys), ["model", "max_tokens", "stream", "system", "messages"])
    }

    func testAnthropicBodyWithoutPrefillHasNoAssistantMessage() {
        let b = json(AnthropicDialect.body(model: "m", messages: Self.messages, maxTokens: 9, summaryInstruction: nil, prefill: ""))
        XCTAssertEqual((b["messages"] as? [[String: String]])?.map { $0["role"] ?? "" }, ["user"])
    }

    /// vLLM: the final assistant message plus `continue_final_message: true` and
    /// `add_generation_prompt: false` (vLLM refuses both true).
    func testVLLMBodyAsksToContinueTheFinalMessage() {
        let b = json(OpenAIDialect.body(model: "m", messages: Self.messages, maxTokens: 40, summaryInstruction: nil,
                                        prefill: "Clause 3 says", continuing: .vllm))
        XCTAssertEqual(b["continue_final_message"] as? Bool, true)
        XCTAssertEqual(b["add_generation_prompt"] as? Bool, false)
        XCTAssertEqual(b["max_tokens"] as? Int, 40)
        let m = b["messages"] as? [[String: String]] ?? []
        XCTAssertEqual(m.last, ["role": "assistant", "content": "Clause 3 says"])
        XCTAssertEqual(m.count, 3, "system stays a message for OpenAI-compatible servers")
    }

    /// llama-server: the final assistant message alone (its default prefill), no vLLM fields.
    func testLlamaServerBodyEndsWithTheAssistantMessageOnly() {
        let b = json(OpenAIDialect.body(model: "m", messages: Self.messages, maxTokens: nil, summaryInstruction: nil,
                                        prefill: "Clause 3 says", continuing: .llamaCpp))
        XCTAssertNil(b["continue_final_message"])
        XCTAssertNil(b["add_generation_prompt"])
        XCTAssertNil(b["max_tokens"])
        XCTAssertEqual((b["messages"] as? [[String: String]])?.last, ["role": "assistant", "content": "Clause 3 says"])
    }

    /// Nothing but whitespace so far: a plain request (an open final message would make vLLM
    /// continue the user's message).
    func testOpenAIBodyWithoutPrefillIsAPlainRequest() {
        let b = json(OpenAIDialect.body(model: "m", messages: Self.messages, maxTokens: 5, summaryInstruction: nil,
                                        prefill: "", continuing: .vllm))
        XCTAssertNil(b["continue_final_message"])
        XCTAssertNil(b["add_generation_prompt"])
        XCTAssertEqual((b["messages"] as? [[String: String]])?.count, 2)
    }

    /// First calls are unchanged: no prefill, no continuation fields.
    func testFirstCallBodiesCarryNoContinuationFields() {
        let o = json(OpenAIDialect.body(model: "m", messages: Self.messages, maxTokens: 5, summaryInstruction: nil))
        XCTAssertEqual(Set(o.keys), ["model", "messages", "stream", "stream_options", "max_tokens"])
    }

    /// Summary mode: the continuation keeps the summary instruction and the summary cap, minus
    /// the tokens so far.
    func testSummaryContinuationKeepsTheInstructionAndTheCap() throws {
        let s = try FakeUpstreamServer(routes: [:])
        defer { s.stop() }
        let answer = ContinuableAnswerUpstream.standard
        s.setResponder("/v1/messages") { answer.anthropicScript($0) }
        var c = HTTPUpstreamConfig(baseURL: s.baseURL, apiKey: "", defaultModel: "m")
        c.noProxy = "*"
        c.summaryMaxTokens = 12
        let harness = try LoopHarness()
        let factory = HTTPUpstreamFactory(.anthropic, config: c, multi: harness.multi)
        let request = ChatRequest(messages: [ChatMessage(role: "user", content: "Clause 3?")], maxTokens: 500, mode: .summary)
        let events = harness.collect(try factory.prepareContinuation(request, soFar: AnswerSoFar(text: "Clause 3", completionTokens: 2))
            .make(loop: harness.loop))
        let body = try XCTUnwrap(s.requests.last).json
        XCTAssertEqual(body["max_tokens"] as? Int, 10)
        XCTAssertEqual(body["system"] as? String, c.summaryInstruction)
        XCTAssertEqual(events.deltas, Array(answer.tokens[2..<12]))
    }
}

/// `RELAY_UPSTREAM_CONTINUATION` resolved per API.
final class HTTPContinuationSettingTests: XCTestCase {
    func testAutoIsPrefillForAnthropicAndOffForOpenAI() throws {
        XCTAssertEqual(try HTTPContinuation.resolve("auto", api: .anthropic), .anthropicPrefill)
        XCTAssertEqual(try HTTPContinuation.resolve("auto", api: .openAI), .off)
    }

    func testModesOfTheirOwnAPI() throws {
        XCTAssertEqual(try HTTPContinuation.resolve("vllm", api: .openAI), .vllm)
        XCTAssertEqual(try HTTPContinuation.resolve("llama-cpp", api: .openAI), .llamaCpp)
        XCTAssertEqual(try HTTPContinuation.resolve("anthropic-prefill", api: .anthropic), .anthropicPrefill)
        XCTAssertEqual(try HTTPContinuation.resolve("off", api: .anthropic), .off)
        XCTAssertEqual(try HTTPContinuation.resolve("off", api: .openAI), .off)
    }

    func testModesOfTheOtherAPIOrUnknownNamesAreConfigErrors() {
        for (v, api) in [("vllm", HTTPUpstreamFactory.API.anthropic), ("llama-cpp", .anthropic), ("anthropic-prefill", .openAI),
                         ("VLLM", .openAI), ("", .openAI)] {
            XCTAssertThrowsError(try HTTPContinuation.resolve(v, api: api)) {
                XCTAssertTrue("\($0)".contains("RELAY_UPSTREAM_CONTINUATION"), "\(v): \($0)")
            }
        }
    }

    func testTheConfigurationAcceptsExactlyTheModes() throws {
        XCTAssertEqual(RelayConfig.upstreamContinuationValues, HTTPContinuation.settingValues)
        let c = try RelayConfig.load(environment: ["RELAY_UPSTREAM_CONTINUATION": "vllm"], arguments: [], defaultWorkers: 1)
        XCTAssertEqual(c.upstreamContinuation, "vllm")
        XCTAssertEqual(try RelayConfig.load(environment: [:], arguments: [], defaultWorkers: 1).upstreamContinuation, "auto")
        XCTAssertThrowsError(try RelayConfig.load(environment: ["RELAY_UPSTREAM_CONTINUATION": "sometimes"], arguments: [], defaultWorkers: 1))
    }
}
