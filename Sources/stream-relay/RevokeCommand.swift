import Foundation
import RelayCore
import RelayLoop
import RelayRedis
import RelayConfiguration
import RelayEventStore
import RelayCluster

/// `stream-relay revoke SESSION_ID`: sets `relay:revoked:{sid}` and publishes the sid
/// on `relay:revocations` directly in Redis (`REDIS_URL`), so every relay instance
/// cuts the session's live streams.
enum RevokeCommand {
    static let usage = """
    usage: stream-relay revoke SESSION_ID
    Marks the session revoked in Redis (relay:revoked:{sid}, kept RELAY_REVOCATION_TTL)
    and publishes it on relay:revocations: every relay cuts its live streams with a 401
    error event and refuses its tokens. Uses REDIS_URL (required).
    """

    static func run(arguments: [String]) -> Int32 {
        if arguments == ["--help"] || arguments == ["-h"] {
            print(usage)
            return 0
        }
        guard arguments.count == 1, let sid = arguments.first, !sid.hasPrefix("-") else {
            printError("revoke: expected one SESSION_ID\n\(usage)\n")
            return 2
        }
        let config: RelayConfig
        do {
            config = try RelayConfig.load(environment: ProcessInfo.processInfo.environment, arguments: [], defaultWorkers: 1)
        } catch {
            printError("stream-relay: \(error)\n")
            return 2
        }
        guard let endpoint = config.redis else {
            printError("stream-relay revoke: set REDIS_URL to the relays' Redis\n")
            return 2
        }
        do {
            let loop = try EventLoop()
            // A Redis Cluster (`redis+cluster://`): the marker goes to its slot's primary.
            let conn = RedisCommandChannels.make(loop: loop, endpoint: endpoint, outageGraceMs: config.redisOutageGraceMs)
            let store = SessionStore(connection: conn, scripts: ScriptRunner(connection: conn))
            var code: Int32 = 1
            let timeout = LoopTimer(loop: loop) {
                printError("stream-relay revoke: Redis at \(endpoint) did not answer\n")
                loop.stop()
            }
            timeout.schedule(afterMs: 5000)
            var sent = false
            conn.onConnect = {
                guard !sent else { return }
                sent = true
                store.revoke(sid: sid, ttlMs: config.revocationTTLms) { r in
                    switch r {
                    case .success:
                        print("revoked session \(sid)")
                        code = 0
                    case .failure(let f):
                        printError("stream-relay revoke: \(f)\n")
                    }
                    loop.stop()
                }
            }
            conn.connect()
            loop.run()
            conn.close()
            return code
        } catch {
            printError("stream-relay revoke: \(error)\n")
            return 1
        }
    }
}
