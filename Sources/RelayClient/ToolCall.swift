import Foundation
import RelayCore

/// One tool call of an answer, assembled from its parts (docs/PROTOCOL.md §5.5): the
/// `tool_call_start` that opened it, the `tool_call_delta` argument pieces received so far,
/// and the `tool_call_end` that closed it. An app shows "calling get_weather…" from `name`
/// while `arguments` streams, and runs the tool (or sends `input` to its backend) once
/// `input` is set: the arguments are handed over whole, never half-read.
///
/// Wire parts it is built from:
/// * `{"type":"tool_call_start","id":"call_1","name":"get_weather"}`
/// * `{"type":"tool_call_delta","id":"call_1","arguments":"{\"ci"}` (any number)
/// * `{"type":"tool_call_end","id":"call_1","name":"get_weather","input":{"city":"Riyadh"}}`
/// * `{"type":"tool_result","id":"call_1","output":{"temp_c":41}}` (only when an agent backend
///   ran the tool itself)
public struct ToolCall: Sendable, Equatable {
    /// The call's id (`call_1`), unique within the answer.
    public var id: String
    /// The tool's name (`get_weather`): from `tool_call_start`, then as `tool_call_end` names it.
    public var name: String
    /// The argument pieces received so far, concatenated in seq order: JSON text, not valid
    /// JSON until the call ends. For display only; use `input` to run the tool.
    public var arguments: String
    /// The complete arguments as the relay parsed them (`tool_call_end`'s `input`; `{}` when
    /// the upstream sent none); `nil` while the call is still running. JSON `null` is
    /// `.null`, not `nil`.
    public var input: JSONValue?
    /// The tool's output when the upstream ran the tool itself (an agent backend's
    /// `tool_result`, after the call ended), any JSON value as sent; `nil` until then, and for
    /// the calls the app runs. JSON `null` is `.null`.
    public var output: JSONValue?

    /// A call with the given state; by default just started: no arguments yet, not ended.
    public init(id: String, name: String, arguments: String = "", input: JSONValue? = nil, output: JSONValue? = nil) {
        self.id = id
        self.name = name
        self.arguments = arguments
        self.input = input
        self.output = output
    }

    /// `true` once the call's `tool_call_end` arrived (`input` is set).
    public var isEnded: Bool { input != nil }

    /// `input` decoded as `T` by `decoder` from its compact JSON text (numbers as the
    /// relay wrote them), or `nil` while the call is still running.
    /// - Throws: the decoder's error when `input` is not a `T`.
    public func decodeInput<T: Decodable>(_ type: T.Type, decoder: JSONDecoder = JSONDecoder()) throws -> T? {
        guard let input else { return nil }
        return try decoder.decode(T.self, from: Data(input.compactJSON.utf8))
    }
}
