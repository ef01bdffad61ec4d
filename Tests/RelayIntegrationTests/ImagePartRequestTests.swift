import Foundation
import RelayCore
import RelayTestSupport
import XCTest

/// Image parts by URL through a running relay (docs/PROTOCOL.md §3.1): forwarded to the
/// upstream, counted in the reservation, and refused before it when the operator leaves
/// `images` out of `RELAY_CLIENT_PARAMETERS`.
final class ImagePartRequestTests: RelayTestCase {
    private static var parts: [[String: Any]] { [["type": "text", "text": "What is in "],
                                                 ["type": "image_url", "image_url": ["url": "https://example.com/cat.png"]]] }

    func testAnImagePartReachesTheUpstreamAndIsRefusedWhereTheOperatorSaysSo() throws {
        let fake = try UpstreamRelayTests.fakeOpenAI(replying: "A cat.")
        defer { fake.stop() }
        let env = ["RELAY_UPSTREAM": "openai", "UPSTREAM_URL": fake.baseURL, "UPSTREAM_MODEL": "gpt-test"]
        let relay = try startRelay(env)
        let token = RelayProcess.token(sub: "image-\(UUID().uuidString.prefix(8))")
        let body = ["messages": [["role": "user", "content": Self.parts]], "model": "gpt-test"] as [String: Any]
        func post(_ port: Int) throws -> SSEConnection {
            try SSEConnection(port: port, method: "POST", path: "/api/chat/stream",
                              headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")],
                              body: Array(try JSONSerialization.data(withJSONObject: body)))
        }
        let events = try post(relay.port).readAll(timeout: 10)
        XCTAssertEqual(Chat.text(events), "A cat.")
        let sent = try XCTUnwrap((fake.requests.first?.json["messages"] as? [[String: Any]])?.first?["content"] as? [[String: Any]])
        XCTAssertEqual(sent.last?["image_url"] as? [String: String], ["url": "https://example.com/cat.png"])

        let strict = try startRelay(env.merging(["RELAY_CLIENT_PARAMETERS": "temperature"]) { $1 })
        let refused = try post(strict.port)
        XCTAssertEqual(refused.status, 400)
        let text = String(decoding: try XCTUnwrap(refused.readBody(timeout: 5)), as: UTF8.self)
        XCTAssertTrue(text.contains(#"\"images\" is not accepted by this relay (RELAY_CLIENT_PARAMETERS: temperature)"#), text)
        XCTAssertEqual(fake.requests.count, 1, "the refused request never reached the upstream")
    }
}
