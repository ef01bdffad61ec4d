import RelayCore

/// The typed parts of one answer received so far (docs/PROTOCOL.md §5.5), in the order they
/// arrived, with each tool call assembled (`ToolCall`) and the reasoning joined. Pure: the
/// stream hands it each part event once — events whose seq was already received are
/// skipped before they get here — so a resume that lands inside a part (between two
/// argument pieces, between reasoning pieces) adds nothing twice and misses nothing.
///
/// Tool calls: a `tool_call_start` opens a call (a second start for an id already seen
/// changes nothing); a `tool_call_delta` appends to the `arguments` of its open call; a
/// `tool_call_end` sets its `name` and `input` and closes it; a `tool_result` (an agent
/// backend ran the tool) sets the `output` of its ended call. A piece or end for a call that
/// never started or already ended, and a result for a call not ended or already given one, is
/// listed in `parts` but changes no call (the relay sends none of these). The same rules hold
/// in the JavaScript kit (`clients/js/src/answerParts.js`).
public struct AnswerParts: Sendable, Equatable {
    /// Every part so far, in the order received.
    public private(set) var parts: [AnswerPart] = []
    /// The tool calls so far, in the order they started.
    public private(set) var toolCalls: [ToolCall] = []
    /// The `reasoning` pieces' content concatenated in seq order.
    public private(set) var reasoning = ""
    /// Reasoning and argument pieces received (`AnswerPart.countsAsToken`), one token each.
    public private(set) var tokens = 0
    /// Index into `toolCalls` by call id.
    private var callIndex: [String: Int] = [:]

    /// No parts yet.
    public init() {}

    /// Adds the part of one event and returns the update an app sees for it.
    public mutating func receive(_ part: AnswerPart) -> PartsUpdate {
        parts.append(part)
        if part.countsAsToken { tokens += 1 }
        var changed: ToolCall?
        switch part {
        case .reasoning(let content):
            reasoning += content
        case .toolCallStart(let id, let name):
            if callIndex[id] == nil {
                callIndex[id] = toolCalls.count
                toolCalls.append(ToolCall(id: id, name: name))
                changed = toolCalls[toolCalls.count - 1]
            }
        case .toolCallDelta(let id, let arguments):
            if let i = callIndex[id], !toolCalls[i].isEnded {
                toolCalls[i].arguments += arguments
                changed = toolCalls[i]
            }
        case .toolCallEnd(let id, let name, let input):
            if let i = callIndex[id], !toolCalls[i].isEnded {
                toolCalls[i].name = name
                toolCalls[i].input = input
                changed = toolCalls[i]
            }
        case .toolResult(let id, let output):
            if let i = callIndex[id], toolCalls[i].isEnded, toolCalls[i].output == nil {
                toolCalls[i].output = output
                changed = toolCalls[i]
            }
        case .reasoningRedacted, .source, .data:
            break
        }
        return PartsUpdate(part: part, parts: parts, toolCalls: toolCalls, toolCall: changed, reasoning: reasoning, tokens: tokens)
    }
}
