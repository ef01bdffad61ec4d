import Foundation
import RelayAuth
import RelayCluster
import RelayCore
import RelayTestKit
import RelayTestSupport
import XCTest

/// The completion webhook (docs/PROTOCOL.md §13) on a real Redis Cluster: the outbox's
/// scripts on its one slot (`{relay:webhooks}`), the stream reads on each stream's own slot,
/// two relays draining the outbox.
final class ClusterCompletionWebhookTests: RedisClusterTestCase {
    private var relays: [RelayProcess] = []
    private var receiver: CompletionWebhookTests.Receiver?

    override func tearDown() {
        for r in relays { r.kill9() }
        relays.removeAll()
        receiver?.stop()
        receiver = nil
        super.tearDown()
    }

    func testAnswersOnEveryPrimaryGetOneDeliveryEachAndReadOnesNone() throws {
        let receiver = try CompletionWebhookTests.Receiver()
        self.receiver = receiver
        try receiver.start(script: ["500"], otherwise: "slow")
        let env = ["RELAY_COMPLETION_WEBHOOK_URL": receiver.url, "RELAY_COMPLETION_WEBHOOK_SECRET": CompletionWebhookTests.secret,
                   "RELAY_COMPLETION_WEBHOOK_TIMEOUT": "1s", "RELAY_COMPLETION_WEBHOOK_RETRY_BASE": "300ms",
                   "RELAY_COMPLETION_WEBHOOK_GRACE": "500ms", "RELAY_SIMULATED_TOKENS_PER_SECOND": "300"]
        let a = try RelayProcess(redisURL: cluster.url, env: env)
        relays.append(a)
        let b = try RelayProcess(redisURL: cluster.url, env: env)
        relays.append(b)
        let sub = "cluster-user"
        // A session per stream: a session runs at most 3 generations at once (RELAY_MAX_STREAMS_PER_SESSION).
        func token() -> String { RelayProcess.token(sub: sub) }
        // Two streams on each of the three primaries.
        let primaries = try cluster.primaries(askingPort: cluster.nodes[0].port)
        var perPrimary: [Int: Int] = [:]
        var unread: [String] = []
        while unread.count < 6 {
            let id = Chat.newID()
            let slot = HashSlot.of("relay:{\(OwnerHash.of(sub)):\(id)}:meta")
            guard let port = primaries.first(where: { $0.value.contains { $0.contains(slot) } })?.key,
                  perPrimary[port, default: 0] < 2 else { continue }
            perPrimary[port, default: 0] += 1
            let c = try Chat.start(port: (unread.count % 2 == 0 ? a : b).port, token: token(), requestID: id, maxTokens: 20)
            XCTAssertNotNil(try c.nextEvent())
            c.close()
            unread.append(id)
        }
        let read = Chat.newID()
        let events = try Chat.start(port: a.port, token: token(), requestID: read, maxTokens: 20).readAll()
        XCTAssertEqual(events.count, 21)
        try eventually(40, "one delivery per unread answer") { receiver.deliveriesByID.count == 6 }
        try consistently(for: 3, "no second delivery, none for the answer read to its end") {
            receiver.deliveriesByID.values.allSatisfy { $0 == 1 } && receiver.deliveriesByID.count == 6
        }
        let delivered = Set(receiver.requests.filter(\.delivered).map(\.id))
        XCTAssertEqual(delivered, Set(unread.map { "msg_\(OwnerHash.of(sub))_\($0)" }))
        XCTAssertTrue(receiver.requests.allSatisfy(\.signatureOK))
    }
}
