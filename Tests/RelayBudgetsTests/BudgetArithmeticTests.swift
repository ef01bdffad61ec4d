import RelayCore
import XCTest
@testable import RelayBudgets

/// `BudgetArithmetic`: the prompt estimate, the clamp at admission, the minimum, and
/// what settlements charge (docs/PROTOCOL.md "Reservation and settlement").
final class BudgetArithmeticTests: XCTestCase {
    func testPromptEstimateIsBytesOverFourRoundedUpPlusFourPerMessage() {
        XCTAssertEqual(ChatRequest.estimatePromptTokens([]), 0)
        XCTAssertEqual(ChatRequest.estimatePromptTokens([""]), 4)
        XCTAssertEqual(ChatRequest.estimatePromptTokens(["abcd"]), 5)
        XCTAssertEqual(ChatRequest.estimatePromptTokens(["abcde"]), 6, "rounded up")
        XCTAssertEqual(ChatRequest.estimatePromptTokens(["Draft a mutual NDA"]), 9, "18 bytes → 5 + 4")
        XCTAssertEqual(ChatRequest.estimatePromptTokens(["مرحبا"]), 3 + 4, "10 UTF-8 bytes → 3")
        XCTAssertEqual(ChatRequest.estimatePromptTokens(["a", "b", "c"]), 15)
    }

    func testWantedCompletionUsesTheDefaultAndTheCaps() {
        func want(_ m: Int?, summary: Bool = false) -> Int {
            BudgetArithmetic.wantedCompletion(maxTokens: m, summary: summary, defaultCap: 4096, cap: 4096, summaryCap: 400)
        }
        XCTAssertEqual(want(nil), 4096)
        XCTAssertEqual(want(100), 100)
        XCTAssertEqual(want(100_000), 4096, "over the cap: clamped")
        XCTAssertEqual(want(nil, summary: true), 400, "summary mode keeps its cap")
        XCTAssertEqual(want(3000, summary: true), 400)
        XCTAssertEqual(want(50, summary: true), 50)
    }

    func testGrantClampsToWhatRemainsAndRefusesBelowTheMinimum() {
        // Plenty left: the whole want, not limited.
        XCTAssertEqual(BudgetArithmetic.grant(promptEstimate: 9, wantedCompletion: 100, remaining: 1000, minimumCompletion: 16),
                       .init(reserved: 109, maxTokens: 100, limitedByBudget: false))
        // Budget 500, max_tokens 3000: clamped to 500 in all, 491 completion.
        XCTAssertEqual(BudgetArithmetic.grant(promptEstimate: 9, wantedCompletion: 3000, remaining: 500, minimumCompletion: 16),
                       .init(reserved: 500, maxTokens: 491, limitedByBudget: true))
        // Exactly the minimum left after the prompt: granted.
        XCTAssertEqual(BudgetArithmetic.grant(promptEstimate: 9, wantedCompletion: 100, remaining: 25, minimumCompletion: 16)?.maxTokens, 16)
        // One less: refused (429 before the stream).
        XCTAssertNil(BudgetArithmetic.grant(promptEstimate: 9, wantedCompletion: 100, remaining: 24, minimumCompletion: 16))
        XCTAssertNil(BudgetArithmetic.grant(promptEstimate: 9, wantedCompletion: 100, remaining: 0, minimumCompletion: 16))
        XCTAssertNil(BudgetArithmetic.grant(promptEstimate: 9, wantedCompletion: 100, remaining: -50, minimumCompletion: 16))
        // A request that wants less than the minimum needs only what it wants.
        XCTAssertEqual(BudgetArithmetic.grant(promptEstimate: 9, wantedCompletion: 5, remaining: 14, minimumCompletion: 16),
                       .init(reserved: 14, maxTokens: 5, limitedByBudget: false))
    }

