import RelayCore
import XCTest
@testable import RelayUpstream

/// The part-heavy bench answer (`simulated-bench-parts`, `BenchPartsAnswer`): cycles of
/// 10 `reasoning`, a tool call (`tool_call_start`, 24 `tool_call_delta`, `tool_call_end`)
/// and 4 `delta`s; every reasoning piece, argument piece and delta carries the bench stamp
/// `t=<µs>;n=<k>;` with `k` counting the stamped events, which the load generator reads from
/// parts as from deltas.
final class BenchPartsAnswerTests: XCTestCase {
    private static let micros: UInt64 = 1_733_000_000_123_456

    /// The first `count` events, every stamp sent at `micros + i` (event `i`).
    private func events(_ count: Int) -> [StreamEvent] {
        var answer = BenchPartsAnswer()
        return (0..<count).map { answer.event($0, micros: Self.micros + UInt64($0)) }
    }

    private func slot(_ e: StreamEvent) -> BenchPartsAnswer.Slot? {
        switch e {
        case .part(.reasoning): return .reasoning
        case .part(.toolCallStart): return .toolCallStart
        case .part(.toolCallDelta): return .toolCallDelta
        case .part(.toolCallEnd): return .toolCallEnd
        case .delta: return .delta
        default: return nil
        }
    }

    /// The text that carries an event's stamp: a reasoning piece, an argument piece, a delta.
    private func stampedText(_ e: StreamEvent) -> String? {
        switch e {
        case .part(.reasoning(let c)): return c
        case .part(.toolCallDelta(_, let a)): return a
        case .delta(let c): return c
        default: return nil
        }
    }

    /// `t` and `n` of the first `t=<digits>;n=<digits>;` in `text`, as the load generator reads them.
    private func firstStamp(in text: String) -> (t: UInt64, n: Int)? {
        guard let r = text.range(of: "t=") else { return nil }
        let rest = text[r.upperBound...]
        let fields = rest.split(separator: ";", maxSplits: 2)
        guard fields.count >= 2, let t = UInt64(fields[0]), fields[1].hasPrefix("n="), let n = Int(fields[1].dropFirst(2)) else { return nil }
        return (t, n)
    }

    func testEventKindsFollowTheCycleReasoningThenOneToolCallThenText() {
        let expected: [BenchPartsAnswer.Slot] = Array(repeating: .reasoning, count: 10) + [.toolCallStart]
            + Array(repeating: .toolCallDelta, count: 24) + [.toolCallEnd] + Array(repeating: .delta, count: 4)
        XCTAssertEqual(BenchPartsAnswer.cycle, expected)
        XCTAssertEqual(events(3 * 40 + 7).map(slot), (expected + expected + expected + expected.prefix(7)).map { $0 })
    }

    func testMostEventsAreReasoningAndArgumentPartsAndFewAreFraming() {
        let all = events(400)
        let reasoningOrArguments = all.filter { [.reasoning, .toolCallDelta].contains(slot($0)) }.count
        let framing = all.filter { [.toolCallStart, .toolCallEnd].contains(slot($0)) }.count
        let text = all.filter { slot($0) == .delta }.count
        XCTAssertEqual([reasoningOrArguments, framing, text], [340, 20, 40])
    }

    func testEveryStampedEventCarriesTheStampOfADeltaWithConsecutiveIndices() throws {
        var k = 0
        for (i, e) in events(200).enumerated() {
            guard let text = stampedText(e) else { continue }
            k += 1
            let stamp = BenchUpstream.content(micros: Self.micros + UInt64(i), k: k)
            XCTAssertTrue(text.contains(stamp), "event \(i): \(text)")
            XCTAssertEqual(text.utf8.count - stamp.utf8.count, text.hasPrefix("{") ? 10 : (text.hasSuffix("\"}") ? 2 : 0),
                           "event \(i): the stamp, plus the arguments' head or tail at a call's first or last piece")
        }
        XCTAssertEqual(k, BenchPartsAnswer.stamps(inFirst: 200))
        XCTAssertEqual(k, 5 * 38)
    }

