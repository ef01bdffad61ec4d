import Foundation
import RelayCore

/// The relay's configuration (docs/CONFIGURATION.md). Every field comes from an environment
/// variable with a matching `--flag` (flags win); `RelayConfig.options` lists them
/// for `stream-relay serve --help`.
public struct RelayConfig: Sendable, Equatable {
    /// Listen address `host:port`; default `127.0.0.1:8080`.
    public var listenHost = "127.0.0.1"
    /// Listen port; 0 binds an ephemeral port (logged as `listening`).
    public var listenPort = 8080
    /// Worker threads; default: number of cores.
    public var workers = 1
    /// `nil`: start a private `redis-server` on a Unix socket.
    public var redis: RedisEndpoint?
    /// Entries kept per stream (`XADD MAXLEN`), default 200.
    public var bufferEvents = 200
    /// TTL of a stream's keys after its last append, ms; default 300,000 (5 min).
    public var bufferTTLms = 300_000
    /// Heartbeat comment interval, ms; default 15,000.
    public var heartbeatMs = 15_000
    /// Upstream adapter: `simulated` (default), `openai`, `openai-responses`, `anthropic`.
    public var upstream = "simulated"
    /// Simulated upstream rate, tokens per second; default 50.
    public var simulatedTokensPerSecond = 50.0
    /// Largest accepted request body, bytes; default 1 MiB.
    public var maxBodyBytes = 1 << 20
    /// Name of this instance, stored as a stream's `instance` (default: hostname-pid).
    public var instanceName = ""
    /// Lossless resume beyond the retained window (docs/PROTOCOL.md §6, docs/DATA_MODEL.md §4);
    /// default on.
    public var losslessResume = true
    /// At-rest keys (`RELAY_ENCRYPTION_KEYS`, docs/DATA_MODEL.md §15): `kid:base64` pairs,
    /// comma-separated, the current first, or `file:///path` to a file holding them;
    /// parsed at start (`AtRestKeyRing`). `nil`: stored values are plaintext.
    public var encryptionKeys: String?
    /// How long a finished answer's record is kept after its final event, ms
    /// (`RELAY_ANSWER_RETENTION`, docs/PROTOCOL.md §6.5); default 86,400,000 (24 h), 0 off.
    public var answerRetentionMs = 86_400_000
    /// The largest retained-answer record body (text and delta lengths), bytes
    /// (`RELAY_ANSWER_RETENTION_MAX_BYTES`); default 1 MiB. Larger answers are not retained.
    public var answerRetentionMaxBytes = 1 << 20
    /// HS256 shared secret (`RELAY_JWT_SECRET`).
    public var jwtSecret: String?
    /// PEM file of the RS256/ES256 public key (`RELAY_JWT_PUBLIC_KEY`).
    public var jwtPublicKeyPath: String?
    /// `RS256` or `ES256` with a public key (`RELAY_JWT_ALGORITHM`); default RS256.
    public var jwtAlgorithm = "RS256"
    /// Required `iss` when set.
    public var jwtIssuer: String?
    /// Required `aud` when set.
    public var jwtAudience: String?
    /// Clock leeway for `exp`/`nbf`, s; default 30.
    public var jwtLeewaySeconds = 30
    /// URL of the identity provider's JSON Web Key Set (`RELAY_JWT_JWKS_URL`, docs/TOKENS.md):
    /// `https://…`, `http://` to a loopback address only, or `file:///path`.
    public var jwtJWKSURL: String?
    /// JWKS refresh interval without cache headers, ms; default 600,000 (10 min).
    public var jwtJWKSRefreshMs = 600_000
    /// Floor of `Cache-Control: max-age` between JWKS refreshes, and the retry after a
    /// failed refresh with a set in hand, ms; default 60,000.
    public var jwtJWKSMinIntervalMs = 60_000
    /// Shortest time between the starts of two JWKS fetches wanted by tokens naming unknown
    /// `kid`s (`UnknownKidRefetch`), ms; default 1,000.
    public var jwtJWKSUnknownKidIntervalMs = 1_000
    /// Whole-fetch timeout of the JWKS, ms; default 10,000.
    public var jwtJWKSTimeoutMs = 10_000
    /// `alg` values accepted with a JWKS, comma-separated; default all of
    /// `RS256,RS384,RS512,ES256,ES384`.
    public var jwtJWKSAlgorithms = RelayConfig.jwksAlgorithms
    /// Admin bearer key; admin routes are off when unset.
    public var adminKey: String?
    /// Tokens per calendar month by tier, e.g. `free=20000,pro=500000`.
    public var budgets = RelayConfig.defaultBudgets
    /// Tier of tokens without a `tier` claim.
    public var defaultTier = RelayConfig.defaultTierName
    /// Running generations per session; default 3.
    public var maxStreamsPerSession = 3
    /// How many times one answer may be continued by another instance after its owner's
    /// lease lapsed (takeover, docs/PROTOCOL.md §4); 0 ends such answers with `upstream_lost`.
    public var maxContinuations = 2
    /// Models each tier may use, `tier=model[|model…],…` (first = the tier's default);
    /// empty: only `UPSTREAM_MODEL` (docs/PROTOCOL.md §9).
    public var models = ""
    /// Whether client `system` messages are accepted; default off (400).
    public var allowSystemMessages = false
    /// The operator's system prompts by model, tier or default (`RELAY_SYSTEM_PROMPTS`: JSON, or
    /// `file:///path` to it; `SystemPromptPolicy`); `nil`: none.
    public var systemPrompts: String?
    /// The sampling fields a client may send, `images` (image parts by URL) and `tools` (`tools`
    /// and `tool_choice`) (`RELAY_CLIENT_PARAMETERS`, docs/PROTOCOL.md §3.1;
    /// `ChatRequest.clientParameterNames`); default all of them; another one sent: 400.
    public var clientParameters = ChatRequest.clientParameterNames
    /// Completion tokens a request gets without `max_tokens`, and the most it may ask
    /// for (larger values are clamped); default 4096.
    public var maxTokens = 4096
    /// Fewest completion tokens worth starting an answer for; when less of the budget
    /// remains, `429 token_budget_exhausted` before the stream; default 16.
    public var budgetMinimumTokens = 16
    /// Drain timeout on SIGTERM, ms: the instance's generations may run this long after
    /// SIGTERM before they end with `upstream_lost`; the drain ends as soon as they have all
    /// finished. Default 300,000 (5 min), the stream TTL, so a deploy never cuts an answer the
    /// relay would otherwise complete.
    public var drainTimeoutMs = 300_000
    /// Unsent bytes per client tolerated; a client whose unsent output stays above this for
    /// 500 ms (or exceeds 16 times it) is disconnected as a slow consumer
    /// (`SlowConsumerPolicy`); default 256 KiB.
    public var maxPendingBytes = 256 * 1024
    /// Unsent bytes per client above which its live deltas are merged (slow-link
    /// coalescing, docs/PROTOCOL.md §4); 0 turns it off; default 1,024.
    public var coalesceBacklogBytes = 1_024
    /// How long live streams wait through a Redis outage before `redis_unavailable`, ms; default 5,000.
    public var redisOutageGraceMs = 5_000
    /// Open client connections per instance before 503; default 10,000.
    public var maxConnections = 10_000
    /// Upstream base URL (`openai`/`openai-responses`/`anthropic`).
    public var upstreamURL: String?
    /// Upstream API key.
    public var upstreamAPIKey: String?
    /// The HS256 secret that signs the caller's identity for an `ai-sdk` upstream
    /// (`X-Relay-Identity`, docs/AGENTS.md); required with it.
    public var upstreamIdentitySecret: String?
    /// Upstream model when the request names none.
    public var upstreamModel: String?
    /// No upstream bytes for this long → `504 upstream_timeout`, ms; default 60,000.
    public var upstreamIdleTimeoutMs = 60_000
    /// How an HTTP upstream continues a lost answer (one of
    /// `upstreamContinuationValues`); default `auto`: `anthropic-prefill` for `anthropic`,
    /// `off` for `openai` and `openai-responses` (docs/UPSTREAMS.md, "Continuing an answer").
    public var upstreamContinuation = "auto"
    /// The accepted values of `RELAY_UPSTREAM_CONTINUATION` (`RelayUpstream.HTTPContinuation`).
    public static let upstreamContinuationValues = ["auto", "off", "anthropic-prefill", "vllm", "llama-cpp"]
    /// `max_tokens` cap in summary mode; default 400.
    public var summaryMaxTokens = 400
    /// A client must send its whole request (head and body) within this long of its first
    /// byte, ms, else `408 request_timeout` and the connection is closed; default 30,000.
    public var requestTimeoutMs = 30_000
    /// How long a long-poll read (`GET /api/chat/stream/{id}?offset=…&live=long-poll`,
    /// docs/PROTOCOL.md §12) waits for the next event before `204 No Content`, ms; default 20,000.
    public var longPollTimeoutMs = 20_000
    /// Connections per worker that may be part-way through sending a request at once; the next
    /// is refused with `503 too_many_pending_requests`; default 512.
    public var maxPendingRequests = 512
    /// Replay reads (a resume's or a gap's `XRANGE`, a catch-up's text read) a worker keeps
    /// outstanding at once; more wait in arrival order (`ReplayAdmission`); default 32.
    public var replayConcurrency = 32
    /// How long a revocation marker lives, ms (should cover the longest token
    /// lifetime); default 24 h.
    public var revocationTTLms = 86_400_000
    /// How long a read ticket (`X-Read-Ticket`, docs/PROTOCOL.md §2.5) admits `GET` of its
    /// stream, ms, capped by the token's own `exp`; default 10 min.
    public var readTicketTTLms = 600_000
    /// Where the completion webhook is POSTed when an answer ends with no client reading
    /// it (docs/PROTOCOL.md §13); `nil`: no webhooks.
    public var completionWebhookURL: String?
    /// The Standard Webhooks signing secret, `whsec_<base64>` (required with the URL).
    public var completionWebhookSecret: String?
    /// Whole-attempt timeout of one webhook POST, ms; default 10,000.
    public var completionWebhookTimeoutMs = 10_000
    /// Attempts per webhook before it is dropped; default 10.
    public var completionWebhookMaxAttempts = 10
    /// Delay before the first retry, ms, doubled per further retry up to 10 min, with
    /// jitter (`CompletionWebhookRetry`); default 2,000.
    public var completionWebhookRetryBaseMs = 2_000
    /// How long after an answer ends a client may still read its final event before the
    /// webhook goes out (a client that did, on any instance, means no webhook), ms; default 2,000.
    public var completionWebhookGraceMs = 2_000
    /// Fault injection for tests: delay between the live-channel subscription and the
    /// replay, ms; default 0.
    public var debugReplayDelayMs = 0

