import RelayCore
import RelayLoop
import XCTest
@testable import RelayUpstream

/// The built-in agent answer (`simulated-tools`, docs/UPSTREAMS.md): reasoning, two tool
/// calls whose arguments arrive in pieces, a source, then text; the same every time; cut at
/// `max_tokens` counting reasoning and argument pieces; continued event for event.
final class SimulatedAgentAnswerTests: XCTestCase {
    private let request = ChatRequest(messages: [ChatMessage(role: "user", content: "Draft a mutual NDA")], model: "simulated-tools")

    func testTheAnswerKeepsThePartRulesOfTheProtocol() throws {
        let events = SimulatedAgentAnswer.events
        guard case .part(.reasoning)? = events.first else { return XCTFail("reasoning first") }
        var open: [String: String] = [:]
        var ended: [String: JSONValue] = [:]
        var sawText = false
        for e in events {
            switch e {
            case .part(.toolCallStart(let id, _)):
                XCTAssertNil(open[id]); XCTAssertNil(ended[id], "ids are unique")
                open[id] = ""
            case .part(.toolCallDelta(let id, let a)):
                XCTAssertNotNil(open[id], "a delta follows its start")
                open[id]! += a
            case .part(.toolCallEnd(let id, _, let input)):
                XCTAssertEqual(try LenientJSON.parse(try XCTUnwrap(open[id])), input, "input is the arguments parsed")
                open[id] = nil
                ended[id] = input
            case .part(.toolResult(let id, _)):
                XCTAssertNotNil(ended[id], "a result follows its call's end")
            case .delta: sawText = true
            default: XCTAssertFalse(sawText, "parts before the text")
            }
        }
        XCTAssertEqual(open, [:], "every call ends")
        XCTAssertEqual(ended.count, 2)
        XCTAssertTrue(events.filter { if case .part(.toolCallDelta) = $0 { return true } else { return false } }.count >= 6,
                      "arguments over many pieces")
        XCTAssertTrue(sawText)
    }

    private func run(_ plan: UpstreamPlan) throws -> [StreamEvent] {
        let h = try LoopHarness()
        return h.collect(try plan.make(loop: h.loop))
    }

    func testItStreamsEveryEventThenDoneWithTheTokensOfTextReasoningAndArguments() throws {
        let f = SimulatedUpstreamFactory(tokensPerSecond: 100_000)
        let got = try run(try f.prepare(request))
        XCTAssertEqual(Array(got.dropLast()), SimulatedAgentAnswer.events)
        guard case .done(let reason, let usage, _)? = got.last else { return XCTFail("done last") }
        XCTAssertEqual(reason, .stop)
        XCTAssertEqual(usage.completionTokens, SimulatedAgentAnswer.tokens(inFirst: SimulatedAgentAnswer.events.count))
        XCTAssertEqual(try run(try f.prepare(request)), got, "deterministic")
    }

    func testMaxTokensCutsAfterThatManyTokensWithLength() throws {
        let f = SimulatedUpstreamFactory(tokensPerSecond: 100_000)
        var r = request
        r.maxTokens = 45
        let got = try run(try f.prepare(r))
        guard case .done(let reason, let usage, _)? = got.last else { return XCTFail("done last") }
        XCTAssertEqual(reason, .length)
        XCTAssertEqual(usage.completionTokens, 45)
        XCTAssertEqual(Array(got.dropLast()), Array(SimulatedAgentAnswer.events.prefix(SimulatedAgentAnswer.count(maxTokens: 45))))
        XCTAssertTrue(SimulatedAgentAnswer.isToken(got[got.count - 2]), "the cut falls right after the last token")
    }

    /// From every cut, the continuation streams exactly the rest; anything but the answer's
    /// own first events is refused.
    func testAContinuationFromEveryCutStreamsExactlyTheRest() throws {
        let f = SimulatedUpstreamFactory(tokensPerSecond: 100_000)
        let all = SimulatedAgentAnswer.events
        for k in stride(from: 0, through: all.count, by: 5) {
            let soFar = AnswerSoFar(events: Array(all.prefix(k)), completionTokens: SimulatedAgentAnswer.tokens(inFirst: k))
            let rest = try run(try f.prepareContinuation(request, soFar: soFar))
            XCTAssertEqual(Array(rest.dropLast()), Array(all.dropFirst(k)), "from \(k)")
            guard case .done(_, let usage, _)? = rest.last else { return XCTFail("done") }
            XCTAssertEqual(usage.completionTokens, SimulatedAgentAnswer.tokens(inFirst: all.count) - SimulatedAgentAnswer.tokens(inFirst: k))
        }
        let wrong = AnswerSoFar(events: [.delta("Hello")], completionTokens: 1)
        XCTAssertThrowsError(try f.prepareContinuation(request, soFar: wrong)) { XCTAssertTrue($0 is ContinuationUnsupported) }
    }
}