    func testGrantFromTheLedgerSeenByATwinRequest() {
        let g = BudgetArithmetic.grant(reservedTokens: 500, promptEstimate: 9, wantedCompletion: 3000)
        XCTAssertEqual(g, .init(reserved: 500, maxTokens: 491, limitedByBudget: true))
        XCTAssertEqual(BudgetArithmetic.grant(reservedTokens: 109, promptEstimate: 9, wantedCompletion: 100),
                       .init(reserved: 109, maxTokens: 100, limitedByBudget: false))
        XCTAssertEqual(BudgetArithmetic.grant(reservedTokens: 5, promptEstimate: 9, wantedCompletion: 100).maxTokens, 1,
                       "never below 1")
    }

    func testSettlementCharges() {
        XCTAssertEqual(BudgetArithmetic.charge(reportedPrompt: 11, promptEstimate: 9, completion: 60), 71, "the upstream's prompt count wins")
        XCTAssertEqual(BudgetArithmetic.charge(reportedPrompt: nil, promptEstimate: 9, completion: 60), 69, "else the estimate")
        XCTAssertEqual(BudgetArithmetic.charge(reportedPrompt: nil, promptEstimate: 9, completion: -3), 9)
        // Owner died after 41 events (all deltas): upstream_lost is seq 42.
        XCTAssertEqual(BudgetArithmetic.chargeForLostStream(promptEstimate: 9, lastSeqBefore: 41), 50)
        XCTAssertEqual(BudgetArithmetic.chargeForLostStream(promptEstimate: 9, lastSeqBefore: 0), 9)
    }

    func testCompletionCapStopsAtTheGrantedCompletionTokens() {
        // Budget 2000, used 0, prompt 9, request max_tokens 4096: the budget sets the cap.
        let g = BudgetArithmetic.grant(promptEstimate: 9, wantedCompletion: 4096, remaining: 1500, minimumCompletion: 16)!
        let cap = BudgetArithmetic.CompletionCap(g)
        XCTAssertEqual(cap.granted, 1491)
        XCTAssertTrue(cap.limitedByBudget)
        XCTAssertFalse(cap.isReached(streamed: 0))
        XCTAssertFalse(cap.isReached(streamed: 1490))
        XCTAssertTrue(cap.isReached(streamed: 1491), "the grant-th delta is the last one streamed")
        XCTAssertTrue(cap.isReached(streamed: 4500))
        let end = cap.ending(reportedPrompt: nil, promptEstimate: 9, streamed: 1491)
        XCTAssertEqual(end.finishReason, "length")
        XCTAssertEqual(end.usage, Usage(promptTokens: 9, completionTokens: 1491))
        // What settlement charges for it fits in the reservation: never above the remaining budget.
        XCTAssertEqual(BudgetArithmetic.charge(reportedPrompt: nil, promptEstimate: 9, completion: end.usage.completionTokens), g.reserved)
        XCTAssertEqual(cap.ending(reportedPrompt: 12, promptEstimate: 9, streamed: 1491).usage.totalTokens, 1503,
                       "the upstream's prompt count is used when it reported one")
    }

    func testCompletionCapSetByTheRequestIsNotBudgetLimited() {
        let g = BudgetArithmetic.grant(promptEstimate: 9, wantedCompletion: 300, remaining: 20000, minimumCompletion: 16)!
        let cap = BudgetArithmetic.CompletionCap(g)
        XCTAssertEqual(cap.granted, 300)
        XCTAssertFalse(cap.limitedByBudget, "plain length: the request's own max_tokens set the cap")
        XCTAssertFalse(cap.isReached(streamed: 299))
        XCTAssertTrue(cap.isReached(streamed: 300))
        // A grant taken from a retried id's reservation keeps at least one token.
        let retried = BudgetArithmetic.CompletionCap(BudgetArithmetic.grant(reservedTokens: 5, promptEstimate: 9, wantedCompletion: 300))
        XCTAssertEqual(retried.granted, 1)
        XCTAssertTrue(retried.limitedByBudget)
        XCTAssertTrue(retried.isReached(streamed: 1))
    }
}
