import Foundation
import RelayAuth
import RelayCore
import RelayStreamLogic
import RelayTestSupport
import XCTest

/// Issue 17: the relay on a real Redis Cluster (3 primaries + 3 replicas on loopback,
/// `REDIS_URL=redis+cluster://…`): streams on every primary resumed across relays,
/// revocation and Stop across relays, a slot migrated mid-stream, a primary killed
/// mid-stream.
final class ClusterTests: XCTestCase {
    private var cluster: RedisCluster!
    private var relays: [RelayProcess] = []

    override func setUpWithError() throws {
        cluster = try RedisCluster(primaries: 3)
    }

    override func tearDown() {
        for r in relays { r.kill9() }
        relays.removeAll()
        cluster?.stop()
        cluster = nil
    }

    private static let adminKey = "admin-key-for-tests-0123456789"

    private func startRelay(_ env: [String: String] = [:]) throws -> RelayProcess {
        var e = ["RELAY_SIMULATED_TOKENS_PER_SECOND": "2000", "RELAY_ADMIN_KEY": ClusterTests.adminKey]
        for (k, v) in env { e[k] = v }
        let r = try RelayProcess(redisURL: cluster.url, env: e)
        relays.append(r)
        return r
    }

    /// The hash slot of a stream of user `sub` (keys `relay:{<ownerHash>:<id>}:…`).
    private func slot(_ id: String, sub: String) -> Int { HashSlot.of("relay:{\(OwnerHash.of(sub)):\(id)}:meta") }

    /// `perPrimary` request ids for user `sub` whose keys land on each primary.
    private func idsOnEveryPrimary(sub: String, perPrimary: Int) throws -> [(id: String, port: Int)] {
        let primaries = try cluster.primaries(askingPort: cluster.nodes[0].port)
        XCTAssertEqual(primaries.count, 3)
        var out: [(String, Int)] = []
        var count: [Int: Int] = [:]
        while out.count < perPrimary * primaries.count {
            let id = Chat.newID()
            let s = slot(id, sub: sub)
            guard let port = primaries.first(where: { $0.value.contains { $0.contains(s) } })?.key,
                  count[port, default: 0] < perPrimary else { continue }
            count[port, default: 0] += 1
            out.append((id, port))
        }
        return out
    }

    private func reference(_ relay: RelayProcess, maxTokens: Int) throws -> String {
        Chat.text(try Chat.start(port: relay.port, token: RelayProcess.token(sub: "reference"), maxTokens: maxTokens).readAll())
    }

    /// Ids 1, 2, 3 … without gap or repeat.
    private func assertGapless(_ events: [SSEMessage], _ what: String, file: StaticString = #filePath, line: UInt = #line) {
        for (i, e) in events.enumerated() where e.lastEventId != String(i + 1) {
            return XCTFail("\(what): event \(i) has id \(e.lastEventId ?? "nil")", file: file, line: line)
        }
    }

    func testStreamsOnEveryPrimaryResumeAcrossRelaysByteIdentical() throws {
        let a = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "300"])
        let b = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "300"])
        let ref = try reference(a, maxTokens: 60)
        XCTAssertGreaterThan(ref.utf8.count, 100)
        let sub = "cluster-user"
        let token = RelayProcess.token(sub: sub)
        let ids = try idsOnEveryPrimary(sub: sub, perPrimary: 2)
        for (id, port) in ids {
            let first = try Chat.start(port: a.port, token: token, requestID: id, maxTokens: 60)
            var head: [SSEMessage] = []
            while head.count < 5, let e = try first.nextEvent() { head.append(e) }
            first.close()
            // The stream's keys live on the primary its slot says, nowhere else.
            XCTAssertEqual(try cluster.cli(port, ["EXISTS", "relay:{\(OwnerHash.of(sub)):\(id)}:meta"]), "1", "meta on its primary :\(port)")
            let rest = try Chat.resume(port: b.port, token: token, requestID: id, lastEventID: head.last?.lastEventId).readAll()
            let all = head + rest
            assertGapless(all, id)
            XCTAssertEqual(Chat.text(all), ref, "stream \(id) on :\(port) resumed on the other relay is byte-identical")
            guard case .done? = try? StreamEvent(json: all.last?.data ?? "") else { return XCTFail("\(id) ends with done") }
        }
    }
}
