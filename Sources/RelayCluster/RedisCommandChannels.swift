import RelayConfiguration
import RelayLoop
import RelayRedis

/// Builds the command channel for a `REDIS_URL`.
public enum RedisCommandChannels {
    /// A `ClusterClient` for `redis+cluster://`, else one `RedisConnection` (`.commands`).
    /// `outageGraceMs`: how long a cluster client retries `TRYAGAIN`/`CLUSTERDOWN` and
    /// commands for an unreachable slot owner (`RELAY_REDIS_OUTAGE_GRACE`).
    public static func make(loop: EventLoop, endpoint: RedisEndpoint, outageGraceMs: Int) -> any RedisCommandChannel {
        if case .cluster = endpoint {
            return ClusterClient(loop: loop, endpoint: endpoint, outageGraceMs: UInt64(max(0, outageGraceMs)))
        }
        return RedisConnection(loop: loop, endpoint: endpoint, role: .commands)
    }
}
