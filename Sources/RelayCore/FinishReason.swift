/// Why an answer finished: the `finish_reason` of a `done` event (docs/PROTOCOL.md §5).
/// The relay itself writes `stop`, `length` and `cancelled`; an upstream may report
/// others (OpenAI's `content_filter`, Anthropic's `stop_sequence` mapped by the adapter),
/// which pass through unchanged, so this is an open set of strings rather than an enum.
public struct FinishReason: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The wire text.
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { rawValue = value }

    /// The model finished its answer.
    public static let stop: FinishReason = "stop"
    /// The answer reached its completion-token cap (the request's `max_tokens`, the
    /// tier's cap, or the budget's grant: then `done` also says `budget_limited`).
    public static let length: FinishReason = "length"
    /// A client stopped the answer (`DELETE`, docs/PROTOCOL.md §7).
    public static let cancelled: FinishReason = "cancelled"

    public var description: String { rawValue }
}
