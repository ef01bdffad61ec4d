import Foundation
import RelayCore
import RelayTestSupport
import RelayTestKit
import XCTest

/// What the offset-read tests share (docs/PROTOCOL.md §12): a GET of a read, the body's
/// elements, offsets, and an upstream that pauses mid-answer.
class OffsetReadTestCase: RelayTestCase {
    static let adminKey = "admin-key-for-tests-0123456789"

    func get(_ relay: RelayProcess, _ token: String, _ id: String, _ query: String, timeout: Double = 10) throws -> HTTPResponse {
        try HTTPClient.request(port: relay.port, method: "GET", path: "/api/chat/stream/\(id)?\(query)",
                               headers: [("Authorization", "Bearer \(token)")], timeout: timeout)
    }

    /// The raw JSON texts of a body's array elements, joined by `,` (the array without its brackets).
    func elements(_ r: HTTPResponse) -> String {
        let t = r.text
        XCTAssertTrue(t.hasPrefix("[") && t.hasSuffix("]"), "a JSON array: \(t.prefix(80))")
        return String(t.dropFirst().dropLast())
    }

    func offset(_ seq: Int) -> String { String(format: "%020d", seq) }

    /// A relay whose upstream sends `first`, waits `pauseMs`, then sends `second` and ends.
    func pausingUpstream(first: String, pauseMs: Int, second: String) throws -> FakeUpstreamServer {
        func raw(_ delta: String) -> [UInt8] {
            Array("data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\(delta)\"},\"finish_reason\":null}]}\n\n".utf8)
        }
        var steps: [FakeUpstreamServer.Step] = [.head(status: 200, contentType: "text/event-stream"), .send(raw(first))]
        steps.append(pauseMs > 0 ? .pause(ms: pauseMs) : .holdOpen)
        steps.append(.send(raw(second)))
        steps.append(.send(Array("data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n".utf8)))
        steps.append(.send(Array("data: [DONE]\n\n".utf8)))
        return try FakeUpstreamServer(routes: ["/v1/chat/completions": .init(steps)])
    }

    func openAIEnv(_ fake: FakeUpstreamServer, _ extra: [String: String] = [:]) -> [String: String] {
        var e = ["RELAY_UPSTREAM": "openai", "UPSTREAM_URL": fake.baseURL, "UPSTREAM_API_KEY": "sk-test", "UPSTREAM_MODEL": "gpt-test"]
        for (k, v) in extra { e[k] = v }
        return e
    }
}

/// One request answered on a background thread (a long-poll the test acts on while it waits).
final class SSEConnectionInBackground: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private var response: Result<HTTPResponse, Error>?

    init(port: Int, path: String, token: String) throws {
        DispatchQueue.global().async {
            self.response = Result { try HTTPClient.request(port: port, method: "GET", path: path,
                                                            headers: [("Authorization", "Bearer \(token)")], timeout: 60) }
            self.done.signal()
        }
    }

    func result(timeout: Double) throws -> HTTPResponse {
        guard done.wait(timeout: .now() + timeout) == .success, let r = response else { throw TestFailure("no answer within \(timeout) s") }
        return try r.get()
    }
}
