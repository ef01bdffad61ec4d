import Foundation
import RelayAuth
import RelayBudgets
import RelayCore
import RelayTestSupport
import XCTest

/// What the takeover, orphan-sweep, stall and budget tests check of an answer and its
/// ledger, in one home.
extension RelayTestCase {
    /// The budget hash of `sub` this month (docs/DATA_MODEL.md §9).
    func budgetKey(_ sub: String) -> String {
        "relay:budget:{u:\(OwnerHash.of(sub))}:\(BudgetPolicy.period(now: Int64(Date().timeIntervalSince1970)))"
    }

    /// `used` and `reserved` of `sub`'s budget this month, tokens.
    func ledger(_ sub: String) throws -> (used: Int, reserved: Int) {
        let k = budgetKey(sub)
        return (Int(try redis.cli("HGET", k, "used")) ?? 0, Int(try redis.cli("HGET", k, "reserved")) ?? 0)
    }

    /// The relay's prompt estimate of `Chat.body`'s one message, tokens.
    var promptEstimate: Int { ChatRequest.estimatePromptTokens(["Draft a mutual NDA"]) }

    /// Sum of `name` over `relays` (a killed relay counts 0).
    func total(_ relays: [RelayProcess], _ name: String) -> Double {
        relays.reduce(0) { $0 + ((try? metricSum($1, name)) ?? 0) }
    }

    /// How a reader read the answer whose events `assertWhole` checks.
    enum AnswerReader {
        /// It kept up from the start: seq 1, 2, 3 … every one.
        case live
        /// It read after the fact (a resume from 0 once the answer ended or its owner died):
        /// every seq once, consecutive, the part behind the window read back from the text.
        case late
        /// It reconnected mid-answer (a client stopped with its relay): seqs ascending, none
        /// twice; a backed-up link may have had live deltas coalesced (PROTOCOL §4.3), which
        /// the text check covers.
        case reconnected
    }

    /// Checks one reader's events: the seqs as `reader` allows, ending with `done`
    /// (`length`, `maxTokens` completion tokens), the text byte-identical to the simulated
    /// document's first `maxTokens` tokens.
    func assertWhole(_ events: [SSEMessage], maxTokens: Int, _ what: String, reader: AnswerReader = .live,
                     file: StaticString = #filePath, line: UInt = #line) {
        let seqs = events.compactMap { UInt64($0.lastEventId) }
        switch reader {
        case .live:
            assertSequence(events, file: file, line: line)
            XCTAssertEqual(events.count, maxTokens + 1, "\(what): one event per token and done", file: file, line: line)
        case .late, .reconnected:
            XCTAssertEqual(seqs, seqs.sorted(), "\(what): seqs ascending", file: file, line: line)
            XCTAssertEqual(Set(seqs).count, seqs.count, "\(what): no seq twice", file: file, line: line)
            if reader == .late, let first = seqs.first, let last = seqs.last, first <= last {
                XCTAssertEqual(seqs, Array(first...last), "\(what): no seq skipped, behind the window either", file: file, line: line)
            }
            XCTAssertEqual(seqs.last, UInt64(maxTokens + 1), "\(what): done is the last seq", file: file, line: line)
        }
        guard case .done(.length, let usage, _)? = try? StreamEvent(json: events.last?.data ?? "") else {
            return XCTFail("\(what): ends with done, got \(events.suffix(1).map(\.data))", file: file, line: line)
        }
        XCTAssertEqual(usage.completionTokens, maxTokens, "\(what): usage counts the whole answer", file: file, line: line)
        XCTAssertTrue(Chat.text(events) == referenceText(maxTokens: maxTokens), "\(what): byte-identical to an uninterrupted answer",
                      file: file, line: line)
    }
}
