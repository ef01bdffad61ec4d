import Foundation
import RelayClient
import RelayCore
import RelayTestKit
import RelayTestSupport
import RelayUpstream
import XCTest

/// The Swift kit against two real relays with the built-in agent answer (`simulated-tools`,
/// docs/PROTOCOL.md §5.5): a drop after every event — between parts, inside reasoning, inside
/// a tool call's arguments, right after a call's start — resumed on the other instance ends
/// with exactly the uninterrupted run's parts, in order, none twice, and its text.
final class ClientKitPartsTests: ClientKitTestCase {
    func testADropAfterEveryEventResumedOnTheOtherRelayHoldsExactlyTheAnswersParts() async throws {
        let env = ["RELAY_SIMULATED_TOKENS_PER_SECOND": "4000", "RELAY_BUFFER_EVENTS": "40"]
        let relays = [try startRelay(env), try startRelay(env)]
        let all = SimulatedAgentAnswer.events
        let wantParts = all.compactMap { e -> AnswerPart? in if case .part(let p) = e { return p } else { return nil } }
        let wantText = all.reduce(into: "") { s, e in if case .delta(let t) = e { s += t } }
        let clock = FastClock()
        for n in 1...all.count {
            let first = n % 2
            let sub = "kit-parts-\(n)"   // a user each: one user's monthly budget would run out
            let c = client(relays.map(\.port), token: { RelayProcess.token(sub: sub) }, clock: clock)
            let stream = c.startChat(request(maxTokens: 4000, model: "simulated-tools"),
                                     options: .init(dropAfterEvents: n, firstURLIndex: first))
            let out = try await collect(stream, timeout: 20)
            let partUpdates = out.updates.compactMap { u -> PartsUpdate? in if case .parts(let p) = u { return p } else { return nil } }
            XCTAssertEqual(partUpdates.map(\.part), wantParts, "drop after \(n): each part once, in order")
            XCTAssertEqual(stream.parts.parts, wantParts, "drop after \(n)")
            XCTAssertEqual(stream.parts.toolCalls.map(\.id), ["call_1", "call_2"], "drop after \(n)")
            XCTAssertTrue(stream.parts.toolCalls.allSatisfy { $0.input != nil && $0.output != nil }, "drop after \(n): calls whole")
            XCTAssertEqual(out.text, wantText, "drop after \(n): the text alone")
            XCTAssertEqual(out.completion, .finished(finishReason: "stop"), "drop after \(n)")
            XCTAssertGreaterThanOrEqual(out.telemetry?.reconnections ?? 0, n < all.count ? 1 : 0, "drop after \(n)")
        }
    }
}
