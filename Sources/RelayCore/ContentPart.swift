import Foundation

/// One part of a message whose `content` is an array (docs/PROTOCOL.md §3.1), as OpenAI's Chat
/// Completions API names them: `{"type":"text","text":"…"}` or
/// `{"type":"image_url","image_url":{"url":"https://…","detail"?:"auto"|"low"|"high"}}`.
public enum ContentPart: Sendable, Equatable {
    /// Text.
    case text(String)
    /// An image the upstream fetches by URL (`ContentPart.imageURLRule`); `detail` is passed on
    /// to upstreams that take it.
    case imageURL(String, detail: String?)

    /// What an image URL must be: `https://`, at most 2,048 bytes, no spaces or controls, no
    /// user or password, a port (if any) of 1–65535, and a host that is a DNS name ending in an
    /// alphabetic label — no IP literal in any spelling (`127.0.0.1`, `0x7f.1`, `[::1]`), no
    /// `localhost`. The upstream fetches it: a self-hosted one (vLLM on the operator's network)
    /// must not be pointed at internal addresses by a client. A name that resolves to one is the
    /// upstream's egress policy to stop (docs/UPSTREAMS.md).
    public static let imageURLRule = "an https:// URL of at most 2048 bytes with a DNS host name (no IP address, localhost or user:password@)"

    /// Whether `url` keeps `imageURLRule`.
    static func isAcceptableImageURL(_ url: String) -> Bool {
        guard url.utf8.count <= 2_048, !url.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F }),
              let u = URL(string: url), u.scheme?.lowercased() == "https", u.user == nil, u.password == nil,
              let host = u.host?.lowercased(), !host.isEmpty else { return false }
        if let port = u.port, !(1...65_535).contains(port) { return false }
        let labels = host.split(separator: ".", omittingEmptySubsequences: false)
        guard labels.count >= 2, host != "localhost", !host.hasSuffix(".localhost"),
              let last = labels.last, last.count >= 2, last.allSatisfy({ $0.isASCII && $0.isLetter }),
              labels.allSatisfy({ !$0.isEmpty && $0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") } })
        else { return false }
        return true
    }

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
            guard let t = o["text"] as? String, !t.isEmpty, Set(o.keys) == ["type", "text"] else {
                throw APIError.invalidRequest("\(at) must be {\"type\": \"text\", \"text\": non-empty string}")
            }
            return .text(t)
        case "image_url":
            guard Set(o.keys) == ["type", "image_url"], let image = o["image_url"] as? [String: Any],
                  let url = image["url"] as? String, Set(image.keys).isSubset(of: ["url", "detail"]) else {
                throw APIError.invalidRequest("\(at) must be {\"type\": \"image_url\", \"image_url\": {\"url\": string, \"detail\"?: string}}")
            }
            guard isAcceptableImageURL(url) else {
                throw APIError.invalidRequest("\(at).image_url.url must be \(imageURLRule)")
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
