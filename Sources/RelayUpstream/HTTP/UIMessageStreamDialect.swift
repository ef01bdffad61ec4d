import Foundation
import RelayCore

/// `RELAY_UPSTREAM=ai-sdk`: the app's own agent backend as the upstream, any server that
/// streams the AI SDK UI Message Stream (pydantic-ai's Vercel AI adapter, a Next.js route
/// returning `toUIMessageStreamResponse()`, a LangGraph server behind an adapter;
/// docs/AGENTS.md, "Your own backend").
///
/// The request is the AI SDK's own `submit-message` body, so such a backend takes it as it
/// takes `useChat`'s: `{"trigger":"submit-message","id":"<request id>","messages":[{"id":"m1",
/// "role":…,"parts":[{"type":"text","text":…},{"type":"file","mediaType":"image/*","url":…}]}],
/// "model"?:…,"max_tokens"?:…,"mode"?:"summary"}`. The chunks are read by
/// `UIMessageChunkReader`; the backend reports no usage, so completion tokens are counted
/// (one per text, reasoning and argument delta) and the prompt is the relay's estimate.
struct UIMessageStreamDialect: UpstreamDialect {
    static let name = "ai-sdk backend"
    private var reader = UIMessageChunkReader()
    private(set) var finishReason: String?
    var promptTokens: Int? { nil }
    var completionTokens: Int? { nil }
    var replacedArgumentHalves: Int { 0 }

    mutating func step(_ message: SSEMessage) throws(MalformedChunk) -> [DialectStep] {
        let step: UIMessageChunkReader.Step
        do {
            step = try reader.read(message.data)
        } catch {
            return [.fail("\(Self.name): \(error.reason)")]
        }
        switch step {
        case .events(let events):
            return events.compactMap { e -> DialectStep? in
                switch e {
                // The chunk's own code units: a surrogate pair split across two deltas is joined.
                case .delta(let t): return .delta(reader.lastDeltaUnits ?? JSONString(t))
                case .part(.reasoning(let t)): return .reasoning(reader.lastDeltaUnits ?? JSONString(t))
                case .part(let p): return .part(p)
                case .done, .error: return nil
                }
            }
        case .end(let reason):
            if finishReason == nil || reason != nil { finishReason = reason ?? "stop" }
            return [.end]
        case .fail(let why):
            return [.fail("\(Self.name): \(UpstreamErrorBody.oneLine(why))")]
        }
    }

    mutating func streamEnded() -> [DialectStep] { [] }

    /// The request body (see the type's documentation). Tool calls of the conversation go as
    /// the AI SDK's tool parts of the assistant message that made them,
    /// `{"type":"tool-<name>","toolCallId","state":"output-available","input","output"}`, with
    /// `output` the answering `tool` message's content (a string) and `input` the arguments
    /// parsed as JSON (their text when they are not JSON; `{}` when blank); a call no tool
    /// message answers is `"state":"input-available"` without `output`. The `tool` messages are
    /// not sent on their own (a UI message has no such role), nor are the request's `tools` and
    /// `tool_choice`: the backend declares its own tools.
    static func body(requestID: String, messages: [ChatMessage], model: String?, maxTokens: Int?, summary: Bool) -> [UInt8] {
        var outputs: [String: String] = [:]
        for m in messages where m.role == "tool" { if let id = m.toolCallID { outputs[id] = m.content } }
        var ui: [[String: Any]] = []
        for m in messages where m.role != "tool" {
            var parts: [[String: Any]] = []
            if let ps = m.parts {
                for p in ps {
                    switch p {
                    case .text(let t): parts.append(["type": "text", "text": t])
                    case .imageURL(let url, _): parts.append(["type": "file", "mediaType": "image/*", "url": url])
                    }
                }
            } else if !(m.content.isEmpty && !m.toolCalls.isEmpty) {
                parts.append(["type": "text", "text": m.content])
            }
            for call in m.toolCalls {
                var part: [String: Any] = ["type": "tool-\(call.name)", "toolCallId": call.id, "input": input(of: call)]
                if let output = outputs[call.id] {
                    part["state"] = "output-available"
                    part["output"] = output
                } else {
                    part["state"] = "input-available"
                }
                parts.append(part)
            }
            ui.append(["id": "m\(ui.count + 1)", "role": m.role, "parts": parts])
        }
        var obj: [String: Any] = ["trigger": "submit-message", "id": requestID, "messages": ui]
        if let model { obj["model"] = model }
        if let maxTokens { obj["max_tokens"] = maxTokens }
        if summary { obj["mode"] = "summary" }
        return Array((try? JSONSerialization.data(withJSONObject: obj, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data())
    }

    /// A tool part's `input`: the call's arguments parsed as JSON, `{}` when blank, their text
    /// when they are not JSON.
    private static func input(of call: ChatToolCall) -> Any {
        if call.arguments.allSatisfy(\.isWhitespace) { return [String: Any]() }
        return (try? JSONSerialization.jsonObject(with: Data(call.arguments.utf8), options: [.fragmentsAllowed])) ?? call.arguments
    }
}
