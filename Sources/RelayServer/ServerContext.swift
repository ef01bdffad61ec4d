import RelayCore
import RelayUpstream

/// What every worker shares: immutable configuration, the authenticator, the metrics,
/// and how to make a worker's upstream factory. Safe to read from any thread.
public struct ServerContext: Sendable {
    public let config: RelayConfig
    /// The name stored as a stream's `instance` and in lease keys.
    public let instance: String
    public let authenticator: Authenticator
    public let metrics: Metrics
    /// Makes one upstream factory per worker (it may own per-worker C handles).
    public let makeUpstreams: @Sendable () -> UpstreamFactory
    /// Wall clock, unix milliseconds (injectable for tests).
    public let nowMs: @Sendable () -> Int64

    public init(config: RelayConfig, instance: String, authenticator: Authenticator, metrics: Metrics,
                makeUpstreams: @escaping @Sendable () -> UpstreamFactory, nowMs: @escaping @Sendable () -> Int64) {
        self.config = config
        self.instance = instance
        self.authenticator = authenticator
        self.metrics = metrics
        self.makeUpstreams = makeUpstreams
        self.nowMs = nowMs
    }
}
