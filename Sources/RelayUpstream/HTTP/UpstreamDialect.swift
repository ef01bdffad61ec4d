import RelayCore

/// What one upstream SSE message means for the relay's stream.
enum DialectStep: Equatable {
    /// Nothing to emit (role chunk, ping, block start/stop, usage-only chunk, unknown type).
    case ignore
    /// Generated text.
    case delta(String)
    /// The upstream's explicit end of stream (`data: [DONE]`, `message_stop`).
    case end
    /// The upstream reported an error inside the stream; the text explains it.
    case fail(String)
}

/// An upstream message that does not have the documented shape (not JSON, wrong types).
struct MalformedChunk: Error {
    let reason: String
}

/// One upstream streaming format: maps its SSE messages to `DialectStep`s and remembers what
/// the stream reported along the way (finish reason, token counts).
protocol UpstreamDialect {
    /// Maps one dispatched SSE message.
    /// - Throws: `MalformedChunk` when the message is not what the format documents.
    mutating func step(_ message: SSEMessage) throws(MalformedChunk) -> DialectStep
    /// The relay's `finish_reason` reported so far (`stop`, `length`, …), if any.
    var finishReason: String? { get }
    /// Prompt tokens reported by the upstream, if any.
    var promptTokens: Int? { get }
    /// Completion tokens reported by the upstream, if any.
    var completionTokens: Int? { get }
    /// Name used in error messages (`"OpenAI-compatible"`, `"Anthropic"`).
    static var name: String { get }
}
