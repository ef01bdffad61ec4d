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
        XCTAssertEqual(message(#"[{"role":"user","content":[{"type":"text"}]}]"#), #"messages[0].content[0] must be {"type": "text", "text": string}"#)
        XCTAssertEqual(message(#"[{"role":"user","content":[{"type":"text","text":"a","x":1}]}]"#), #"messages[0].content[0] must be {"type": "text", "text": string}"#)
        let https = "messages[0].content[0].image_url.url must be an https:// URL of at most 2048 bytes"
        for url in ["http://example.com/a.png", "file:///etc/passwd", "data:image/png;base64,AAAA", "https://", "https://example.com/" + String(repeating: "a", count: 2_048)] {
            XCTAssertEqual(message(#"[{"role":"user","content":[{"type":"image_url","image_url":{"url":"\#(url)"}}]}]"#), https, url)
        }
        XCTAssertEqual(message(#"[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://e.com/a","detail":"max"}}]}]"#),
                       "messages[0].content[0].image_url.detail must be auto, low or high")
        XCTAssertEqual(message(#"[{"role":"assistant","content":[{"type":"image_url","image_url":{"url":"https://e.com/a"}}]}]"#),
                       "messages[0]: image parts are accepted in user messages only")
        XCTAssertEqual(message(#"[{"role":"user","content":7}]"#), #"messages[0] must be {"role": string, "content": string or array of parts}"#)
    }
}
