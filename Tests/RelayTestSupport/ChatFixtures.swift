import Foundation
import RelayCore

/// Helpers to start and resume chat streams against a test relay.
public enum Chat {
    /// A JSON chat body for `model` with optional `max_tokens`, and `fields` (e.g. sampling) merged in.
    public static func body(model: String = "simulated", maxTokens: Int? = nil, mode: String? = nil,
                            fields: [String: Any] = [:]) -> [UInt8] {
        var obj: [String: Any] = ["messages": [["role": "user", "content": "Draft a mutual NDA"]], "model": model]
        obj.merge(fields) { _, b in b }
        if let m = maxTokens { obj["max_tokens"] = m }
        if let mode { obj["mode"] = mode }
        return Array(try! JSONSerialization.data(withJSONObject: obj))
    }

    /// Opens `POST /api/chat/stream`.
    public static func start(port: Int, token: String, requestID: String? = nil, model: String = "simulated",
                             maxTokens: Int? = nil, extraHeaders: [(String, String)] = [],
                             fields: [String: Any] = [:]) throws -> SSEConnection {
        var h: [(String, String)] = [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")]
        if let id = requestID { h.append(("X-Request-Id", id)) }
        h += extraHeaders
        return try SSEConnection(port: port, method: "POST", path: "/api/chat/stream", headers: h,
                                 body: body(model: model, maxTokens: maxTokens, fields: fields))
    }

    /// Opens `GET /api/chat/stream/{id}` as an SSE client does (`Accept: text/event-stream`),
    /// with `Last-Event-ID` when given.
    public static func resume(port: Int, token: String, requestID: String, lastEventID: String?) throws -> SSEConnection {
        var h: [(String, String)] = [("Authorization", "Bearer \(token)")]
        if let l = lastEventID { h.append(("Last-Event-ID", l)) }
        h.append(("Accept", "text/event-stream"))
        return try SSEConnection(port: port, method: "GET", path: "/api/chat/stream/\(requestID)", headers: h)
    }

    /// A fresh random request id (32 characters).
    public static func newID() -> String {
        "t" + UUID().uuidString.replacingOccurrences(of: "-", with: "")
    }

    /// The concatenated `content` of the delta events.
    public static func text(_ events: [SSEMessage]) -> String {
        events.compactMap { m -> String? in
            if case .delta(let t)? = try? StreamEvent(json: m.data) { return t }
            return nil
        }.joined()
    }
}
