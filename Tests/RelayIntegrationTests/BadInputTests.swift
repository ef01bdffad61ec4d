import Foundation
import RelayCore
import RelayTestSupport
import XCTest

/// Bad input: each gets its documented error (docs/PROTOCOL.md "Errors"), and other
/// streams keep going.
final class BadInputTests: RelayTestCase {
    func testBadRequestsGetTheirErrorsWhileAnotherStreamKeepsGoing() throws {
        let relay = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "200"])
        let token = RelayProcess.token()
        let live = try Chat.start(port: relay.port, token: token, maxTokens: 200)
        var liveEvents: [SSEMessage] = []
        for _ in 0..<3 { liveEvents.append(try XCTUnwrap(try live.nextEvent())) }

        let auth = ("Authorization", "Bearer \(token)")
        let json = ("Content-Type", "application/json")
        func post(_ body: [UInt8], _ headers: [(String, String)]) throws -> HTTPResponse {
            try HTTPClient.request(port: relay.port, method: "POST", path: "/api/chat/stream", headers: headers, body: body)
        }
        let cases: [(String, [UInt8], [(String, String)], Int, String?)] = [
            ("malformed JSON", Array("{\"messages\":".utf8), [auth, json], 400, "invalid_json"),
            ("not an object", Array("[1,2]".utf8), [auth, json], 400, "invalid_json"),
            ("wrong content type", Chat.body(), [auth, ("Content-Type", "text/plain")], 400, "invalid_request"),
            ("content type with a longer subtype", Chat.body(), [auth, ("Content-Type", "application/jsonx")], 400, "invalid_request"),
            ("content type with a UTF-16 charset", Chat.body(), [auth, ("Content-Type", "application/json; charset=utf-16")], 400, "invalid_request"),
            ("missing messages", Array("{}".utf8), [auth, json], 400, "invalid_request"),
            ("empty messages", Array("{\"messages\":[]}".utf8), [auth, json], 400, "invalid_request"),
            ("unknown field", Array("{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"top_k\":2}".utf8), [auth, json], 400, "invalid_request"),
            ("temperature out of range", Array("{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"temperature\":3}".utf8), [auth, json], 400, "invalid_request"),
            ("image by http URL", Array("{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":{\"url\":\"http://x.example/a.png\"}}]}]}".utf8), [auth, json], 400, "invalid_request"),
            ("bad role", Array("{\"messages\":[{\"role\":\"wizard\",\"content\":\"x\"}]}".utf8), [auth, json], 400, "invalid_request"),
            ("max_tokens string", Array("{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"max_tokens\":\"5\"}".utf8), [auth, json], 400, "invalid_request"),
            ("unknown model", Chat.body(model: "gpt-9"), [auth, json], 400, "invalid_request"),
            ("illegal request id", Chat.body(), [auth, json, ("X-Request-Id", "has spaces in it!!!!")], 400, "invalid_request"),
            ("request id too long", Chat.body(), [auth, json, ("X-Request-Id", String(repeating: "x", count: 65))], 400, "invalid_request"),
            ("no auth", Chat.body(), [json], 401, "unauthorized"),
            ("bad token", Chat.body(), [("Authorization", "Bearer abc.def.ghi"), json], 401, "unauthorized"),
        ]
        for (name, body, headers, status, code) in cases {
            let r = try post(body, headers)
            XCTAssertEqual(r.status, status, name)
            XCTAssertEqual(r.errorCode, code, name)
        }
        let big = try post([UInt8](repeating: 0x61, count: 10 << 20), [auth, json])
        XCTAssertEqual(big.status, 413, "10 MB body")

        let notFound = try HTTPClient.request(port: relay.port, method: "GET", path: "/nope")
        XCTAssertEqual(notFound.status, 404)
        XCTAssertEqual(notFound.errorCode, "not_found")
        let wrongMethod = try HTTPClient.request(port: relay.port, method: "PUT", path: "/api/chat/stream", headers: [auth])
        XCTAssertEqual(wrongMethod.status, 405)
        XCTAssertEqual(wrongMethod.header("Allow"), "POST")
        let weird = try HTTPClient.request(port: relay.port, method: "BREW", path: "/api/chat/stream", headers: [auth])
        XCTAssertTrue([400, 405, 501].contains(weird.status), "unknown method: \(weird.status)")

        liveEvents += try live.readAll()
        assertSequence(liveEvents)
        XCTAssertEqual(liveEvents.count, 201, "the other stream was not disturbed")
        XCTAssertEqual(try HTTPClient.request(port: relay.port, method: "GET", path: "/healthz").status, 200)
    }
}