    public init() {}

    /// One configuration knob — the single source of its environment variable, flag,
    /// default, unit and documentation: `stream-relay serve --help` and docs/CONFIGURATION.md's
    /// configuration table (`markdownTable`, checked by `ConfigTableTests`) are rendered
    /// from it.
    public struct Option: Sendable {
        /// The environment variable, e.g. `RELAY_LISTEN`.
        public let env: String
        /// The matching flag, e.g. `--listen`.
        public let flag: String
        /// The default as written in the variable (`15s`, `200`), or a description
        /// (`cores`, `—` for unset).
        public let defaultValue: String
        /// Unit or shape of the value (`duration`, `bytes`, `tokens`, …); durations take
        /// `300`, `300s`, `5m`, `1500ms`, `1h`.
        public let unit: String
        /// One line: what the option does.
        public let doc: String
        /// A test fault injection, not an operator setting: accepted, but left out of
        /// `--help` and the configuration table (`testOptionsHelpText` lists it).
        public let testOnly: Bool
        let apply: @Sendable (inout RelayConfig, String) throws -> Void

        init(env: String, flag: String, default d: String, unit: String, doc: String, testOnly: Bool = false,
             apply: @escaping @Sendable (inout RelayConfig, String) throws -> Void) {
            self.env = env
            self.flag = flag
            self.defaultValue = d
            self.unit = unit
            self.doc = doc
            self.testOnly = testOnly
            self.apply = apply
        }

