import RelayConfiguration
import RelayCore

/// Settings of the HTTP upstream adapters (`HTTPUpstreamFactory`, `.openAI`,
/// `.openAIResponses` and `.anthropic`). Units are in each name; defaults as in
/// docs/CONFIGURATION.md and docs/UPSTREAMS.md.
public struct HTTPUpstreamConfig: Sendable, Equatable {
    /// `UPSTREAM_URL`: scheme, host, optional port and path prefix, e.g.
    /// `https://api.openai.com`, `http://127.0.0.1:8000` (vLLM), `https://api.anthropic.com`.
    /// The API path (`/v1/chat/completions`, `/v1/messages`) is appended; a base already ending
    /// in `/v1` is not given a second one.
    public var baseURL: String
    /// `UPSTREAM_API_KEY`: sent as `Authorization: Bearer …` (OpenAI) or `x-api-key` (Anthropic).
    /// Empty: no credential header (local OpenAI-compatible servers).
    public var apiKey: String
    /// `UPSTREAM_MODEL`: the model used when a request names none. `nil`: such a request is
    /// refused with 400 `invalid_request`.
    public var defaultModel: String?
    /// `RELAY_UPSTREAM_IDLE_TIMEOUT`: no byte from the upstream for this long (ms) ends the
    /// stream with 504 `upstream_timeout`. Counts from the request being sent. Default 60,000.
    public var idleTimeoutMs: Int = 60_000
    /// Connect timeout, ms (name resolution + TCP + TLS). Default 10,000.
    public var connectTimeoutMs: Int = 10_000
    /// `RELAY_SUMMARY_MAX_TOKENS`: `max_tokens` cap in summary mode. Default 400.
    public var summaryMaxTokens: Int = 400
    /// The system instruction prepended in summary mode.
    public var summaryInstruction: String =
        "Answer with a short summary: the key points only, in a few sentences or a brief list, in the language of the question."
    /// `max_tokens` sent to Anthropic when the request has none (the Messages API requires
    /// it). Default 4096. OpenAI requests without `max_tokens` send none.
    public var defaultMaxTokens: Int = 4096
    /// Longest accepted upstream SSE line, bytes; longer → 502. Default 1 MiB.
    public var maxLineBytes: Int = 1 << 20
    /// Most bytes the upstream may send without completing an event; more → 502 and the
    /// transfer is aborted. Default 4 MiB.
    public var maxEventBytes: Int = 4 << 20
    /// Most bytes of a non-2xx response body kept to explain the error. Default 64 KiB.
    public var maxErrorBodyBytes: Int = 64 << 10
    /// `anthropic-version` header. Default `2023-06-01`.
    public var anthropicVersion: String = "2023-06-01"
    /// `RELAY_UPSTREAM_CONTINUATION`: how a lost answer is continued (`HTTPContinuation`).
    /// `nil`: the API's default (`anthropic-prefill` for `anthropic`, `off` for `openai`).
    public var continuation: HTTPContinuation?
    /// `CURLOPT_NOPROXY` override (`nil`: libcurl reads `NO_PROXY`/`no_proxy` itself).
    public var noProxy: String?
    /// A PEM CA bundle to trust instead of the system store (`nil`: system store).
    public var caInfo: String?

    /// - Parameters:
    ///   - baseURL: `UPSTREAM_URL`.
    ///   - apiKey: `UPSTREAM_API_KEY` ("" for none).
    ///   - defaultModel: `UPSTREAM_MODEL`.
    public init(baseURL: String, apiKey: String, defaultModel: String? = nil) {
        self.baseURL = baseURL
        self.apiKey = apiKey
        self.defaultModel = defaultModel
    }

    /// Checks the values a deployment sets; call when loading the configuration.
    /// - Throws: `ConfigError` naming the variable: `UPSTREAM_URL` not `http://` or `https://`
    ///   with a host; `UPSTREAM_API_KEY` or `UPSTREAM_MODEL` containing control characters (they
    ///   travel in a header / JSON); `RELAY_UPSTREAM_IDLE_TIMEOUT` or a connect timeout ≤ 0;
    ///   `RELAY_SUMMARY_MAX_TOKENS` or a size limit < 1.
    public func validate() throws(ConfigError) {
        let lower = baseURL.lowercased()
        guard let scheme = ["https://", "http://"].first(where: { lower.hasPrefix($0) }),
              baseURL.count > scheme.count, !baseURL.dropFirst(scheme.count).hasPrefix("/"),
              !baseURL.contains(where: { $0.isWhitespace }) else {
            throw ConfigError("UPSTREAM_URL must be an http:// or https:// URL with a host, got \"\(baseURL)\"")
        }
        guard !apiKey.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw ConfigError("UPSTREAM_API_KEY must not contain control characters")
        }
        if let m = defaultModel, m.isEmpty || m.unicodeScalars.contains(where: { $0.value < 0x20 }) {
            throw ConfigError("UPSTREAM_MODEL must be a non-empty name without control characters")
        }
        guard idleTimeoutMs > 0 else { throw ConfigError("RELAY_UPSTREAM_IDLE_TIMEOUT must be > 0") }
        guard connectTimeoutMs > 0 else { throw ConfigError("upstream connect timeout must be > 0") }
        guard summaryMaxTokens >= 1 else { throw ConfigError("RELAY_SUMMARY_MAX_TOKENS must be >= 1") }
        guard defaultMaxTokens >= 1, maxLineBytes >= 1, maxEventBytes >= 1, maxErrorBodyBytes >= 1 else {
            throw ConfigError("upstream token and size limits must be >= 1")
        }
    }

    /// `baseURL` joined with `path` (`/v1/…`): trailing slashes of the base are dropped, and
    /// a base ending in `/v1` does not repeat it.
    public func endpoint(_ path: String) -> String {
        var base = Substring(baseURL)
        while base.hasSuffix("/") { base = base.dropLast() }
        if base.hasSuffix("/v1"), path.hasPrefix("/v1/") { return String(base) + path.dropFirst(3) }
        return String(base) + path
    }
}
