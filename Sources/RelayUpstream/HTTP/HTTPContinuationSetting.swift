import RelayConfiguration

/// `RELAY_UPSTREAM_CONTINUATION` read for an upstream's API (docs/UPSTREAMS.md "Continuing an
/// answer"): which `HTTPContinuation` mode applies.
extension HTTPContinuation {
    /// The setting's accepted values: `auto` (the API's default) and each mode.
    public static let settingValues = ["auto"] + allCases.map(\.rawValue)

    /// The mode of `setting` for an upstream speaking `api`.
    /// - Parameters:
    ///   - setting: `RELAY_UPSTREAM_CONTINUATION`: `auto` (→ `anthropic-prefill` for
    ///     `anthropic`, `off` for `openai` and `openai-responses`), or a mode's raw value.
    ///   - api: the upstream's API.
    /// - Throws: `ConfigError` for an unknown value, or a mode the API does not speak
    ///   (`anthropic-prefill` with `openai`; `vllm`/`llama-cpp` with `anthropic`; any but
    ///   `off` with `openai-responses`).
    public static func resolve(_ setting: String, api: HTTPUpstreamFactory.API) throws(ConfigError) -> HTTPContinuation {
        if setting == "auto" { return api == .anthropic ? .anthropicPrefill : .off }
        guard let mode = HTTPContinuation(rawValue: setting) else {
            throw ConfigError("RELAY_UPSTREAM_CONTINUATION must be one of \(settingValues.joined(separator: ", ")), got \"\(setting)\"")
        }
        switch (mode, api) {
        case (.off, _), (.anthropicPrefill, .anthropic), (.vllm, .openAI), (.llamaCpp, .openAI):
            return mode
        default:
            throw ConfigError("RELAY_UPSTREAM_CONTINUATION=\(setting) does not apply to RELAY_UPSTREAM=\(api.rawValue)")
        }
    }
}
