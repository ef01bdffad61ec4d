import XCTest
import RelayCore

/// Messages whose `content` is an array of parts (docs/PROTOCOL.md §3.1): text and images by
/// `https://` URL in user messages; every other shape is a 400 naming the part; the stored
/// request keeps the parts; each image counts in the prompt estimate.
final class ContentPartTests: XCTestCase {
    private func parse(_ messages: String) throws -> ChatRequest {
        try ChatRequest.parse(Data(#"{"messages":\#(messages)}"#.utf8))
    }

    private func message(_ messages: String) -> String? {
        do { _ = try parse(messages); return nil } catch let e as APIError { return e.message } catch { return "\(error)" }
    }

    func testTextAndImagePartsAreReadInOrderAndTheTextIsTheMessagesContent() throws {
        let r = try parse(#"[{"role":"user","content":[{"type":"text","text":"What is "},{"type":"image_url","image_url":{"url":"https://example.com/a.png","detail":"low"}},{"type":"text","text":"this?"}]}]"#)
        let m = try XCTUnwrap(r.messages.first)
        XCTAssertEqual(m.parts, [.text("What is "), .imageURL("https://example.com/a.png", detail: "low"), .text("this?")])
        XCTAssertEqual(m.content, "What is this?")
        XCTAssertEqual(m.imageCount, 1)
        XCTAssertTrue(r.hasImages)
        XCTAssertEqual(r.estimatedPromptTokens, ChatRequest.estimatePromptTokens(["What is this?"]) + ContentPart.imageTokenEstimate)
        XCTAssertEqual(try ChatRequest.parse(r.jsonBody), r, "the stored request keeps the parts")
        XCTAssertFalse(try parse(#"[{"role":"user","content":"hi"}]"#).hasImages)
    }

    func testEveryOtherShapeIsRefusedNamingThePart() {
        XCTAssertEqual(message(#"[{"role":"user","content":[]}]"#), "messages[0].content must have 1 to 100 parts")
        XCTAssertEqual(message(#"[{"role":"user","content":[{"type":"audio"}]}]"#), "messages[0].content[0].type must be text or image_url")
        let text = #"messages[0].content[0] must be {"type": "text", "text": non-empty string}"#
        XCTAssertEqual(message(#"[{"role":"user","content":[{"type":"text"}]}]"#), text)
        XCTAssertEqual(message(#"[{"role":"user","content":[{"type":"text","text":""}]}]"#), text, "Anthropic refuses empty text blocks")
        XCTAssertEqual(message(#"[{"role":"user","content":[{"type":"text","text":"a","x":1}]}]"#), text)
        let rule = "messages[0].content[0].image_url.url must be " + ContentPart.imageURLRule
        // Not https, too long, or pointing the upstream's fetch at an address rather than a name.
        for url in ["http://example.com/a.png", "file:///etc/passwd", "data:image/png;base64,AAAA", "https://",
                    "https://example.com/" + String(repeating: "a", count: 2_048),
                    "https://127.0.0.1/x", "https://0x7f.1/x", "https://[::1]/x", "https://2130706433/x", "https://localhost/x",
                    "https://metadata.localhost/x", "https://user:pass@169.254.169.254/latest", "https://u@example.com/a.png",
                    "https://example.com:99999/a", "https://example.com/a b", "https://intranet/a.png", "https://example.1/a"] {
            XCTAssertEqual(message(#"[{"role":"user","content":[{"type":"image_url","image_url":{"url":"\#(url)"}}]}]"#), rule, url)
        }
        for url in ["https://example.com/a.png", "https://cdn.example.co.uk:8443/i/a.png?x=1", "https://xn--bcher-kva.example/a"] {
            XCTAssertNil(message(#"[{"role":"user","content":[{"type":"image_url","image_url":{"url":"\#(url)"}}]}]"#), url)
        }
        XCTAssertEqual(message(#"[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://e.com/a","detail":"max"}}]}]"#),
                       "messages[0].content[0].image_url.detail must be auto, low or high")
        XCTAssertEqual(message(#"[{"role":"assistant","content":[{"type":"image_url","image_url":{"url":"https://e.com/a"}}]}]"#),
                       "messages[0]: image parts are accepted in user messages only")
        XCTAssertEqual(message(#"[{"role":"user","content":7}]"#), #"messages[0] must be {"role": string, "content": string or array of parts}"#)
    }
}
