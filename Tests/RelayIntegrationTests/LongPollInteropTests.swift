import Foundation
import RelayClient
import RelayClientCurl
import RelayCore
import RelayTestKit
import RelayTestSupport
import XCTest

/// Both client kits read whole answers over a real relay's long-poll read
/// (`GET /api/chat/stream/{id}?offset=…&live=long-poll`, `readMode` long-poll): the Swift
/// kit over URLSession and libcurl, the JavaScript kit in a `node` child process (its
/// `fetch`). Each answer must be exactly the simulated document. Skipped when the relay
/// under test has no offset reads (it answers a malformed `offset` with anything but
/// `400 invalid_offset`).
final class LongPollInteropTests: RelayTestCase {
    func testBothKitsReadWholeAnswersOverTheRelaysLongPoll() async throws {
        let relay = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "300"])
        let probe = try HTTPClient.request(port: relay.port, method: "GET", path: "/api/chat/stream/probe-0123456789abcdef?offset=x",
                                           headers: [("Authorization", "Bearer \(RelayProcess.token(sub: "lp"))")])
        try XCTSkipUnless(probe.status == 400 && String(decoding: probe.body, as: UTF8.self).contains("invalid_offset"),
                          "this relay has no offset reads")
        let reference = referenceText(maxTokens: 300)
        let request = ChatRequest(messages: [ChatMessage(role: "user", content: "Draft a mutual NDA")], model: "simulated", maxTokens: 300)
        for transport in [URLSessionTransport(configuration: .ephemeral) as any RelayTransport, CurlTransport()] {
            let c = RelayChatClient(baseURLs: [URL(string: "http://127.0.0.1:\(relay.port)")!],
                                    tokenProvider: { _ in RelayProcess.token(sub: "lp") }, transport: transport)
            c.readMode = .longPoll
            var text = ""
            var completion: Completion?
            var statuses: [ConnectionStatus] = []
            for await u in c.startChat(request) {
                if case .render(let r) = u { text = r.text; if let x = r.completion { completion = x } }
                if case .connection(let s) = u { statuses.append(s) }
            }
            XCTAssertEqual(completion, .finished(finishReason: "length"), "\(type(of: transport)) \(statuses)")
            XCTAssertEqual(text, reference, "\(type(of: transport))")
        }

        let kit = NginxProcess.repositoryRoot.appendingPathComponent("clients/js/src/index.js").path
        let script = """
        import { RelayChatClient } from '\(kit)';
        const c = new RelayChatClient({ baseURLs: ['http://127.0.0.1:\(relay.port)'], token: () => process.env.TOKEN, readMode: 'longPoll' });
        const s = c.startChat({ messages: [{ role: 'user', content: 'Draft a mutual NDA' }], model: 'simulated', max_tokens: 300 });
        let text = '';
        s.subscribe((u) => { if (u.kind === 'render') text = u.update.text; });
        const done = await s.finished;
        process.stdout.write(JSON.stringify({ done, text }));
        """
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("longpoll-\(UUID().uuidString.prefix(8)).mjs")
        try Data(script.utf8).write(to: path)
        defer { try? FileManager.default.removeItem(at: path) }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: TestPaths.which("node"))
        p.arguments = [path.path]
        p.environment = ChildEnvironment.minimal(["TOKEN": RelayProcess.token(sub: "lp-js")])
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 0, "node")
        let obj = try XCTUnwrap(try JSONSerialization.jsonObject(with: data) as? [String: Any], String(decoding: data, as: UTF8.self))
        XCTAssertEqual((obj["done"] as? [String: Any])?["kind"] as? String, "finished")
        XCTAssertEqual(obj["text"] as? String, reference, "JS kit")
    }
}
