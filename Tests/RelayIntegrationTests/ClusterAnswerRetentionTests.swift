import Foundation
import RelayAuth
import RelayCluster
import RelayCore
import RelayTestKit
import RelayTestSupport
import XCTest

/// Retained answers on a Redis Cluster (docs/DATA_MODEL.md §11, §14): the record is written by
/// the final append on its stream's slot, the owner's index lives on the user's own slot, and
/// the admin erase deletes records spread over every primary.
final class ClusterAnswerRetentionTests: RedisClusterTestCase {
    private var relays: [RelayProcess] = []
    private static let adminKey = "admin-key-for-cluster-retention-0123"

    override func tearDown() {
        for r in relays { r.kill9() }
        relays.removeAll()
        super.tearDown()
    }

    func testAnswersOnEveryPrimaryAreRetainedResumedAndErased() throws {
        let relay = try RelayProcess(redisURL: cluster.url, env: ["RELAY_SIMULATED_TOKENS_PER_SECOND": "2000", "RELAY_BUFFER_TTL": "1s",
                                                                  "RELAY_ADMIN_KEY": Self.adminKey, "RELAY_COALESCE_BACKLOG": "0"])
        relays.append(relay)
        let token = RelayProcess.token()
        let primaries = try cluster.primaries(askingPort: cluster.nodes[0].port)
        XCTAssertEqual(primaries.count, 3)
        // One answer whose keys land on each primary.
        var ids: [(id: String, port: Int)] = []
        while ids.count < 3 {
            let id = Chat.newID()
            let slot = HashSlot.of("relay:{\(OwnerHash.of("alice")):\(id)}:meta")
            guard let port = primaries.first(where: { $0.value.contains { $0.contains(slot) } })?.key,
                  !ids.contains(where: { $0.port == port }) else { continue }
            ids.append((id, port))
        }
        var answers: [String: [SSEMessage]] = [:]
        for (id, _) in ids {
            answers[id] = try Chat.start(port: relay.port, token: token, requestID: id, maxTokens: 20).readAll()
        }
        for (id, port) in ids {
            try eventually(10, "the stream \(id) to expire") {
                (try? cluster.cli(port, ["EXISTS", "relay:{\(OwnerHash.of("alice")):\(id)}:meta"])) == "0"
            }
            let all = try XCTUnwrap(answers[id])
            let rest = try Chat.resume(port: relay.port, token: token, requestID: id, lastEventID: "5").readAll()
            XCTAssertEqual(rest.map(\.lastEventId), all[5...].map(\.lastEventId), "every event after 5, as streamed")
            XCTAssertEqual(rest.map(\.data), all[5...].map(\.data))
            XCTAssertEqual(try HTTPClient.request(port: relay.port, method: "GET", path: "/api/chat/answers/\(id)",
                                                  headers: [("Authorization", "Bearer \(token)")]).status, 200)
        }
        let erase = try HTTPClient.request(port: relay.port, method: "POST", path: "/admin/users/alice/answers/erase",
                                           headers: [("Authorization", "Bearer \(Self.adminKey)")])
        XCTAssertEqual(erase.status, 200)
        XCTAssertEqual(erase.text, "{\"erased\":3}")
        for (id, port) in ids {
            XCTAssertEqual(try cluster.cli(port, ["EXISTS", "relay:{\(OwnerHash.of("alice")):\(id)}:answer"]), "0")
            XCTAssertEqual(try HTTPClient.request(port: relay.port, method: "GET", path: "/api/chat/answers/\(id)",
                                                  headers: [("Authorization", "Bearer \(token)")]).status, 404)
        }
    }
}
