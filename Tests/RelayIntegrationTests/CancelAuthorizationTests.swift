import Foundation
import RelayAuth
import RelayTestKit
import RelayTestSupport
import XCTest

/// A `DELETE /api/chat/stream/{id}` (docs/PROTOCOL.md §7) is refused `401` with a token of a
/// revoked session (§9.5), and a refused `DELETE` changes nothing: it leaves no cancel marker
/// that would stop the user's next stream of that id started from another, valid session.
final class CancelAuthorizationTests: RelayTestCase {
    static let adminKey = "admin-key-for-tests-0123456789"

    func testRevokedSessionsStopLeavesNoCancelMarker() throws {
        let relay = try startRelay(["RELAY_ADMIN_KEY": Self.adminKey])
        let revokedSid = "s-revoked-" + UUID().uuidString
        let revokedToken = RelayProcess.token(sub: "carol", sid: revokedSid)
        let revoke = try HTTPClient.request(port: relay.port, method: "POST", path: "/admin/sessions/\(revokedSid)/revoke",
                                            headers: [("Authorization", "Bearer \(Self.adminKey)")])
        XCTAssertEqual(revoke.status, 202)
        let id = Chat.newID()
        let stop = try HTTPClient.request(port: relay.port, method: "DELETE", path: "/api/chat/stream/\(id)",
                                          headers: [("Authorization", "Bearer \(revokedToken)")])
        XCTAssertEqual(stop.status, 401, "a revoked session's stop is refused")
        let scoped = "\(OwnerHash.of("carol")):\(id)"
        XCTAssertEqual(try redis.cli("EXISTS", "relay:{\(scoped)}:cancel"), "0", "the refused stop left a cancel marker")
        // The same user's next question with that id, from a valid session, is answered.
        let c = try Chat.start(port: relay.port, token: RelayProcess.token(sub: "carol"), requestID: id, maxTokens: 5)
        defer { c.close() }
        XCTAssertEqual(c.status, 200)
        var last = ""
        while let e = try c.nextEvent() {
            last = e.data
            if isTerminal(e) { break }
        }
        XCTAssertFalse(last.contains("\"cancelled\""), "the answer was stopped by the refused DELETE: \(last)")
    }
}
