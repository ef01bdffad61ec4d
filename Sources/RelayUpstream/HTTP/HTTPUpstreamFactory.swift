import RelayCore
import RelayLoop

/// `RELAY_UPSTREAM=openai|openai-responses|anthropic`: makes upstreams that stream over HTTPS
/// from an LLM API through the worker's libcurl multi handle. The APIs differ only in
/// their dialect: the request (path, headers, body) built here, and the stream
/// mapping in `OpenAIDialect` / `OpenAIResponsesDialect` / `AnthropicDialect`. Failures: see `SSEStreamUpstream`
/// (502 `upstream_error`, 504 `upstream_timeout`). One factory per worker, used on its
/// loop thread.
///
/// * `.openAI` — any OpenAI-compatible `POST {UPSTREAM_URL}/v1/chat/completions`
///   (OpenAI, vLLM, llama.cpp server, Ollama, LiteLLM). Headers `Content-Type:
///   application/json`, `Accept: text/event-stream`, `Authorization: Bearer
///   {UPSTREAM_API_KEY}` (omitted when the key is empty); body
///   `{"model","messages","stream":true,"stream_options":{"include_usage":true},"max_tokens"?}`.
///   Summary mode caps `max_tokens` at `config.summaryMaxTokens` and puts
///   `config.summaryInstruction` first as a system message.
/// * `.openAIResponses` — OpenAI's Responses API, `POST {UPSTREAM_URL}/v1/responses`. Headers
///   as `.openAI`; body `{"model","input","stream":true,"store":false,"instructions"?,
///   "max_output_tokens"?,"temperature"?,"top_p"?}` (`OpenAIResponsesDialect.body`): the
///   messages as `input`, `max_output_tokens` the request's (at least 16, the API's minimum);
///   summary mode caps it at `config.summaryMaxTokens` and sends `config.summaryInstruction` as
///   `instructions`. `stop`, `seed` and the penalties are refused (the API has none). No
///   continuation.
/// * `.anthropic` — the Messages API, `POST {UPSTREAM_URL}/v1/messages`. Headers
///   `Content-Type`, `Accept`, `x-api-key` (omitted when empty), `anthropic-version:
///   {config.anthropicVersion}`; body `{"model","max_tokens","stream":true,"system"?,"messages"}`
///   with the request's `system` messages moved to `system`. `max_tokens` is the
///   request's or `config.defaultMaxTokens` (required by the API); summary mode caps it
///   at `config.summaryMaxTokens` and puts `config.summaryInstruction` first in `system`.
///
/// `model` is the request's or `config.defaultModel`.
///
/// Continuation (`prepareContinuation`, `config.continuation`, docs/UPSTREAMS.md
/// "Continuing an answer"): the same request plus the answer so far as a final assistant
/// message, as `HTTPContinuation` says; `off` refuses with `ContinuationUnsupported`.
public final class HTTPUpstreamFactory: UpstreamFactory {
    /// Which API the upstream speaks.
    public enum API: String, Sendable {
        /// OpenAI-compatible chat completions.
        case openAI = "openai"
        /// OpenAI Responses (`/v1/responses`).
        case openAIResponses = "openai-responses"
        /// Anthropic Messages.
        case anthropic
        /// The app's own agent backend, streaming the AI SDK UI Message Stream
        /// (`UIMessageStreamDialect`): `POST {UPSTREAM_URL}` as given, with the caller's signed
        /// identity (`X-Relay-Identity`).
        case uiMessageStream = "ai-sdk"
    }

    /// Signs the caller's identity for an `ai-sdk` backend: the `X-Relay-Identity` value for
    /// a caller and the request body it goes with; `nil` sends none.
    public typealias IdentitySigner = @Sendable (CallerIdentity, [UInt8]) -> String?
    private let identity: IdentitySigner?

    /// The API spoken.
    public let api: API
    /// The settings in use.
    public let config: HTTPUpstreamConfig
    /// Skipped chunks and replaced surrogate halves of every upstream this factory makes.
    public let counters: UpstreamTextCounters
    private let multis: CurlMultiPerLoop

    /// - Parameters:
    ///   - config: `UPSTREAM_URL`, `UPSTREAM_API_KEY`, `UPSTREAM_MODEL`, timeouts, limits.
    ///   - multi: the worker's `CurlMulti`; `nil`: the factory makes one per loop on first use.
    ///   - counters: shared by all workers' factories so `/metrics` reads one total.
    ///   - identity: signs `X-Relay-Identity` for `.uiMessageStream` (docs/AGENTS.md).
    public init(_ api: API, config: HTTPUpstreamConfig, multi: CurlMulti? = nil,
                counters: UpstreamTextCounters = UpstreamTextCounters(), identity: IdentitySigner? = nil) {
        self.identity = identity
        self.api = api
        self.config = config
        self.counters = counters
        multis = CurlMultiPerLoop(multi)
    }

