import XCTest
@testable import RelayClient

/// `LateResumeRule` (conformance/CLIENT_RULES.md "Late resume"): an unfinished answer idle
/// > 5 minutes resumes once if the app was in the background since its last event, and
/// follows the idle rule otherwise.
final class LateResumeRuleTests: XCTestCase {
    func testEveryCombination() {
        let limit = ReconnectPolicy.idleLimitMs
        for bg in [false, true] {
            for made in [false, true] {
                for fg in [false, true] {
                    XCTAssertEqual(LateResumeRule.decide(idleMs: limit, backgroundSinceLastEvent: bg, lateResumeMade: made, foreground: fg),
                                   .proceed, "exactly 5 min is not late")
                    let want: LateResumeRule.Decision = made ? .proceed : !bg ? .needsResume : fg ? .lateResume : .waitForForeground
                    XCTAssertEqual(LateResumeRule.decide(idleMs: limit + 1, backgroundSinceLastEvent: bg, lateResumeMade: made, foreground: fg),
                                   want, "bg \(bg) made \(made) fg \(fg)")
                }
            }
        }
        XCTAssertTrue(LateResumeRule.expired(status: 404))
        XCTAssertTrue(LateResumeRule.expired(status: 204))
        XCTAssertFalse(LateResumeRule.expired(status: 503))
        XCTAssertFalse(LateResumeRule.expired(status: 409))
    }
}
