import Foundation

/// Explains a non-2xx upstream answer in one line: `upstream 429 rate_limit_error: <message>`.
///
/// Both APIs put `{"error": {"type", "message", …}}` in the body: OpenAI adds `code`
/// (preferred when present, e.g. `invalid_api_key`), Anthropic wraps it in
/// `{"type":"error","error":{"type":"rate_limit_error","message":"…"}}`. A body that is not
/// such JSON is summarised (an HTML page is named, not quoted).
enum UpstreamErrorBody {
    private struct Envelope: Decodable {
        let error: Detail?
    }
    private struct Detail: Decodable {
        let type: String?
        let message: String?
        let code: LooseString?
    }

    /// Most characters of the upstream's own message kept.
    static let maxMessageCharacters = 500

    /// - Parameters:
    ///   - status: the upstream's HTTP status.
    ///   - body: the start of the response body (possibly truncated).
    ///   - contentType: the response's `Content-Type`, if any.
    static func describe(status: Int, body: [UInt8], contentType: String?) -> String {
        let head = "upstream \(status)"
        if let env = try? JSONDecoder().decode(Envelope.self, from: Data(body)), let e = env.error {
            let code = e.code?.value ?? e.type
            let msg = e.message.map { oneLine($0) } ?? ""
            switch (code, msg.isEmpty) {
            case (let c?, false): return "\(head) \(c): \(msg)"
            case (let c?, true): return "\(head) \(c)"
            case (nil, false): return "\(head): \(msg)"
            case (nil, true): return head
            }
        }
        let text = oneLine(String(decoding: body, as: UTF8.self))
        if text.isEmpty { return "\(head) (empty body)" }
        if isHTML(contentType: contentType, text: text) { return "\(head) (HTML page instead of an API error)" }
        return "\(head): \(text)"
    }

    /// `true` when the type says HTML or the text starts like a document.
    static func isHTML(contentType: String?, text: String) -> Bool {
        if let ct = contentType?.lowercased(), ct.hasPrefix("text/html") { return true }
        let t = text.prefix(15).lowercased()
        return t.hasPrefix("<!doctype html") || t.hasPrefix("<html")
    }

    /// Whitespace runs collapsed to one space, trimmed, cut to `maxMessageCharacters`.
    static func oneLine(_ s: String) -> String {
        let words = s.split(whereSeparator: { $0.isWhitespace || $0.isNewline })
        let joined = words.joined(separator: " ")
        return joined.count > maxMessageCharacters ? String(joined.prefix(maxMessageCharacters)) + "…" : joined
    }
}

/// A JSON value read as text when it is a string or an integer (OpenAI's `error.code` is
/// either, or null); anything else reads as `nil`.
struct LooseString: Decodable {
    let value: String?

    init(from decoder: Decoder) throws {
        let c = try decoder.singleValueContainer()
        if let s = try? c.decode(String.self) {
            value = s
        } else if let i = try? c.decode(Int.self) {
            value = String(i)
        } else {
            value = nil
        }
    }
}