        /// One line for `--help`: the doc and the default.
        public var help: String { defaultValue == "—" ? doc : "\(doc) (default \(defaultValue))" }

        /// Applies `value` to `config` as the variable would.
        /// - Throws: `ConfigError` naming the variable.
        public func apply(_ value: String, to config: inout RelayConfig) throws { try apply(&config, value) }
    }

    /// docs/CONFIGURATION.md's configuration table (Markdown), one row per option in `--help` order.
    public static var markdownTable: String { markdownTable(of: options.filter { !$0.testOnly }) }

    /// The settings of the answers that outlive a dead instance and a sleeping phone
    /// (takeover, retained answers, encryption at rest, the completion webhook), in
    /// `--help` order: README.md's table of them.
    public static var answerSurvivalOptions: [Option] {
        let prefixes = ["RELAY_MAX_CONTINUATIONS", "RELAY_UPSTREAM_CONTINUATION", "RELAY_ANSWER_RETENTION",
                        "RELAY_ENCRYPTION_KEYS", "RELAY_COMPLETION_WEBHOOK_"]
        return options.filter { o in !o.testOnly && prefixes.contains { o.env.hasPrefix($0) } }
    }

    /// A configuration table (Markdown) of `rows`: variable, flag, default, unit, meaning.
    public static func markdownTable(of rows: [Option]) -> String {
        var out = "| variable | flag | default | unit | meaning |\n|---|---|---|---|---|\n"
        for o in rows {
            out += "| `\(o.env)` | `\(o.flag)` | \(o.defaultValue == "—" ? "—" : "`\(o.defaultValue)`") | \(o.unit) | \(o.doc) |\n"
        }
        return out
    }

