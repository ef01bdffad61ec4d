import Foundation
import RelayTestKit
import RelayTestSupport
import XCTest

/// The combination matrix (`FeatureCombination`) on one `redis-server`: every encryption
/// setting × every way of losing the owner, with retention, the webhook and offset reads on.
final class FeatureCombinationTests: RelayTestCase {
    func testEveryEncryptionSettingAndOwnerLossKeepsTheAnswerWholeChargedOnceAndNotifiedOnce() throws {
        let receiver = try CompletionWebhookTests.Receiver()
        try receiver.start()
        defer { receiver.stop() }
        let world = FeatureCombination.World(startRelay: { try self.startRelay($0) }, cli: { try self.redis.cli($0) },
                                             receiver: receiver, reference: { self.referenceText(maxTokens: $0) },
                                             key: AtRestEncryptionTests.key())
        var started: [(FeatureCombination, FeatureCombination.Started)] = []
        for e in FeatureCombination.Encryption.allCases {
            for l in FeatureCombination.Loss.allCases {
                let c = FeatureCombination(encryption: e, loss: l)
                started.append((c, try c.run(world)))
            }
        }
        // One wait for every stream's keys to expire (RELAY_BUFFER_TTL), then the retained reads.
        for (c, s) in started { try FeatureCombination.checkRetained(s, world, name: c.name) }
    }
}

/// The combination matrix on a Redis Cluster of three primaries: the scripts, the sharded
/// live channel and the outbox each on their own slots.
final class ClusterFeatureCombinationTests: RedisClusterTestCase {
    private var relays: [RelayProcess] = []

    override func tearDown() {
        for r in relays { r.kill9() }
        relays.removeAll()
        super.tearDown()
    }

    func testEncryptionOnAndSwitchedWithAKilledOwnerOnACluster() throws {
        let receiver = try CompletionWebhookTests.Receiver()
        try receiver.start()
        defer { receiver.stop() }
        let cluster = self.cluster!
        let port = cluster.nodes[0].port
        let world = FeatureCombination.World(
            startRelay: { env in
                let r = try RelayProcess(redisURL: cluster.url, env: env)
                self.relays.append(r)
                return r
            },
            cli: { try cluster.cli(port, ["-c"] + $0) },
            receiver: receiver, reference: { n in FeatureCombination.reference(maxTokens: n) },
            key: AtRestEncryptionTests.key())
        var started: [(FeatureCombination, FeatureCombination.Started)] = []
        for e in [FeatureCombination.Encryption.on, .switched] {
            let c = FeatureCombination(encryption: e, loss: .killed)
            started.append((c, try c.run(world)))
        }
        for (c, s) in started { try FeatureCombination.checkRetained(s, world, name: "cluster, " + c.name) }
    }
}
