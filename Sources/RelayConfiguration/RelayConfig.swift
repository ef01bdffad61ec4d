import Foundation

/// Where the relay finds Redis: `redis://host:port[/db]`, `unix:///path[?db=N]`, or a
/// Redis Cluster, `redis+cluster://host:port[,host:port…]` (seed nodes; the slot map is
/// read from them with `CLUSTER SLOTS`).
public enum RedisEndpoint: Sendable, Equatable, CustomStringConvertible {
    case tcp(host: String, port: Int, db: Int)
    case unix(path: String, db: Int)
    /// Redis Cluster seed nodes (at least one), each `(host, port)` as given.
    case cluster(seeds: [ClusterSeed])

    /// One seed node of `redis+cluster://`.
    public struct ClusterSeed: Sendable, Equatable, CustomStringConvertible {
        public var host: String
        public var port: Int
        public init(host: String, port: Int) {
            self.host = host
            self.port = port
        }
        public var description: String { "\(host):\(port)" }
    }

    /// Where docs/REDIS.md documents the TLS sidecar for managed Redis (hiredis 0.14 has no TLS).
    public static let tlsRecipe = "docs/REDIS.md \"Managed Redis with TLS\" (stunnel4 sidecar)"

    /// Parses a `REDIS_URL`.
    /// - Throws: `ConfigError` for another scheme, a missing host or path, a port outside
    ///   1…65535 or a database index that is not a small non-negative integer.
    public static func parse(_ url: String) throws -> RedisEndpoint {
        if url.hasPrefix("rediss://") || url.hasPrefix("rediss+cluster://") {
            throw ConfigError("REDIS_URL: TLS (rediss://) is not supported by this build's hiredis 0.14; run a TLS sidecar and point REDIS_URL at it, see \(tlsRecipe)")
        }
        if url.hasPrefix("redis+cluster://") {
            var seeds: [ClusterSeed] = []
            for part in url.dropFirst("redis+cluster://".count).split(separator: ",", omittingEmptySubsequences: false) {
                guard let colon = part.lastIndex(of: ":"), let p = Int(part[part.index(after: colon)...]),
                      (1...65535).contains(p), colon > part.startIndex else {
                    throw ConfigError("REDIS_URL: redis+cluster:// needs host:port seeds separated by commas, got \(url)")
                }
                seeds.append(ClusterSeed(host: String(part[..<colon]), port: p))
            }
            return .cluster(seeds: seeds)
        }
        if url.hasPrefix("unix://") {
            var rest = String(url.dropFirst("unix://".count))
            var db = 0
            if let q = rest.firstIndex(of: "?") {
                let query = rest[rest.index(after: q)...]
                rest = String(rest[..<q])
                for part in query.split(separator: "&") where part.hasPrefix("db=") {
                    guard let d = Int(part.dropFirst(3)), d >= 0, d < 1024 else { throw ConfigError("REDIS_URL: bad db in \(url)") }
                    db = d
                }
            }
            guard rest.hasPrefix("/"), rest.count > 1 else { throw ConfigError("REDIS_URL: unix:// needs an absolute socket path, got \(url)") }
            return .unix(path: rest, db: db)
        }
        guard url.hasPrefix("redis://") else { throw ConfigError("REDIS_URL must start with redis://, redis+cluster:// or unix://, got \(url)") }
        var rest = Substring(url.dropFirst("redis://".count))
        if let at = rest.lastIndex(of: "@") { rest = rest[rest.index(after: at)...] } // credentials unsupported: ignored host part
        var db = 0
        if let slash = rest.firstIndex(of: "/") {
            let d = rest[rest.index(after: slash)...]
            if !d.isEmpty {
                guard let v = Int(d), v >= 0, v < 1024 else { throw ConfigError("REDIS_URL: bad db in \(url)") }
                db = v
            }
            rest = rest[..<slash]
        }
        var host = String(rest)
        var port = 6379
        if let colon = rest.lastIndex(of: ":") {
            host = String(rest[..<colon])
            guard let p = Int(rest[rest.index(after: colon)...]), (1...65535).contains(p) else {
                throw ConfigError("REDIS_URL: bad port in \(url)")
            }
            port = p
        }
        guard !host.isEmpty else { throw ConfigError("REDIS_URL: missing host in \(url)") }
        return .tcp(host: host, port: port, db: db)
    }

