import RelayTestSupport
import Foundation
import RelayCore
@testable import RelayUpstream
import XCTest

/// A request's sampling fields reach the upstream under the names its API takes
/// (docs/UPSTREAMS.md): OpenAI-compatible servers get each as sent; Anthropic's Messages API
/// gets `temperature`, `top_p` and `stop_sequences`, and a field it lacks is refused before
/// any call, as a client error.
final class SamplingForwardingTests: UpstreamTestCase {
    private static let sampled = ChatRequest(messages: [ChatMessage(role: "user", content: "Hi")], model: "m",
                                             sampling: SamplingParameters(temperature: 0.3, topP: 0.9, stop: ["END", "\n\n"], seed: 7,
                                                                          presencePenalty: 0.5, frequencyPenalty: -0.5))

    func testAnOpenAICompatibleUpstreamGetsEveryFieldAsSent() throws {
        let (_, s) = try runOpenAI(Self.sse(OpenAIFixtures.normal), request: Self.sampled)
        let json = try XCTUnwrap(s.requests.first).json
        XCTAssertEqual(json["temperature"] as? Double, 0.3)
        XCTAssertEqual(json["top_p"] as? Double, 0.9)
        XCTAssertEqual(json["stop"] as? [String], ["END", "\n\n"])
        XCTAssertEqual(json["seed"] as? Int, 7)
        XCTAssertEqual(json["presence_penalty"] as? Double, 0.5)
        XCTAssertEqual(json["frequency_penalty"] as? Double, -0.5)
    }

    func testFieldsNotSentAreNotInTheUpstreamBody() throws {
        let (_, s) = try runOpenAI(Self.sse(OpenAIFixtures.normal))
        let json = try XCTUnwrap(s.requests.first).json
        for name in SamplingParameters.names { XCTAssertNil(json[name], name) }
    }

    func testAnthropicGetsTemperatureTopPAndStopSequences() throws {
        var req = Self.sampled
        req.sampling.seed = nil
        req.sampling.presencePenalty = nil
        req.sampling.frequencyPenalty = nil
        let (_, s) = try runAnthropic(Self.sse(AnthropicFixtures.normal), request: req)
        let json = try XCTUnwrap(s.requests.first).json
        XCTAssertEqual(json["temperature"] as? Double, 0.3)
        XCTAssertEqual(json["top_p"] as? Double, 0.9)
        XCTAssertEqual(json["stop_sequences"] as? [String], ["END", "\n\n"])
        XCTAssertNil(json["stop"])
    }

    func testAnthropicRefusesWhatItsAPILacksBeforeAnyCall() throws {
        let factory = HTTPUpstreamFactory(.anthropic, config: HTTPUpstreamConfig(baseURL: "http://127.0.0.1:9", apiKey: ""), multi: harness.multi)
        func refusal(_ change: (inout SamplingParameters) -> Void) -> String? {
            var req = ChatRequest(messages: [ChatMessage(role: "user", content: "Hi")], model: "m")
            change(&req.sampling)
            do { _ = try factory.prepare(req); return nil } catch let e as APIError { return e.message } catch { return "\(error)" }
        }
        XCTAssertEqual(refusal { $0.seed = 1 }, #""seed" is not supported by the anthropic upstream"#)
        XCTAssertEqual(refusal { $0.presencePenalty = 0 }, #""presence_penalty" is not supported by the anthropic upstream"#)
        XCTAssertEqual(refusal { $0.frequencyPenalty = 1 }, #""frequency_penalty" is not supported by the anthropic upstream"#)
        XCTAssertEqual(refusal { $0.temperature = 1.5 }, #""temperature" must be from 0 to 1 for the anthropic upstream"#)
        XCTAssertNil(refusal { $0.temperature = 1 })
    }
}

/// Image parts reach each API in its own shape (docs/UPSTREAMS.md).
final class ImagePartForwardingTests: UpstreamTestCase {
    private static let withImage = ChatRequest(messages: [ChatMessage(role: "user", parts: [
        .text("Describe "), .imageURL("https://example.com/cat.png", detail: "high")])], model: "m")

    func testOpenAIGetsThePartsAsSent() throws {
        let (_, s) = try runOpenAI(Self.sse(OpenAIFixtures.normal), request: Self.withImage)
        let content = try XCTUnwrap((s.requests.first?.json["messages"] as? [[String: Any]])?.first?["content"] as? [[String: Any]])
        XCTAssertEqual(content.first?["type"] as? String, "text")
        XCTAssertEqual(content.first?["text"] as? String, "Describe ")
        XCTAssertEqual(content.last?["type"] as? String, "image_url")
        XCTAssertEqual((content.last?["image_url"] as? [String: String]), ["url": "https://example.com/cat.png", "detail": "high"])
    }

    func testAnthropicGetsImageBlocksBySourceURL() throws {
        let (_, s) = try runAnthropic(Self.sse(AnthropicFixtures.normal), request: Self.withImage)
        let content = try XCTUnwrap((s.requests.first?.json["messages"] as? [[String: Any]])?.first?["content"] as? [[String: Any]])
        XCTAssertEqual(content.first?["text"] as? String, "Describe ")
        XCTAssertEqual(content.last?["type"] as? String, "image")
        XCTAssertEqual(content.last?["source"] as? [String: String], ["type": "url", "url": "https://example.com/cat.png"])
    }

    func testAPlainMessageStaysAString() throws {
        let (_, s) = try runAnthropic(Self.sse(AnthropicFixtures.normal))
        XCTAssertNotNil((s.requests.first?.json["messages"] as? [[String: Any]])?.first?["content"] as? String)
    }
}
