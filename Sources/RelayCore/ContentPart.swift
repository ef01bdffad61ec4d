import Foundation

/// One part of a message whose `content` is an array (docs/PROTOCOL.md §3.1), as OpenAI's Chat
/// Completions API names them: `{"type":"text","text":"…"}` or
/// `{"type":"image_url","image_url":{"url":"https://…","detail"?:"auto"|"low"|"high"}}`.
public enum ContentPart: Sendable, Equatable {
    /// Text.
    case text(String)
    /// An image the upstream fetches by URL (`https://` only, at most 2,048 bytes); `detail`
    /// is passed on to upstreams that take it.
    case imageURL(String, detail: String?)

    /// Prompt tokens the relay estimates per image, whatever its size (docs/PROTOCOL.md §9: the
    /// estimate errs high; a 1,092 × 1,092 image costs about 1,590 tokens at Anthropic, a
    /// high-detail 1,024 × 1,024 one 765 at OpenAI).
    public static let imageTokenEstimate = 1_600

    /// The part as its JSON value.
    public var jsonObject: [String: Any] {
        switch self {
        case .text(let t): return ["type": "text", "text": t]
        case .imageURL(let url, let detail):
            var image: [String: Any] = ["url": url]
            if let detail { image["detail"] = detail }
            return ["type": "image_url", "image_url": image]
        }
    }

    /// Reads part `j` of message `i`.
    /// - Throws: `APIError` 400 `invalid_request` naming the part and the rule it breaks.
    static func parse(_ v: Any, message i: Int, part j: Int) throws -> ContentPart {
        let at = "messages[\(i)].content[\(j)]"
        guard let o = v as? [String: Any], let type = o["type"] as? String else {
            throw APIError.invalidRequest("\(at) must be {\"type\": \"text\" | \"image_url\", …}")
        }
        switch type {
        case "text":
            guard let t = o["text"] as? String, Set(o.keys) == ["type", "text"] else {
                throw APIError.invalidRequest("\(at) must be {\"type\": \"text\", \"text\": string}")
            }
            return .text(t)
        case "image_url":
            guard Set(o.keys) == ["type", "image_url"], let image = o["image_url"] as? [String: Any],
                  let url = image["url"] as? String, Set(image.keys).isSubset(of: ["url", "detail"]) else {
                throw APIError.invalidRequest("\(at) must be {\"type\": \"image_url\", \"image_url\": {\"url\": string, \"detail\"?: string}}")
            }
            guard url.utf8.count <= 2_048, let u = URL(string: url), u.scheme == "https", u.host != nil else {
                throw APIError.invalidRequest("\(at).image_url.url must be an https:// URL of at most 2048 bytes")
            }
            let detail = image["detail"] as? String
            guard image["detail"] == nil || ["auto", "low", "high"].contains(detail ?? "") else {
                throw APIError.invalidRequest("\(at).image_url.detail must be auto, low or high")
            }
            return .imageURL(url, detail: detail)
        default:
            throw APIError.invalidRequest("\(at).type must be text or image_url")
        }
    }
}
