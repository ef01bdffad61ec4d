/// How an HTTP upstream continues an answer whose generating instance was lost
/// (`RELAY_UPSTREAM_CONTINUATION`, docs/UPSTREAMS.md "Continuing an answer").
///
/// Every mode sends the request's messages plus the answer so far, without its trailing
/// whitespace (`ContinuationSeam`), as a final `assistant` message, with `max_tokens` the
/// grant minus the tokens already generated. They differ in what tells the server to
/// continue that message instead of answering after it.
public enum HTTPContinuation: String, Sendable, Equatable, CaseIterable {
    /// The upstream cannot continue: a lost answer ends with `upstream_lost`. Default of
    /// `openai` (OpenAI's own API starts a new message after a final assistant one).
    case off
    /// Anthropic Messages API prefill: a final `assistant` message is continued ("Prefill
    /// Claude's response"). Default of `anthropic`. Models that refuse prefill (Anthropic
    /// documents a 400 for Claude 4.6 models) need `off`.
    case anthropicPrefill = "anthropic-prefill"
    /// vLLM's chat completions extra parameters `"continue_final_message": true,
    /// "add_generation_prompt": false` (also accepted by recent llama.cpp servers and other
    /// servers built on Hugging Face chat templates).
    case vllm
    /// llama.cpp server (`llama-server`): a final `assistant` message is continued as a
    /// prefill by default (unless the server runs with `--no-prefill-assistant`).
    case llamaCpp = "llama-cpp"
}
