import Foundation
import RelayTestKit
import XCTest
import RelayCore
import RelayHTTP
@testable import RelayClient

/// A `done` cut by the token budget (`"budget_limited":true`, docs/PROTOCOL.md): the flag on the
/// final render update and the budget pill right after it. Virtual clock, no sleeps.
final class BudgetLimitedTests: XCTestCase {
    let limitedDone = #"{"type":"done","finish_reason":"length","usage":{"prompt_tokens":9,"completion_tokens":41,"total_tokens":50},"budget_limited":true}"#
    let plainLength = #"{"type":"done","finish_reason":"length","usage":{"prompt_tokens":9,"completion_tokens":41,"total_tokens":50}}"#

    func testFlagIsReadOnlyFromADoneWithJSONTrue() {
        XCTAssertTrue(BudgetLimitedFlag.isSet(inEventJSON: limitedDone))
        XCTAssertFalse(BudgetLimitedFlag.isSet(inEventJSON: plainLength))
        XCTAssertFalse(BudgetLimitedFlag.isSet(inEventJSON: #"{"type":"done","finish_reason":"length","budget_limited":false}"#))
        XCTAssertFalse(BudgetLimitedFlag.isSet(inEventJSON: #"{"type":"done","finish_reason":"length","budget_limited":1}"#))
        XCTAssertFalse(BudgetLimitedFlag.isSet(inEventJSON: #"{"type":"delta","content":"x","budget_limited":true}"#))
        XCTAssertFalse(BudgetLimitedFlag.isSet(inEventJSON: "not json"))
        XCTAssertEqual(try StreamEvent(json: limitedDone),
                       .done(finishReason: .length, usage: Usage(promptTokens: 9, completionTokens: 41, totalTokens: 50), budgetLimited: true),
                       "the typed event carries the flag")
        XCTAssertEqual(try StreamEvent(json: plainLength),
                       .done(finishReason: .length, usage: Usage(promptTokens: 9, completionTokens: 41, totalTokens: 50)))
        XCTAssertEqual(try StreamEvent(json: limitedDone).json, limitedDone, "encoded as the relay writes it")
        XCTAssertEqual(try StreamEvent(json: plainLength).json, plainLength)
    }

    func testFinalUpdateCarriesTheFlagAndReleasesTheHeldText() throws {
        var r = ResponseRenderer(now: 0)
        let first = r.receive(.delta("The tenant shall pay the rent on the first day of each "), now: 10)
        XCTAssertNil(first?.completion)
        XCTAssertEqual(first?.budgetLimited ?? false, false)
        _ = r.tick(now: 50)
        _ = r.receive(.delta("mon"), now: 60)
        let last = try XCTUnwrap(try r.receive(json: Data(limitedDone.utf8), now: 70))
        XCTAssertEqual(last.completion, .finished(finishReason: "length"))
        XCTAssertTrue(last.budgetLimited)
        XCTAssertTrue(r.budgetLimited)
        XCTAssertEqual(r.text, "The tenant shall pay the rent on the first day of each mon", "everything released at done")
        XCTAssertEqual(r.usage?.totalTokens, 50)
    }

    func testLengthWithoutTheFlagIsNotBudgetLimited() throws {
        var r = ResponseRenderer(now: 0)
        _ = r.receive(.delta("Short answer of more than thirty characters."), now: 10)
        let last = try XCTUnwrap(try r.receive(json: Data(plainLength.utf8), now: 20))
        XCTAssertEqual(last.completion, .finished(finishReason: "length"))
        XCTAssertFalse(last.budgetLimited)
        XCTAssertFalse(r.budgetLimited)
    }

    func testFlagSurvivesTheBackgroundAndComesWithTheReplay() throws {
        var r = ResponseRenderer(now: 0)
        r.enterBackground()
        _ = r.receive(.delta("Background text that is longer than thirty characters."), now: 10)
        XCTAssertNil(try r.receive(json: Data(limitedDone.utf8), now: 20), "nothing shown in the background")
        let replay = try XCTUnwrap(r.enterForeground(now: 30))
        XCTAssertEqual(replay.completion, .finished(finishReason: "length"))
        XCTAssertTrue(replay.budgetLimited)
    }

    func testBudgetDecodesReservedAndKeepsRemainingAsReported() throws {
        let b = try BudgetState(json: Data(#"{"tier":"free","limit":500,"used":200,"reserved":250,"remaining":50,"period":"2026-12"}"#.utf8))
        XCTAssertEqual(b.reserved, 250)
        XCTAssertEqual(b.remaining, 50)
        XCTAssertEqual(b.pillText, "~50 tokens remaining this month")
        let old = try BudgetState(json: Data(#"{"tier":"free","limit":500,"used":200,"remaining":300,"period":"month"}"#.utf8))
        XCTAssertEqual(old.reserved, 0, "a relay that sends no reserved: 0")
        let derived = try BudgetState(json: Data(#"{"limit":500,"used":200,"reserved":250}"#.utf8))
        XCTAssertEqual(derived.remaining, 50, "missing remaining is limit − used − reserved")
    }

    func testBudgetLimitedDoneLeavesNothingRemaining() {
        // Read before the answer: 300 left; a concurrent answer then reserved 260 and this
        // one was granted the last 40 + its prompt. Usage alone would leave 250 on the pill.
        var b = BudgetState(tier: "free", limit: 500, used: 200, reserved: 0, remaining: 300, period: "2026-12")
        var plain = b
        plain.apply(Usage(promptTokens: 9, completionTokens: 41), budgetLimited: false)
        XCTAssertEqual(plain.remaining, 250)
        b.apply(Usage(promptTokens: 9, completionTokens: 41), budgetLimited: true)
        XCTAssertEqual(b.used, 250)
        XCTAssertEqual(b.remaining, 0)
        XCTAssertFalse(b.canSend)
        XCTAssertEqual(b.pillText, "No tokens remaining this month")
        XCTAssertEqual(b.budgetLimitedNote, "Answer shortened: this month's token budget is used up")
        XCTAssertEqual(BudgetState.budgetLimitedNote(period: "day"), "Answer shortened: today's token budget is used up")
    }

    func testStreamShowsTheFlagAndTheEmptyPill() async throws {
        let relay = MockRelay()
        let sse = SSEFrame.event(seq: 1, json: StreamEvent.delta("Clause one of the lease ").json)
            + SSEFrame.event(seq: 2, json: StreamEvent.delta("runs until the end").json)
            + SSEFrame.event(seq: 3, json: limitedDone)
        relay.answer { req, _ in
            req.url!.path == "/api/budget"
                ? .init(contentType: "application/json", chunks: [Data(#"{"tier":"free","limit":500,"used":200,"reserved":0,"remaining":300,"period":"2026-12"}"#.utf8)])
                : .init(chunks: [Data(sse.utf8)])
        }
        let clock = VirtualClock()
        let c = RelayChatClient(baseURLs: [URL(string: "http://relay-a.test")!], tokenProvider: { _ in "tok" }, clock: clock,
                                transport: URLSessionTransport(configuration: relay.configuration), random: { 0 })
        _ = try await c.fetchBudget()
        let updates = await withRunningClock(clock) {
            await collect(c.startChat(ChatRequest(messages: [ChatMessage(role: "user", content: "lease")])))
        }
        let renders = updates.renders
        XCTAssertEqual(renders.last?.completion, .finished(finishReason: "length"))
        XCTAssertEqual(renders.last?.budgetLimited, true)
        XCTAssertEqual(renders.dropLast().filter(\.budgetLimited).count, 0, "only the final update carries the flag")
        XCTAssertEqual(updates.finalText, "Clause one of the lease runs until the end")
        let pill = updates.compactMap { u -> BudgetState? in if case .budget(let b) = u { return b }; return nil }.last
        XCTAssertEqual(pill?.remaining, 0)
        XCTAssertEqual(pill?.used, 250)
        XCTAssertEqual(pill?.canSend, false)
        XCTAssertEqual(c.budget?.pillText, "No tokens remaining this month")
    }
}
