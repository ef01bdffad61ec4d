import RelayCore

/// What one typed part event changed (`ChatUpdate.parts`): the part that arrived and the
/// answer's parts as they stand with it (docs/PROTOCOL.md §5.5). One update per part event,
/// in seq order, each part exactly once across drops and resumes. Parts never reach the
/// answer's text (`RenderUpdate`): they are not buffered, not paused in the background, and
/// play no part in the direction decision, the draft progress or the typing indicator.
public struct PartsUpdate: Sendable, Equatable {
    /// The part that arrived: reasoning, a tool call's start, argument piece or end, a tool's
    /// result, a source, or app data (shapes in `AnswerPart`).
    public var part: AnswerPart
    /// Every part of the answer so far, in the order received (`part` last).
    public var parts: [AnswerPart]
    /// The tool calls of the answer so far, in the order they started, each assembled from
    /// its parts (`ToolCall`).
    public var toolCalls: [ToolCall]
    /// The call `part` changed (started, extended, ended or given its result), as it now
    /// stands; `nil` for parts of other types, and for a `tool_call_delta` or `tool_call_end`
    /// whose call never started or had already ended, or a `tool_result` whose call had not
    /// ended or already had one (the relay sends none of these, docs/PROTOCOL.md §5.5).
    public var toolCall: ToolCall?
    /// The reasoning so far: the `reasoning` pieces' content concatenated in seq order
    /// (`reasoning_redacted` data is opaque and never part of it).
    public var reasoning: String
    /// Reasoning and argument pieces received so far: generated tokens that are not text,
    /// one each (`AnswerPart.countsAsToken`), as the relay counts them when the upstream
    /// reports no usage (docs/PROTOCOL.md §5.5, §9.2). Units: tokens.
    public var tokens: Int

    /// An update with each field as given (the stream builds them with `AnswerParts.receive(_:)`).
    public init(part: AnswerPart, parts: [AnswerPart], toolCalls: [ToolCall], toolCall: ToolCall?, reasoning: String, tokens: Int) {
        self.part = part
        self.parts = parts
        self.toolCalls = toolCalls
        self.toolCall = toolCall
        self.reasoning = reasoning
        self.tokens = tokens
    }
}
