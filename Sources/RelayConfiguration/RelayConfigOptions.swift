import Foundation
import RelayCore

/// Every option of `stream-relay serve`: its variable, flag, default, unit, meaning and parse
/// (`RelayConfig.Option`), in `--help` order.
extension RelayConfig {
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
               doc: "upstream adapter: simulated, openai, openai-responses, anthropic, ai-sdk (your own agent backend)") { c, v in
            guard ["simulated", "openai", "openai-responses", "anthropic", "ai-sdk"].contains(v) else {
                throw ConfigError("RELAY_UPSTREAM must be simulated, openai, openai-responses, anthropic or ai-sdk, got \"\(v)\"")
            }
            c.upstream = v
        },
        Option(env: "RELAY_UPSTREAM_IDENTITY_SECRET", flag: "--upstream-identity-secret", default: "—", unit: "secret",
               doc: "HS256 secret (32+ bytes) of the X-Relay-Identity token sent to an ai-sdk upstream (docs/AGENTS.md)") { c, v in
            guard v.utf8.count >= 32 else {
                throw ConfigError("RELAY_UPSTREAM_IDENTITY_SECRET must be at least 32 bytes (make one with `openssl rand -base64 48`)")
            }
            c.upstreamIdentitySecret = v
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
        Option(env: "RELAY_SYSTEM_PROMPTS", flag: "--system-prompts", default: "—", unit: "JSON or file:///path",
               doc: "system prompt put first in every request: {\"default\", \"models\": {model: prompt}, \"tiers\": {tier: prompt}}; a model's wins over a tier's, a tier's over the default") { c, v in
            c.systemPrompts = v
        },
        Option(env: "RELAY_CLIENT_PARAMETERS", flag: "--client-parameters",
               default: ChatRequest.clientParameterNames.joined(separator: ","), unit: "names or none",
               doc: "the sampling fields a client may send, images (image parts by URL) and tools (tools and tool_choice), comma-separated (none: nothing); another one sent: 400 invalid_request") { c, v in
            let known = ChatRequest.clientParameterNames
            let names = v.trimmingCharacters(in: .whitespaces) == "none" ? []
                : v.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            if let bad = names.first(where: { !known.contains($0) }) {
                throw ConfigError("RELAY_CLIENT_PARAMETERS: unknown field \"\(bad)\" (known: \(known.joined(separator: ", ")), or none)")
            }
            c.clientParameters = names
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
               doc: "upstream base URL (openai, openai-responses, anthropic), or an ai-sdk backend's chat endpoint") { c, v in
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
               doc: "how an HTTP upstream continues a lost answer: auto (anthropic: anthropic-prefill; openai, openai-responses: off), off, anthropic-prefill, vllm, llama-cpp") { c, v in
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
}
