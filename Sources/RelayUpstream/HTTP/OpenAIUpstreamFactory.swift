import RelayCore
import RelayLoop

/// `RELAY_UPSTREAM=openai`: makes upstreams that stream from an OpenAI-compatible
/// `POST {UPSTREAM_URL}/v1/chat/completions` (OpenAI, vLLM, llama.cpp server, Ollama, LiteLLM).
///
/// Request: headers `Content-Type: application/json`, `Accept: text/event-stream`,
/// `Authorization: Bearer {UPSTREAM_API_KEY}` (omitted when the key is empty); body
/// `{"model","messages","stream":true,"stream_options":{"include_usage":true},"max_tokens"?}`.
/// `model` is the request's or `config.defaultModel`. Summary mode caps `max_tokens` at
/// `config.summaryMaxTokens` and puts `config.summaryInstruction` first as a system message.
///
/// Stream mapping: `choices[0].delta.content` → `delta`; `finish_reason` and the usage chunk →
/// `done` at `data: [DONE]`. Failures: see `SSEStreamUpstream` (502 `upstream_error`,
/// 504 `upstream_timeout`). One factory per worker, used on its loop thread.
public final class OpenAIUpstreamFactory: UpstreamFactory {
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
        let body = OpenAIDialect.body(model: model, messages: request.messages,
                                      maxTokens: request.effectiveMaxTokens(summaryCap: config.summaryMaxTokens),
                                      summaryInstruction: summary ? config.summaryInstruction : nil)
        var headers = ["Content-Type: application/json", "Accept: text/event-stream"]
        if !config.apiKey.isEmpty { headers.append("Authorization: Bearer \(config.apiKey)") }
        let req = UpstreamTransfer.Request(url: config.endpoint("/v1/chat/completions"), headers: headers, body: body,
                                           connectTimeoutMs: config.connectTimeoutMs,
                                           noProxy: config.noProxy, caInfo: config.caInfo)
        return SSEStreamUpstream(request: req, multi: try multis.multi(for: loop), config: config,
                                 dialect: OpenAIDialect(), estimatedPromptTokens: request.estimatedPromptTokens,
                                 counters: counters)
    }
}