    /// Every `alg` a JWKS key may verify (RFC 7518 §3.1), the default allow-list.
    public static let jwksAlgorithms = "RS256,RS384,RS512,ES256,ES384"

    /// Checks a `RELAY_JWT_JWKS_URL`: `https://host/…`; `http://` only to a loopback host
    /// (`127.0.0.0/8`, `[::1]`, `localhost`; for tests); or `file:///absolute/path`.
    /// - Throws: `ConfigError` otherwise.
    public static func checkJWKSURL(_ v: String) throws {
        let name = "RELAY_JWT_JWKS_URL"
        if try FileURLSetting.path(v, variable: name, example: "file:///etc/relay/jwks.json") != nil { return }
        guard let u = URL(string: v), let scheme = u.scheme?.lowercased(), let host = u.host, !host.isEmpty else {
            throw ConfigError("\(name) must be an https:// or file:// URL, got \"\(v)\"")
        }
        switch scheme {
        case "https": return
        case "http":
            let h = host.lowercased().trimmingCharacters(in: "[]")
            let loopback = h == "localhost" || h == "::1" || (h.hasPrefix("127.") && h.split(separator: ".").count == 4
                && h.split(separator: ".").allSatisfy { UInt8($0) != nil })
            guard loopback else {
                throw ConfigError("\(name): plain http is allowed only to a loopback address (tests); use https, got \"\(v)\"")
            }
        default:
            throw ConfigError("\(name) must be an https:// or file:// URL, got \"\(v)\"")
        }
    }

    /// Tokens per calendar month by tier when `RELAY_BUDGETS` is unset.
    public static let defaultBudgets = "free=20000,pro=500000"
    /// Tier of tokens without a `tier` claim when `RELAY_DEFAULT_TIER` is unset.
    public static let defaultTierName = "free"
}
