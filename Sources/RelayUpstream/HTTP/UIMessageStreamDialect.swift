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
                case .delta(let t): return .delta(JSONString(t))
                case .part(.reasoning(let t)): return .reasoning(JSONString(t))
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

    /// The request body (see the type's documentation).
    static func body(requestID: String, messages: [ChatMessage], model: String?, maxTokens: Int?, summary: Bool) -> [UInt8] {
        var ui: [[String: Any]] = []
        for (i, m) in messages.enumerated() {
            var parts: [[String: Any]] = []
            if let ps = m.parts {
                for p in ps {
                    switch p {
                    case .text(let t): parts.append(["type": "text", "text": t])
                    case .imageURL(let url, _): parts.append(["type": "file", "mediaType": "image/*", "url": url])
                    }
                }
            } else {
                parts.append(["type": "text", "text": m.content])
            }
            ui.append(["id": "m\(i + 1)", "role": m.role, "parts": parts])
        }
        var obj: [String: Any] = ["trigger": "submit-message", "id": requestID, "messages": ui]
        if let model { obj["model"] = model }
        if let maxTokens { obj["max_tokens"] = maxTokens }
        if summary { obj["mode"] = "summary" }
        return Array((try? JSONSerialization.data(withJSONObject: obj, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data())
    }
}
