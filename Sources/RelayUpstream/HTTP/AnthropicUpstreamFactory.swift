import RelayCore
import RelayLoop

/// `RELAY_UPSTREAM=anthropic`: makes upstreams that stream from the Anthropic Messages API,
/// `POST {UPSTREAM_URL}/v1/messages`.
///
/// Request: headers `Content-Type: application/json`, `Accept: text/event-stream`,
/// `x-api-key: {UPSTREAM_API_KEY}` (omitted when empty), `anthropic-version:
/// {config.anthropicVersion}` (2023-06-01); body
/// `{"model","max_tokens","stream":true,"system"?,"messages"}` with the request's `system`
/// messages moved to `system`. `max_tokens` is the request's or `config.defaultMaxTokens`
/// (required by the API); summary mode caps it at `config.summaryMaxTokens` and puts
/// `config.summaryInstruction` first in `system`.
///
/// Stream mapping: `content_block_delta`/`text_delta` → `delta`; `message_start` and
/// `message_delta` usage and `stop_reason` → `done` at `message_stop` (`end_turn` → `stop`,
/// `max_tokens` → `length`); `ping` ignored; `error` → 502 `upstream_error`. Failures: see
/// `SSEStreamUpstream`. One factory per worker, used on its loop thread.
public final class AnthropicUpstreamFactory: UpstreamFactory {
    /// The settings in use.
    public let config: HTTPUpstreamConfig
    /// Skipped chunks and replaced surrogate halves of every upstream this factory makes.
    public let counters: UpstreamTextCounters
    private let multis: CurlMultiPerLoop

    /// - Parameters:
    ///   - config: `UPSTREAM_URL`, `UPSTREAM_API_KEY`, `UPSTREAM_MODEL`, timeouts, limits.
    ///   - multi: the worker's `CurlMulti`; `nil`: the factory makes one per loop on first use.
    ///   - counters: shared by all workers' factories so `/metrics` reads one total.
    public init(config: HTTPUpstreamConfig, multi: CurlMulti? = nil, counters: UpstreamTextCounters = UpstreamTextCounters()) {
        self.config = config
        self.counters = counters
        multis = CurlMultiPerLoop(multi)
    }

    /// - Throws: `APIError` 400 `invalid_request` when the request names no model and no
    ///   default is configured; 500 `internal_error` when libcurl cannot be set up.
    public func makeUpstream(for request: ChatRequest, loop: EventLoop) throws -> Upstream {
        let model = try request.resolvedModel(config.defaultModel)
        let summary = request.mode == .summary
        let maxTokens = request.mode == .summary
            ? request.effectiveMaxTokens(summaryCap: config.summaryMaxTokens) ?? config.summaryMaxTokens
            : request.maxTokens ?? config.defaultMaxTokens
        let body = AnthropicDialect.body(model: model, messages: request.messages, maxTokens: maxTokens,
                                         summaryInstruction: summary ? config.summaryInstruction : nil)
        var headers = ["Content-Type: application/json", "Accept: text/event-stream",
                       "anthropic-version: \(config.anthropicVersion)"]
        if !config.apiKey.isEmpty { headers.append("x-api-key: \(config.apiKey)") }
        let req = UpstreamTransfer.Request(url: config.endpoint("/v1/messages"), headers: headers, body: body,
                                           connectTimeoutMs: config.connectTimeoutMs,
                                           noProxy: config.noProxy, caInfo: config.caInfo)
        return SSEStreamUpstream(request: req, multi: try multis.multi(for: loop), config: config,
                                 dialect: AnthropicDialect(), estimatedPromptTokens: request.estimatedPromptTokens,
                                 counters: counters)
    }
}
