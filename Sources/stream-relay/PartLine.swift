import RelayCore

/// How `stream-relay chat` shows an answer's typed parts (docs/PROTOCOL.md §5.5): one status
/// line each, beside the answer's text, never in it. Pure.
enum PartLine {
    /// Longest JSON shown of a call's input or output, characters.
    static let maxJSON = 160

    /// The status line of `part`, or `nil` for a part shown otherwise (reasoning, shown
    /// joined by `reasoning(_:)`; an argument piece, shown whole at the call's end).
    static func of(_ part: AnswerPart) -> String? {
        switch part {
        case .reasoning, .toolCallDelta: return nil
        case .reasoningRedacted: return "✎ (reasoning, redacted by the model's provider)"
        case .toolCallStart(_, let name): return "⚙ calling \(name)…"
        case .toolCallEnd(_, let name, let input): return "⚙ \(name)(\(clip(input.compactJSON)))"
        case .toolResult(_, let output): return "  ↳ \(clip(output.compactJSON))"
        case .source(_, let url, let title): return "🔗 " + (title.map { "\($0) — " } ?? "") + url
        case .data(let name, _, let value): return "▦ \(name): \(clip(value.compactJSON))"
        }
    }

    /// The reasoning so far as one line (line breaks as spaces, clipped to 200 characters).
    static func reasoning(_ text: String) -> String {
        let one = text.split(whereSeparator: \.isNewline).joined(separator: " ")
        return "✎ " + (one.count > 200 ? one.prefix(199) + "…" : one)
    }

    private static func clip(_ s: String) -> String { s.count > maxJSON ? s.prefix(maxJSON - 1) + "…" : s }
}
