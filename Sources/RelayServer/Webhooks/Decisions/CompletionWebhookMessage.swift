import RelayCore

/// One completion webhook's message (docs/PROTOCOL.md §13): its `webhook-id` and its JSON
/// body, made from the stream's stored final event. Pure.
///
/// The body never carries the answer's text (nor an error's message, which may quote the
/// upstream): Standard Webhooks' payload shape `{"type","timestamp","data"}` with
///
/// ```json
/// {"type":"answer.ended","timestamp":"2026-12-03T15:20:01.250Z",
///  "data":{"request_id":"…","sub":"…","finish_reason":"stop",
///          "usage":{"prompt_tokens":12,"completion_tokens":80,"total_tokens":92}}}
/// ```
///
/// `finish_reason` is the `done` event's (`stop`, `length`, `cancelled`, …) or `error`
/// for an answer that ended with an `error` event, which adds `"error":"<code>"` and has
/// `"usage":null`. The body is the same bytes on every attempt (the timestamp is the end's).
struct CompletionWebhookMessage: Equatable {
    /// `webhook-id`: `msg_<owner hash>_<request id>`, the same for every attempt and every
    /// instance (receivers deduplicate on it; the outbox is keyed by it).
    let id: String
    /// The request body, UTF-8 JSON.
    let body: String

    /// The `webhook-id` of stream `scopedID` (`<owner hash>:<request id>`).
    static func id(scopedID: String) -> String {
        "msg_" + scopedID.replacingOccurrences(of: ":", with: "_")
    }

    /// The message of stream `scopedID` owned by `sub`, which ended at `endedMs` (Unix ms)
    /// with the stored final event `finalEventJSON`.
    /// - Returns: `nil` when the event is not a final event (`done` or `error`).
    init?(scopedID: String, sub: String, finalEventJSON: String, endedMs: Int64) {
        guard let event = try? StreamEvent(json: finalEventJSON) else { return nil }
        let requestID = RequestID.clientPart(of: scopedID)
        var data = "{\"request_id\":\(JSONText.quoted(requestID)),\"sub\":\(JSONText.quoted(sub)),"
        switch event {
        case .delta, .part:
            return nil
        case .done(let reason, let u, let budgetLimited):
            data += "\"finish_reason\":\(JSONText.quoted(reason.rawValue)),"
            data += "\"usage\":{\"prompt_tokens\":\(u.promptTokens),\"completion_tokens\":\(u.completionTokens),\"total_tokens\":\(u.totalTokens)}"
            if budgetLimited { data += ",\"budget_limited\":true" }
        case .error(_, let code, _):
            data += "\"finish_reason\":\"error\",\"error\":\(JSONText.quoted(code.rawValue)),\"usage\":null"
        }
        data += "}"
        id = Self.id(scopedID: scopedID)
        body = "{\"type\":\"answer.ended\",\"timestamp\":\"\(Self.rfc3339(ms: endedMs))\",\"data\":\(data)}"
    }

    /// `ms` (Unix milliseconds, UTC) as an RFC 3339 timestamp with milliseconds,
    /// `2026-12-03T15:20:01.250Z` (proleptic Gregorian calendar).
    static func rfc3339(ms: Int64) -> String {
        let msOfDay = ((ms % 86_400_000) + 86_400_000) % 86_400_000
        let days = (ms - msOfDay) / 86_400_000
        let (y, m, d) = LogFormatter.civilDate(daysSinceEpoch: days)
        func pad<I: BinaryInteger>(_ v: I, _ n: Int) -> String {
            let s = String(v)
            return String(repeating: "0", count: max(0, n - s.count)) + s
        }
        let sec = msOfDay / 1000
        return "\(pad(y, 4))-\(pad(m, 2))-\(pad(d, 2))T\(pad(sec / 3600, 2)):\(pad(sec / 60 % 60, 2)):\(pad(sec % 60, 2)).\(pad(msOfDay % 1000, 3))Z"
    }
}

extension RequestID {
    /// The client's id inside a scoped id text (`<owner hash>:<id>`); the text itself when
    /// it has no owner part.
    static func clientPart(of scoped: String) -> String {
        guard let colon = scoped.firstIndex(of: ":") else { return scoped }
        return String(scoped[scoped.index(after: colon)...])
    }
}
