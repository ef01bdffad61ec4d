import Foundation
import RelayClient
import RelayClientCurl
import RelayCore
import RelayTestKit
import RelayTestSupport
import XCTest

/// The Swift kit behind a proxy that forwards the head of an event stream and holds its
/// body (conformance/CLIENT_RULES.md "Buffering proxies"), over real HTTP with both
/// transports: after 20 s (on the kit's clock) without a byte it reads the answer over
/// long-poll (`?offset=…&live=long-poll`), the transports hand over the `Stream-*` fields,
/// and the answer completes. The relay side is a scripted HTTP server that answers the
/// long-poll read as the relay's contract says (a JSON array, `Stream-Next-Offset`,
/// `Stream-Cursor`, a 204 when nothing is new, `Stream-Closed` at the end).
final class BufferingProxyTests: XCTestCase {
    let words = (1...10).map { "clause\($0) " }
    var events: [StreamEvent] { words.map { .delta($0) } + [.done(finishReason: "stop", usage: Usage(promptTokens: 1, completionTokens: 10))] }

    func testAHeldBodyIsDetectedAndTheAnswerFinishesOverLongPoll() async throws {
        for transport in [URLSessionTransport(configuration: .ephemeral) as any RelayTransport, CurlTransport()] {
            let id = try RequestID(validating: "buffered-answer-\(UUID().uuidString.prefix(8))")
            let events = self.events
            let reads = LockedBox(0)
            let server = try FakeUpstreamServer(routes: [
                // The proxy passes the head on and holds every byte of the body.
                "/api/chat/stream": .init([.head(status: 200, contentType: "text/event-stream"), .holdOpen]),
            ])
            defer { server.stop() }
            server.setResponder("/api/chat/stream/\(id.value)") { req in
                let n = reads.mutate { $0 += 1; return $0 }
                func json(_ range: Range<Int>, closed: Bool) -> FakeUpstreamServer.Script {
                    let offset = String(format: "%020d", range.upperBound)
                    var fields = [FakeUpstreamServer.Header("Stream-Next-Offset", offset), .init("Stream-Cursor", "cur\(n)")]
                    if closed { fields.append(.init("Stream-Closed", "true")) }
                    let body = "[" + events[range].map(\.json).joined(separator: ",") + "]"
                    return .init([.head(status: 200, contentType: "application/json; charset=utf-8", chunked: false, cacheControl: "no-store",
                                        headers: fields), .send(Array(body.utf8))])
                }
                switch n {
                case 1: return json(0..<4, closed: false)
                case 2: return .init([.head(status: 204, contentType: "application/json", chunked: false, cacheControl: "no-store",
                                            headers: [.init("Stream-Next-Offset", String(format: "%020d", 4)), .init("Stream-Up-To-Date", "true")])])
                default: return json(4..<events.count, closed: true)
                }
            }
            let client = RelayChatClient(baseURLs: [URL(string: server.baseURL)!], tokenProvider: { _ in "tok" },
                                         clock: FastClock(), transport: transport)
            var updates: [ChatUpdate] = []
            for await u in client.startChat(ChatRequest(messages: [ChatMessage(role: "user", content: "hi")]),
                                            options: .init(requestId: id)) {
                updates.append(u)
            }
            let what = "\(type(of: transport))"
            let renders = updates.compactMap { if case .render(let r) = $0 { return r } else { return nil } }
            XCTAssertEqual(renders.last?.completion, .finished(finishReason: "stop"), what)
            XCTAssertEqual(renders.last?.text, words.joined(), what)
            XCTAssertEqual(client.bufferingDetected, .silentAfterHeaders, what)
            XCTAssertTrue(updates.contains(.connection(.longPoll(reason: .silentAfterHeaders, lastEventId: 0))), what)
            let gets = server.requests.filter { $0.method == "GET" }.map(\.path)
            XCTAssertEqual(gets, ["/api/chat/stream/\(id.value)?offset=-1&live=long-poll",
                                  "/api/chat/stream/\(id.value)?offset=4&live=long-poll&cursor=cur1",
                                  "/api/chat/stream/\(id.value)?offset=4&live=long-poll&cursor=cur1"],
                           "\(what): offsets from Stream-Next-Offset, the cursor echoed (a 204 carries none)")
            XCTAssertEqual(server.requests.first { $0.method == "GET" }?.headers["authorization"], "Bearer tok", what)
        }
    }
}
