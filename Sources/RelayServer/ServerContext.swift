import RelayAuth
import RelayCore
import RelayUpstream
import RelayConfiguration
import RelayBudgets
import RelayEventStore

/// What every worker shares: immutable configuration, the authenticator, the metrics,
/// and how to make a worker's upstream factory. Safe to read from any thread.
public struct ServerContext: Sendable {
    /// The instance configuration (docs/CONFIGURATION.md).
    public let config: RelayConfig
    /// The streams core's settings, mapped once from `config` (`RelayConfig.streamSettings`).
    let streams: StreamSettings
    /// The name stored as a stream's `instance` and in lease keys.
    public let instance: String
    /// Checks `Authorization` on every connect and reconnect.
    public let authenticator: Authenticator
    /// Process-wide metrics for `/metrics`.
    public let metrics: Metrics
    /// Makes one upstream factory per worker (it may own per-worker C handles).
    public let makeUpstreams: @Sendable () -> UpstreamFactory
    /// Wall clock, unix milliseconds (injectable for tests).
    public let nowMs: @Sendable () -> Int64
    /// Token budgets by tier.
    public let budgets: BudgetPolicy
    /// Models each tier may use (`RELAY_MODELS`, docs/PROTOCOL.md §9).
    public let models: ModelPolicy
    /// The admin bearer key; `nil` turns the admin routes off.
    public let adminKey: AdminKey?
    /// The shared JWKS key set when `RELAY_JWT_JWKS_URL` is set (docs/TOKENS.md): worker 0 runs
    /// its fetcher, every worker's verifier reads it, `/readyz` waits for its first set.
    public var jwks: JWKSKeyStore? = nil
    /// The read-ticket keys (docs/PROTOCOL.md §2.5), loaded from Redis by each worker's
    /// `ReadTicketKeyLoader`; shared by every worker.
    public let readTicketKeys = ReadTicketKeys()
    /// The at-rest keys (`RELAY_ENCRYPTION_KEYS`, docs/DATA_MODEL.md §15); `nil`: stored
    /// values are plaintext. Each worker makes its own `AtRestCipher` from them.
    public var atRestKeys: AtRestKeyRing? = nil
    /// The operator's system prompts (`RELAY_SYSTEM_PROMPTS`, docs/PROTOCOL.md §3.1): put first in
    /// every request after the client's messages are checked.
    public var systemPrompts = SystemPromptPolicy()

    public init(config: RelayConfig, instance: String, authenticator: Authenticator, metrics: Metrics,
                budgets: BudgetPolicy, models: ModelPolicy, adminKey: AdminKey?,
                makeUpstreams: @escaping @Sendable () -> UpstreamFactory, nowMs: @escaping @Sendable () -> Int64) {
        self.budgets = budgets
        self.models = models
        self.adminKey = adminKey
        self.config = config
        self.streams = config.streamSettings
        self.instance = instance
        self.authenticator = authenticator
        self.metrics = metrics
        self.makeUpstreams = makeUpstreams
        self.nowMs = nowMs
    }
}