    public var description: String {
        switch self {
        case .tcp(let h, let p, let db): return "redis://\(h):\(p)/\(db)"
        case .unix(let path, let db): return db == 0 ? "unix://\(path)" : "unix://\(path)?db=\(db)"
        case .cluster(let seeds): return "redis+cluster://" + seeds.map(\.description).joined(separator: ",")
        }
    }
}

/// A configuration value that could not be used; the message names the variable.
public struct ConfigError: Error, CustomStringConvertible, Equatable {
    public let description: String
    public init(_ d: String) { description = d }
}

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
    /// Upstream adapter: `simulated` (default), `openai`, `anthropic`.
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
    /// Upstream base URL (`openai`/`anthropic`).
    public var upstreamURL: String?
    /// Upstream API key.
    public var upstreamAPIKey: String?
    /// Upstream model when the request names none.
    public var upstreamModel: String?
    /// No upstream bytes for this long → `504 upstream_timeout`, ms; default 60,000.
    public var upstreamIdleTimeoutMs = 60_000
    /// How an `openai`/`anthropic` upstream continues a lost answer (one of
    /// `upstreamContinuationValues`); default `auto`: `anthropic-prefill` for `anthropic`,
    /// `off` for `openai` (docs/UPSTREAMS.md, "Continuing an answer").
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
        if v.hasPrefix("file://") {
            guard v.dropFirst("file://".count).hasPrefix("/") else {
                throw ConfigError("\(name): file:// needs an absolute path (file:///etc/relay/jwks.json), got \"\(v)\"")
            }
            return
        }
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

    /// Every knob, in `--help` order.
    public static let options: [Option] = [
        Option(env: "RELAY_LISTEN", flag: "--listen", default: "127.0.0.1:8080", unit: "host:port",
               doc: "host:port to listen on") { c, v in
            guard let colon = v.lastIndex(of: ":"), let p = Int(v[v.index(after: colon)...]), (0...65535).contains(p) else {
                throw ConfigError("RELAY_LISTEN must be host:port, got \"\(v)\"")
            }
            let h = String(v[..<colon])
            c.listenHost = h.isEmpty ? "0.0.0.0" : h.trimmingCharacters(in: "[]")
            c.listenPort = p
        },
        Option(env: "RELAY_WORKERS", flag: "--workers", default: "cores", unit: "threads",
               doc: "worker threads, each with its own event loop") { c, v in
            c.workers = try int(v, "RELAY_WORKERS", 1...256)
        },
        Option(env: "REDIS_URL", flag: "--redis-url", default: "—", unit: "URL",
               doc: "redis://host:port[/db], unix:///path[?db=N], or redis+cluster://host:port[,host:port…] (Redis Cluster seed nodes); rediss:// is refused (use a TLS sidecar); unset: a private redis-server on a temp Unix socket") { c, v in
            c.redis = try RedisEndpoint.parse(v)
        },
        Option(env: "RELAY_BUFFER_EVENTS", flag: "--buffer-events", default: "200", unit: "events",
               doc: "most events kept per stream (XADD MAXLEN, exact; the trim runs on every 8th event at most, so 193–200 of the default 200 are kept)") { c, v in
            c.bufferEvents = try int(v, "RELAY_BUFFER_EVENTS", 1...1_000_000)
        },
        Option(env: "RELAY_BUFFER_TTL", flag: "--buffer-ttl", default: "300s", unit: "duration",
               doc: "stream TTL after the last append: 300, 300s, 5m, 1500ms") { c, v in
            c.bufferTTLms = try duration(v, "RELAY_BUFFER_TTL", 1...86_400_000)
        },
        Option(env: "RELAY_HEARTBEAT", flag: "--heartbeat", default: "15s", unit: "duration",
               doc: "': ping' comment interval on idle streams") { c, v in
            c.heartbeatMs = try duration(v, "RELAY_HEARTBEAT", 10...3_600_000)
        },
        Option(env: "RELAY_UPSTREAM", flag: "--upstream", default: "simulated", unit: "name",
               doc: "upstream adapter: simulated, openai, anthropic") { c, v in
            guard ["simulated", "openai", "anthropic"].contains(v) else {
                throw ConfigError("RELAY_UPSTREAM must be simulated, openai or anthropic, got \"\(v)\"")
            }
            c.upstream = v
        },
        Option(env: "RELAY_SIMULATED_TOKENS_PER_SECOND", flag: "--simulated-tokens-per-second", default: "50", unit: "tokens/s",
               doc: "simulated upstream rate in tokens/s") { c, v in
            guard let d = Double(v), d > 0, d <= 1_000_000 else {
                throw ConfigError("RELAY_SIMULATED_TOKENS_PER_SECOND must be a number in (0, 1000000], got \"\(v)\"")
            }
            c.simulatedTokensPerSecond = d
        },
        Option(env: "RELAY_MAX_BODY_BYTES", flag: "--max-body-bytes", default: "1048576", unit: "bytes",
               doc: "largest request body in bytes") { c, v in
            c.maxBodyBytes = try int(v, "RELAY_MAX_BODY_BYTES", 1024...(64 << 20))
        },
        Option(env: "RELAY_INSTANCE", flag: "--instance", default: "hostname-pid", unit: "name",
               doc: "instance name stored with each stream") { c, v in
            guard !v.isEmpty, v.utf8.count <= 128 else { throw ConfigError("RELAY_INSTANCE must be 1-128 bytes") }
            c.instanceName = v
        },
        Option(env: "RELAY_JWT_SECRET", flag: "--jwt-secret", default: "generated dev secret", unit: "string ≥ 32 bytes",
               doc: "HS256 shared secret for client JWTs") { c, v in
            guard v.utf8.count >= 32 else { throw ConfigError("RELAY_JWT_SECRET must be at least 32 bytes (RFC 7518 §3.2)") }
            c.jwtSecret = v
        },
        Option(env: "RELAY_JWT_PUBLIC_KEY", flag: "--jwt-public-key", default: "—", unit: "path",
               doc: "PEM file of the RS256/ES256 public key (instead of a secret)") { c, v in
            c.jwtPublicKeyPath = v
        },
        Option(env: "RELAY_JWT_ALGORITHM", flag: "--jwt-algorithm", default: "RS256", unit: "name",
               doc: "RS256 or ES256, with --jwt-public-key") { c, v in
            guard ["RS256", "ES256"].contains(v) else { throw ConfigError("RELAY_JWT_ALGORITHM must be RS256 or ES256, got \"\(v)\"") }
            c.jwtAlgorithm = v
        },
        Option(env: "RELAY_JWT_ISSUER", flag: "--jwt-issuer", default: "—", unit: "string",
               doc: "required iss claim (optional)") { c, v in c.jwtIssuer = v },
        Option(env: "RELAY_JWT_AUDIENCE", flag: "--jwt-audience", default: "—", unit: "string",
               doc: "required aud claim (optional)") { c, v in c.jwtAudience = v },
        Option(env: "RELAY_JWT_LEEWAY", flag: "--jwt-leeway", default: "30s", unit: "duration",
               doc: "clock leeway for exp/nbf") { c, v in
            c.jwtLeewaySeconds = try duration(v, "RELAY_JWT_LEEWAY", 0...3_600_000) / 1000
        },
        Option(env: "RELAY_JWT_JWKS_URL", flag: "--jwt-jwks-url", default: "—", unit: "URL",
               doc: "JSON Web Key Set of the identity provider (instead of a secret or PEM): https://…, http:// to loopback only, or file:///path") { c, v in
            try checkJWKSURL(v)
            c.jwtJWKSURL = v
        },
        Option(env: "RELAY_JWT_JWKS_REFRESH", flag: "--jwt-jwks-refresh", default: "10m", unit: "duration",
               doc: "JWKS refresh interval when the provider sends no Cache-Control max-age") { c, v in
            c.jwtJWKSRefreshMs = try duration(v, "RELAY_JWT_JWKS_REFRESH", 100...86_400_000)
        },
        Option(env: "RELAY_JWT_JWKS_MIN_INTERVAL", flag: "--jwt-jwks-min-interval", default: "60s", unit: "duration",
               doc: "floor of the JWKS Cache-Control max-age; retry after a failed refresh") { c, v in
            c.jwtJWKSMinIntervalMs = try duration(v, "RELAY_JWT_JWKS_MIN_INTERVAL", 100...86_400_000)
        },
        Option(env: "RELAY_JWT_JWKS_UNKNOWN_KID_INTERVAL", flag: "--jwt-jwks-unknown-kid-interval", default: "1s", unit: "duration",
               doc: "at most one JWKS fetch per interval for tokens naming unknown kids (they wait for it)") { c, v in
            c.jwtJWKSUnknownKidIntervalMs = try duration(v, "RELAY_JWT_JWKS_UNKNOWN_KID_INTERVAL", 100...60_000)
        },
        Option(env: "RELAY_JWT_JWKS_TIMEOUT", flag: "--jwt-jwks-timeout", default: "10s", unit: "duration",
               doc: "whole-fetch timeout of the JWKS; longest wait of a token naming an unknown kid") { c, v in
            c.jwtJWKSTimeoutMs = try duration(v, "RELAY_JWT_JWKS_TIMEOUT", 100...300_000)
        },
        Option(env: "RELAY_JWT_JWKS_ALGORITHMS", flag: "--jwt-jwks-algorithms", default: RelayConfig.jwksAlgorithms, unit: "alg,…",
               doc: "token alg values accepted with a JWKS (never none or HS*)") { c, v in
            let known = Set(jwksAlgorithms.split(separator: ",").map(String.init))
            let given = v.split(separator: ",", omittingEmptySubsequences: false).map { String($0).trimmingCharacters(in: " ") }
            guard !given.isEmpty, given.allSatisfy({ known.contains($0) }) else {
                throw ConfigError("RELAY_JWT_JWKS_ALGORITHMS must list some of \(jwksAlgorithms), got \"\(v)\"")
            }
            c.jwtJWKSAlgorithms = given.joined(separator: ",")
        },
        Option(env: "RELAY_ADMIN_KEY", flag: "--admin-key", default: "off", unit: "string ≥ 16 bytes",
               doc: "bearer key of the admin routes (off when unset)") { c, v in
            guard v.utf8.count >= 16 else { throw ConfigError("RELAY_ADMIN_KEY must be at least 16 bytes") }
            c.adminKey = v
        },
        Option(env: "RELAY_BUDGETS", flag: "--budgets", default: "\(RelayConfig.defaultBudgets)", unit: "tier=tokens/month,…",
               doc: "tokens per calendar month by tier") { c, v in
            c.budgets = v
        },
        Option(env: "RELAY_DEFAULT_TIER", flag: "--default-tier", default: "\(RelayConfig.defaultTierName)", unit: "name",
               doc: "tier of tokens without a tier claim") { c, v in
            c.defaultTier = v
        },
        Option(env: "RELAY_MAX_STREAMS_PER_SESSION", flag: "--max-streams-per-session", default: "3", unit: "generations",
               doc: "running generations per session") { c, v in
            c.maxStreamsPerSession = try int(v, "RELAY_MAX_STREAMS_PER_SESSION", 1...10_000_000)
        },
        Option(env: "RELAY_MAX_CONTINUATIONS", flag: "--max-continuations", default: "2", unit: "takeovers",
               doc: "times one answer may be continued by another instance after its owner died (0: upstream_lost instead)") { c, v in
            c.maxContinuations = try int(v, "RELAY_MAX_CONTINUATIONS", 0...100)
        },
        Option(env: "RELAY_MODELS", flag: "--models", default: "—", unit: "tier=models,…",
               doc: "models each tier may use (several joined by a vertical bar), the first its default; unset: only UPSTREAM_MODEL; another model: 400 model_not_allowed") { c, v in
            c.models = v
        },
        Option(env: "RELAY_ALLOW_SYSTEM_MESSAGES", flag: "--allow-system-messages", default: "off", unit: "on/off",
               doc: "accept client system messages (off: 400 invalid_request)") { c, v in
            c.allowSystemMessages = try bool(v, "RELAY_ALLOW_SYSTEM_MESSAGES")
        },
        Option(env: "RELAY_MAX_TOKENS", flag: "--max-tokens", default: "4096", unit: "tokens",
               doc: "max_tokens of a request without one, and the cap on any request's") { c, v in
            c.maxTokens = try int(v, "RELAY_MAX_TOKENS", 1...1_000_000)
        },
        Option(env: "RELAY_BUDGET_MIN_TOKENS", flag: "--budget-min-tokens", default: "16", unit: "tokens",
               doc: "fewest completion tokens worth reserving; less left: 429 token_budget_exhausted") { c, v in
            c.budgetMinimumTokens = try int(v, "RELAY_BUDGET_MIN_TOKENS", 1...1_000_000)
        },
        Option(env: "RELAY_DRAIN_TIMEOUT", flag: "--drain-timeout", default: "300s", unit: "duration",
               doc: "longest a SIGTERMed instance keeps its generations running (ends early once all finished); keep the orchestrator's grace period above it") { c, v in
            c.drainTimeoutMs = try duration(v, "RELAY_DRAIN_TIMEOUT", 0...3_600_000)
        },
        Option(env: "RELAY_MAX_PENDING_BYTES", flag: "--max-pending-bytes", default: "262144", unit: "bytes",
               doc: "unsent bytes per client tolerated; above it for 500 ms, or above 16 times it at once, the client is disconnected (it resumes)") { c, v in
            c.maxPendingBytes = try int(v, "RELAY_MAX_PENDING_BYTES", 1024...(1 << 30))
        },
        Option(env: "RELAY_COALESCE_BACKLOG", flag: "--coalesce-backlog", default: "1024", unit: "bytes",
               doc: "unsent bytes per client above which its deltas are merged (one larger delta per 250 ms); 0 = off") { c, v in
            c.coalesceBacklogBytes = try int(v, "RELAY_COALESCE_BACKLOG", 0...(1 << 30))
        },
        Option(env: "RELAY_REDIS_OUTAGE_GRACE", flag: "--redis-outage-grace", default: "5s", unit: "duration",
               doc: "Redis outage tolerated by live streams") { c, v in
            c.redisOutageGraceMs = try duration(v, "RELAY_REDIS_OUTAGE_GRACE", 0...3_600_000)
        },
        Option(env: "RELAY_MAX_CONNECTIONS", flag: "--max-connections", default: "10000", unit: "connections",
               doc: "open client streams per instance before 503") { c, v in
            c.maxConnections = try int(v, "RELAY_MAX_CONNECTIONS", 1...10_000_000)
        },
        Option(env: "UPSTREAM_URL", flag: "--upstream-url", default: "—", unit: "URL",
               doc: "upstream base URL for openai/anthropic") { c, v in
            guard v.hasPrefix("http://") || v.hasPrefix("https://") else { throw ConfigError("UPSTREAM_URL must be an http(s) URL, got \"\(v)\"") }
            c.upstreamURL = v
        },
        Option(env: "UPSTREAM_API_KEY", flag: "--upstream-api-key", default: "—", unit: "string",
               doc: "upstream API key") { c, v in c.upstreamAPIKey = v },
        Option(env: "UPSTREAM_MODEL", flag: "--upstream-model", default: "—", unit: "name",
               doc: "upstream model when the request names none") { c, v in c.upstreamModel = v },
        Option(env: "RELAY_UPSTREAM_IDLE_TIMEOUT", flag: "--upstream-idle-timeout", default: "60s", unit: "duration",
               doc: "no upstream bytes for this long: 504 upstream_timeout") { c, v in
            c.upstreamIdleTimeoutMs = try duration(v, "RELAY_UPSTREAM_IDLE_TIMEOUT", 100...3_600_000)
        },
        Option(env: "RELAY_UPSTREAM_CONTINUATION", flag: "--upstream-continuation", default: "auto", unit: "name",
               doc: "how an openai/anthropic upstream continues a lost answer: auto (anthropic: anthropic-prefill; openai: off), off, anthropic-prefill, vllm, llama-cpp") { c, v in
            guard RelayConfig.upstreamContinuationValues.contains(v) else {
                throw ConfigError("RELAY_UPSTREAM_CONTINUATION must be one of \(RelayConfig.upstreamContinuationValues.joined(separator: ", ")), got \"\(v)\"")
            }
            c.upstreamContinuation = v
        },
        Option(env: "RELAY_SUMMARY_MAX_TOKENS", flag: "--summary-max-tokens", default: "400", unit: "tokens",
               doc: "max_tokens cap in summary mode") { c, v in
            c.summaryMaxTokens = try int(v, "RELAY_SUMMARY_MAX_TOKENS", 1...1_000_000)
        },
        Option(env: "RELAY_REQUEST_TIMEOUT", flag: "--request-timeout", default: "30s", unit: "duration",
               doc: "time from a request's first byte to the end of its body; then 408 request_timeout and close") { c, v in
            c.requestTimeoutMs = try duration(v, "RELAY_REQUEST_TIMEOUT", 1000...3_600_000)
        },
        Option(env: "RELAY_LONG_POLL_TIMEOUT", flag: "--long-poll-timeout", default: "20s", unit: "duration",
               doc: "how long a long-poll read (?offset=…&live=long-poll) waits for the next event; then 204") { c, v in
            c.longPollTimeoutMs = try duration(v, "RELAY_LONG_POLL_TIMEOUT", 100...600_000)
        },
        Option(env: "RELAY_MAX_PENDING_REQUESTS", flag: "--max-pending-requests", default: "512", unit: "connections",
               doc: "connections per worker still sending their request; the next: 503 too_many_pending_requests") { c, v in
            c.maxPendingRequests = try int(v, "RELAY_MAX_PENDING_REQUESTS", 1...1_000_000)
        },
        Option(env: "RELAY_REPLAY_CONCURRENCY", flag: "--replay-concurrency", default: "32", unit: "reads",
               doc: "replay reads per worker outstanding at once; more wait their turn (relay_replays_queued)") { c, v in
            c.replayConcurrency = try int(v, "RELAY_REPLAY_CONCURRENCY", 1...100_000)
        },
        Option(env: "RELAY_REVOCATION_TTL", flag: "--revocation-ttl", default: "24h", unit: "duration",
               doc: "how long a session revocation lasts; cover the longest token lifetime") { c, v in
            c.revocationTTLms = try duration(v, "RELAY_REVOCATION_TTL", 1000...(400 * 86_400_000))
        },
        Option(env: "RELAY_READ_TICKET_TTL", flag: "--read-ticket-ttl", default: "10m", unit: "duration",
               doc: "lifetime of a read ticket (X-Read-Ticket, for EventSource), never past the token's exp") { c, v in
            c.readTicketTTLms = try duration(v, "RELAY_READ_TICKET_TTL", 1000...86_400_000)
        },
        Option(env: "RELAY_COMPLETION_WEBHOOK_URL", flag: "--completion-webhook-url", default: "—", unit: "URL",
               doc: "POST a signed completion webhook here when an answer ends and no client read its end (docs/PROTOCOL.md §13); http:// or https://") { c, v in
            guard let u = URL(string: v), let scheme = u.scheme?.lowercased(), scheme == "http" || scheme == "https",
                  let host = u.host, !host.isEmpty else {
                throw ConfigError("RELAY_COMPLETION_WEBHOOK_URL must be an http:// or https:// URL with a host, got \"\(v)\"")
            }
            c.completionWebhookURL = v
        },
        Option(env: "RELAY_COMPLETION_WEBHOOK_SECRET", flag: "--completion-webhook-secret", default: "—", unit: "whsec_<base64>",
               doc: "Standard Webhooks signing secret of the completion webhook: whsec_ then base64 of 24–64 bytes") { c, v in
            let rule = "whsec_ followed by the base64 of 24 to 64 bytes (Standard Webhooks; make one with whsec_$(openssl rand -base64 32))"
            guard v.hasPrefix("whsec_") else {
                throw ConfigError("RELAY_COMPLETION_WEBHOOK_SECRET has no whsec_ prefix: it must be \(rule)")
            }
            guard let key = Data(base64Encoded: String(v.dropFirst(6))) else {
                throw ConfigError("RELAY_COMPLETION_WEBHOOK_SECRET is not base64 after whsec_: it must be \(rule)")
            }
            guard (24...64).contains(key.count) else {
                throw ConfigError("RELAY_COMPLETION_WEBHOOK_SECRET decodes to \(key.count) bytes: it must be \(rule)")
            }
            c.completionWebhookSecret = v
        },
        Option(env: "RELAY_COMPLETION_WEBHOOK_TIMEOUT", flag: "--completion-webhook-timeout", default: "10s", unit: "duration",
               doc: "timeout of one completion webhook attempt (connect to response end); then it is retried") { c, v in
            c.completionWebhookTimeoutMs = try duration(v, "RELAY_COMPLETION_WEBHOOK_TIMEOUT", 100...120_000)
        },
        Option(env: "RELAY_COMPLETION_WEBHOOK_MAX_ATTEMPTS", flag: "--completion-webhook-max-attempts", default: "10", unit: "attempts",
               doc: "attempts per completion webhook; after the last failure it is dropped (relay_completion_webhooks_total{result=\"dropped\"})") { c, v in
            c.completionWebhookMaxAttempts = try int(v, "RELAY_COMPLETION_WEBHOOK_MAX_ATTEMPTS", 1...100)
        },
        Option(env: "RELAY_COMPLETION_WEBHOOK_RETRY_BASE", flag: "--completion-webhook-retry-base", default: "2s", unit: "duration",
               doc: "delay before the first retry of a completion webhook, doubled per retry up to 10m, with jitter") { c, v in
            c.completionWebhookRetryBaseMs = try duration(v, "RELAY_COMPLETION_WEBHOOK_RETRY_BASE", 10...600_000)
        },
        Option(env: "RELAY_COMPLETION_WEBHOOK_GRACE", flag: "--completion-webhook-grace", default: "2s", unit: "duration",
               doc: "how long after an answer ends a client may still read its end; one that does (any instance) means no webhook") { c, v in
            c.completionWebhookGraceMs = try duration(v, "RELAY_COMPLETION_WEBHOOK_GRACE", 0...600_000)
        },
        Option(env: "RELAY_DEBUG_REPLAY_DELAY", flag: "--debug-replay-delay", default: "0", unit: "duration",
               doc: "test fault injection: stall between subscribe and replay", testOnly: true) { c, v in
            c.debugReplayDelayMs = try duration(v, "RELAY_DEBUG_REPLAY_DELAY", 0...60_000)
        },
        Option(env: "RELAY_LOSSLESS_RESUME", flag: "--lossless-resume", default: "on", unit: "on/off",
               doc: "keep the full text for resumes beyond the window: on/off") { c, v in
            c.losslessResume = try bool(v, "RELAY_LOSSLESS_RESUME")
        },
        Option(env: "RELAY_ENCRYPTION_KEYS", flag: "--encryption-keys", default: "—", unit: "kid:base64,… or file:///path",
               doc: "seal events, live messages, answer text, stored requests and retained answers in Redis with AES-256-GCM (unset: plaintext): comma-separated kid:base64-of-32-bytes pairs, the current key first (older keys still open), or file:///path to a file holding them (docs/DATA_MODEL.md §15)") { c, v in
            guard !v.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
                throw ConfigError("RELAY_ENCRYPTION_KEYS is empty: give kid:base64-of-32-bytes pairs, comma-separated, the current key first, or file:///path")
            }
            c.encryptionKeys = v
        },
        Option(env: "RELAY_ANSWER_RETENTION", flag: "--answer-retention", default: "24h", unit: "duration",
               doc: "how long a finished answer (done, cancelled, budget cut) is kept after its final event for resumes and GET /api/chat/answers/{id} once its events expired: 24h, 90m, 0 (off)") { c, v in
            c.answerRetentionMs = try duration(v, "RELAY_ANSWER_RETENTION", 0...2_592_000_000)
        },
        Option(env: "RELAY_ANSWER_RETENTION_MAX_BYTES", flag: "--answer-retention-max-bytes", default: "1048576", unit: "bytes",
               doc: "largest retained answer (its text plus about 1.4 bytes per event); a longer answer is not retained") { c, v in
            c.answerRetentionMaxBytes = try int(v, "RELAY_ANSWER_RETENTION_MAX_BYTES", 1...67_108_864)
        },
    ]

    /// Builds a configuration from `environment` then `arguments` (`--flag value` or
    /// `--flag=value`; flags win).
    /// - Throws: `ConfigError` naming the variable for a bad value or an unknown flag.
    public static func load(environment: [String: String], arguments: [String], defaultWorkers: Int) throws -> RelayConfig {
        var c = RelayConfig()
        c.workers = max(1, defaultWorkers)
        for o in options {
            if let v = environment[o.env] { try o.apply(&c, v) }
        }
        var i = 0
        while i < arguments.count {
            let a = arguments[i]
            var name = a
            var value: String?
            if let eq = a.firstIndex(of: "=") {
                name = String(a[..<eq])
                value = String(a[a.index(after: eq)...])
            }
            guard let o = options.first(where: { $0.flag == name }) else { throw ConfigError("unknown option \(a) (see --help)") }
            if value == nil {
                i += 1
                guard i < arguments.count else { throw ConfigError("\(name) needs a value") }
                value = arguments[i]
            }
            try o.apply(&c, value!)
            i += 1
        }
        return c
    }

    /// The `--help` text of the options.
    ///
    /// The operator's options, then the logging settings (environment only, read by the
    /// log at startup), in two columns aligned to the longest left column.
    public static var helpText: String {
        columns(options.filter { !$0.testOnly }.map { ("\($0.flag) / \($0.env)", $0.help) })
            + "\n\nLogging (environment only):\n"
            + columns(loggingSettings)
    }

    /// The log's settings, read from the environment at startup: variable, meaning.
    public static let loggingSettings: [(String, String)] = [
        ("RELAY_LOG_LEVEL", "lowest level written: debug, info, warn, error (default info)"),
        ("RELAY_LOG_FORMAT", "json, text, or auto: text when stderr is a terminal, JSON otherwise (default auto)"),
    ]

    /// The test-only options (`Option.testOnly`), for `stream-relay help serve --test-options`.
    public static var testOptionsHelpText: String {
        columns(options.filter(\.testOnly).map { ("\($0.flag) / \($0.env)", $0.help) })
    }

    /// The column every description starts in, characters.
    public static let helpIndent = 8
    /// The width help text is wrapped to, characters (a word longer than the line stays whole).
    public static let helpWidth = 80

    /// Each row as its name on a line of its own (two spaces in), then its description on the
    /// lines below, all starting at `helpIndent` and wrapped at word boundaries to `helpWidth`,
    /// so the columns line up and fit an 80-column terminal whatever the names' lengths.
    static func columns(_ rows: [(String, String)]) -> String {
        rows.map { name, help in
            (["  " + name] + wrap(help, indent: helpIndent, width: helpWidth)).joined(separator: "\n")
        }.joined(separator: "\n")
    }

    /// `text` as lines of at most `width` characters, each prefixed by `indent` spaces.
    public static func wrap(_ text: String, indent: Int, width: Int) -> [String] {
        let pad = String(repeating: " ", count: indent)
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ", omittingEmptySubsequences: true) {
            if !line.isEmpty && indent + line.count + 1 + word.count > width {
                lines.append(pad + line)
                line = ""
            }
            line += line.isEmpty ? String(word) : " " + word
        }
        if !line.isEmpty { lines.append(pad + line) }
        return lines
    }

    static func int(_ v: String, _ name: String, _ range: ClosedRange<Int>) throws -> Int {
        guard let n = Int(v), range.contains(n) else {
            throw ConfigError("\(name) must be an integer from \(range.lowerBound) to \(range.upperBound), got \"\(v)\"")
        }
        return n
    }

    static func bool(_ v: String, _ name: String) throws -> Bool {
        switch v.lowercased() {
        case "1", "true", "on", "yes": return true
        case "0", "false", "off", "no": return false
        default: throw ConfigError("\(name) must be on or off, got \"\(v)\"")
        }
    }

    /// Parses `300`, `300s`, `5m`, `1500ms`, `1h` into milliseconds.
    public static func duration(_ v: String, _ name: String, _ range: ClosedRange<Int>) throws -> Int {
        let units: [(String, Double)] = [("ms", 1), ("s", 1000), ("m", 60_000), ("h", 3_600_000)]
        var number = Substring(v)
        var scale = 1000.0
        for (suffix, s) in units where v.hasSuffix(suffix) {
            number = v.dropLast(suffix.count)
            scale = s
            break
        }
        guard let d = Double(number), d.isFinite, d >= 0 else {
            throw ConfigError("\(name) must be a duration such as 15, 15s, 500ms or 5m, got \"\(v)\"")
        }
        let ms = Int((d * scale).rounded())
        guard range.contains(ms) else {
            throw ConfigError("\(name) must be between \(range.lowerBound) ms and \(range.upperBound) ms, got \"\(v)\"")
        }
        return ms
    }
}

extension String {
    func trimmingCharacters(in set: String) -> String {
        var s = Substring(self)
        while let f = s.first, set.contains(f) { s.removeFirst() }
        while let l = s.last, set.contains(l) { s.removeLast() }
        return String(s)
    }
}