    /// - Throws: `APIError` 400 `invalid_request` when the request names no model and no
    ///   default is configured, sets a sampling field the API does not take
    ///   (`AnthropicDialect.refusal(of:)`, `OpenAIResponsesDialect.refusal(of:)`), has a tool
    ///   call whose arguments the Messages API cannot take
    ///   (`AnthropicDialect.refusal(ofToolCallsIn:)`), or has tools the Responses API is not
    ///   sent (`toolRefusal(_:upstream:)`). The plan's `make` throws 500 `internal_error` when
    ///   libcurl cannot be set up.
    public func prepare(_ request: ChatRequest) throws -> UpstreamPlan {
        try call(request, maxTokens: grantedMaxTokens(request), continuing: nil)
    }

    /// The continuation mode in use: `config.continuation`, else the API's default
    /// (`anthropic-prefill` for `.anthropic`, `off` for `.openAI` and `.openAIResponses`).
    public var continuation: HTTPContinuation {
        config.continuation ?? (api == .anthropic ? .anthropicPrefill : .off)
    }

    /// The call that continues `soFar` (docs/UPSTREAMS.md, "Continuing an answer"): the
    /// request's messages, then the answer so far without its trailing whitespace as a final
    /// `assistant` message (none when nothing but whitespace was generated), in the form of
    /// `continuation`; `max_tokens` is the first call's (the request's, or the API's default,
    /// capped in summary mode) minus `soFar.completionTokens`. The upstream emits only what
    /// follows `soFar.text` (`ContinuationSeam`), then its terminal event; its usage is what
    /// the upstream reports for this call (the prompt includes the prefill).
    /// - Throws: `ContinuationUnsupported` when `continuation` is `off` (or does not match
    ///   the API), when the answer so far has parts (`AnswerSoFar.hasParts`), or when no
    ///   token of the grant is left; `APIError` as `prepare`.
    public func prepareContinuation(_ request: ChatRequest, soFar: AnswerSoFar) throws -> UpstreamPlan {
        let mode = continuation
        switch (mode, api) {
        case (.anthropicPrefill, .anthropic), (.vllm, .openAI), (.llamaCpp, .openAI):
            break
        default:
            throw ContinuationUnsupported(reason: "upstream \(api.rawValue): continuation \(mode.rawValue)")
        }
        // A prefill continues text alone: reasoning or a tool call cannot be handed back
        // half done (docs/PROTOCOL.md §4.5).
        guard !soFar.hasParts else {
            throw ContinuationUnsupported(reason: "upstream \(api.rawValue): the answer so far has parts a prefill cannot continue")
        }
        var maxTokens = grantedMaxTokens(request)
        if let m = maxTokens {
            let left = m - max(0, soFar.completionTokens)
            guard left >= 1 else {
                throw ContinuationUnsupported(reason: "upstream \(api.rawValue): max_tokens \(m) used up by the \(soFar.completionTokens) tokens so far")
            }
            maxTokens = left
        }
        return try call(request, maxTokens: maxTokens, continuing: (soFar, mode))
    }

    /// `max_tokens` of a first call: OpenAI (both APIs) sends the request's (`nil`: none), Anthropic the
    /// request's or `config.defaultMaxTokens`; summary mode caps both at `config.summaryMaxTokens`.
    private func grantedMaxTokens(_ request: ChatRequest) -> Int? {
        switch api {
        case .openAI, .openAIResponses:
            return request.effectiveMaxTokens(summaryCap: config.summaryMaxTokens)
        case .anthropic:
            return request.mode == .summary
                ? request.effectiveMaxTokens(summaryCap: config.summaryMaxTokens) ?? config.summaryMaxTokens
                : request.maxTokens ?? config.defaultMaxTokens
        case .uiMessageStream:
            return request.effectiveMaxTokens(summaryCap: config.summaryMaxTokens)
        }
    }

