import XCTest
@testable import RelayServer

/// The "register, then check" re-read of a revocation marker fails closed.
final class RevocationRecheckTests: XCTestCase {
    func testTheMarkerDecidesAndAFailedReadFailsClosed() {
        XCTAssertEqual(RevocationRecheck.outcome(isRevoked: false), .valid)
        XCTAssertEqual(RevocationRecheck.outcome(isRevoked: true), .revoked)
        XCTAssertEqual(RevocationRecheck.outcome(isRevoked: nil), .unknown)
    }

    func testEveryLiveSessionIsRecheckedOnce() {
        XCTAssertEqual(RevocationRecheck.sessionsToRecheck(subscriptions: ["s1", "s2", "s1"], generations: ["s2", "s3"]),
                       ["s1", "s2", "s3"])
        XCTAssertEqual(RevocationRecheck.sessionsToRecheck(subscriptions: [], generations: []), [])
    }
}