    func testThePayloadIsTheFirstStampInEachStampedEventsJSONAndFramingCarriesNone() throws {
        var k = 0
        for (i, e) in events(120).enumerated() {
            let json = e.json
            switch slot(e) {
            case .toolCallStart?:
                XCTAssertFalse(json.contains("t="), "no stamp in a call's start: \(json)")
            case .toolCallEnd?:
                // Its input holds the call's stamps; the load generator never reads a stamp from it.
                XCTAssertTrue(json.hasPrefix("{\"type\":\"tool_call_end\",\"id\":\"call_"), json)
            default:
                k += 1
                let s = try XCTUnwrap(firstStamp(in: json), json)
                XCTAssertEqual(s.t, Self.micros + UInt64(i), json)
                XCTAssertEqual(s.n, k, json)
                XCTAssertEqual(json.components(separatedBy: "t=").count, 2, "one stamp per event: \(json)")
            }
            // The part decodes as the relay reads it back from storage.
            XCTAssertEqual(try StreamEvent(json: json), e)
        }
    }

    func testEachCallsArgumentsParseToItsEndsInputAndIdsCountCalls() throws {
        var arguments: [String: String] = [:]
        var ended: [String] = []
        for e in events(3 * 40) {
            switch e {
            case .part(.toolCallStart(let id, let name)):
                XCTAssertEqual(name, BenchPartsAnswer.toolName)
                XCTAssertNil(arguments[id])
                arguments[id] = ""
            case .part(.toolCallDelta(let id, let a)):
                arguments[id]! += try XCTUnwrap(a as String?)
            case .part(.toolCallEnd(let id, let name, let input)):
                XCTAssertEqual(name, BenchPartsAnswer.toolName)
                let parsed = try LenientJSON.parse(try XCTUnwrap(arguments[id]))
                XCTAssertEqual(parsed, input, "input is the arguments parsed")
                XCTAssertEqual(input["query"]?.stringValue?.utf8.count, 24 * BenchUpstream.tokenBytes)
                ended.append(id)
            default: break
            }
        }
        XCTAssertEqual(ended, ["call_1", "call_2", "call_3"])
    }

    func testStampsCountTheStampedEventsOfAnyPrefix() {
        let all = events(95)
        for n in 0...95 {
            XCTAssertEqual(BenchPartsAnswer.stamps(inFirst: n), all.prefix(n).filter { stampedText($0) != nil }.count, "first \(n)")
        }
        XCTAssertEqual(BenchPartsAnswer.stamps(inFirst: 1_000), 25 * 38)
        XCTAssertEqual(BenchPartsAnswer.stamps(inFirst: -1), 0)
    }

    func testTheModelStreamsMaxTokensEventsThenLengthWithTheStampedEventsAsTokens() throws {
        let f = SimulatedUpstreamFactory(tokensPerSecond: 100_000)
        let request = ChatRequest(messages: [ChatMessage(role: "user", content: "bench")], model: SimulatedDocuments.benchPartsModel, maxTokens: 100)
        let h = try LoopHarness()
        let got = h.collect(try f.prepare(request).make(loop: h.loop))
        XCTAssertEqual(got.count, 101)
        XCTAssertEqual(got.dropLast().map(slot), events(100).map(slot))
        guard case .done(let reason, let usage, _)? = got.last else { return XCTFail("done last") }
        XCTAssertEqual(reason, .length)
        XCTAssertEqual(usage.completionTokens, BenchPartsAnswer.stamps(inFirst: 100))
        XCTAssertEqual(usage.completionTokens, 95)
        let ns = got.compactMap(stampedText).compactMap { firstStamp(in: $0)?.n }
        XCTAssertEqual(ns, Array(1...95), "indices from 1, none skipped")
    }

    func testTheBenchModelsAreReservedAndNotContinued() {
        XCTAssertEqual(SimulatedDocuments.benchPartsModel, "simulated-bench-parts")
        XCTAssertNil(SimulatedDocuments.document(forModel: SimulatedDocuments.benchPartsModel))
        let f = SimulatedUpstreamFactory(tokensPerSecond: 100_000)
        let request = ChatRequest(messages: [ChatMessage(role: "user", content: "bench")], model: SimulatedDocuments.benchPartsModel)
        XCTAssertThrowsError(try f.prepareContinuation(request, soFar: AnswerSoFar(text: "", completionTokens: 0))) {
            XCTAssertTrue($0 is ContinuationUnsupported, "\($0)")
        }
    }
}