    /// The plan of one call: a first one (`continuing` nil) or a continuation of an answer.
    private func call(_ request: ChatRequest, maxTokens: Int?, continuing: (soFar: AnswerSoFar, mode: HTTPContinuation)?) throws -> UpstreamPlan {
        if api == .uiMessageStream {
            // The backend owns the model and the prompts: it gets the messages, who asked, and
            // the model the request named (or UPSTREAM_MODEL), if any.
            let body = UIMessageStreamDialect.body(requestID: request.caller?.requestID ?? "", messages: request.messages,
                                                   model: request.model ?? config.defaultModel, maxTokens: maxTokens,
                                                   summary: request.mode == .summary)
            var headers: [String] = []
            if !config.apiKey.isEmpty { headers.append("Authorization: Bearer \(config.apiKey)") }
            if let caller = request.caller, let token = identity?(caller, body) { headers.append("X-Relay-Identity: \(token)") }
            return plan(path: "", headers: headers, body: body, prompt: request.estimatedPromptTokens, seam: nil) { UIMessageStreamDialect() }
        }
        let model = try request.resolvedModel(config.defaultModel)
        if api == .anthropic, let why = AnthropicDialect.refusal(of: request.sampling) ?? AnthropicDialect.refusal(ofToolCallsIn: request.messages) {
            throw APIError.invalidRequest(why)
        }
        if api == .openAIResponses, let why = OpenAIResponsesDialect.refusal(of: request.sampling) ?? Self.toolRefusal(request, upstream: api.rawValue) {
            throw APIError.invalidRequest(why)
        }
        let summary = request.mode == .summary ? config.summaryInstruction : nil
        let split = continuing.map { ContinuationSeam.split($0.soFar.text) }
        let seam = split.map { ContinuationSeam(whitespace: $0.whitespace) }
        var prompt = request.estimatedPromptTokens
        if let p = split?.prefill, !p.isEmpty { prompt += ChatRequest.estimatePromptTokens([p]) }
        switch api {
        case .openAI:
            let body = OpenAIDialect.body(model: model, messages: request.messages, maxTokens: maxTokens,
                                          summaryInstruction: summary, prefill: split?.prefill,
                                          continuing: continuing?.mode ?? .off, sampling: request.sampling,
                                          tools: request.tools, toolChoice: request.toolChoice)
            var headers: [String] = []
            if !config.apiKey.isEmpty { headers.append("Authorization: Bearer \(config.apiKey)") }
            return plan(path: "/v1/chat/completions", headers: headers, body: body, prompt: prompt, seam: seam) { OpenAIDialect() }
        case .openAIResponses:
            let body = OpenAIResponsesDialect.body(model: model, messages: request.messages, maxTokens: maxTokens,
                                                   summaryInstruction: summary, sampling: request.sampling)
            var headers: [String] = []
            if !config.apiKey.isEmpty { headers.append("Authorization: Bearer \(config.apiKey)") }
            return plan(path: "/v1/responses", headers: headers, body: body, prompt: prompt, seam: seam) { OpenAIResponsesDialect() }
        case .uiMessageStream:
            preconditionFailure("handled above")
        case .anthropic:
            let body = AnthropicDialect.body(model: model, messages: request.messages, maxTokens: maxTokens ?? config.defaultMaxTokens,
                                             summaryInstruction: summary, prefill: split?.prefill,
                                             sampling: request.sampling, tools: request.tools, toolChoice: request.toolChoice)
            var headers = ["anthropic-version: \(config.anthropicVersion)"]
            if !config.apiKey.isEmpty { headers.append("x-api-key: \(config.apiKey)") }
            return plan(path: "/v1/messages", headers: headers, body: body, prompt: prompt, seam: seam) { AnthropicDialect() }
        }
    }

    /// Why an upstream whose request body does not carry tools cannot take `request`, as a
    /// client error: its `tools` (and `tool_choice`), or tool calls and tool messages in its
    /// conversation, would otherwise be dropped or sent in a shape its API refuses. `nil`: the
    /// request has none.
    static func toolRefusal(_ request: ChatRequest, upstream: String) -> String? {
        if !request.tools.isEmpty || request.toolChoice != nil { return "\"tools\" is not supported by the \(upstream) upstream" }
        if request.messages.contains(where: { !$0.toolCalls.isEmpty || $0.role == "tool" }) {
            return "tool calls and tool messages are not supported by the \(upstream) upstream"
        }
        return nil
    }

    /// The transfer request (JSON in, SSE out) and, on `make`, the streaming upstream.
    private func plan<D: UpstreamDialect>(path: String, headers: [String], body: [UInt8], prompt: Int,
                                          seam: ContinuationSeam?, dialect: @escaping () -> D) -> UpstreamPlan {
        let req = UpstreamTransfer.Request(url: config.endpoint(path),
                                           headers: ["Content-Type: application/json", "Accept: text/event-stream"] + headers,
                                           body: body, connectTimeoutMs: config.connectTimeoutMs,
                                           noProxy: config.noProxy, caInfo: config.caInfo)
        let config = self.config, multis = self.multis, counters = self.counters
        return UpstreamPlan { loop in
            SSEStreamUpstream(request: req, multi: try multis.multi(for: loop), config: config,
                              dialect: dialect(), estimatedPromptTokens: prompt, counters: counters, seam: seam)
        }
    }
}
