import Foundation
import RelayTestKit
import XCTest
import RelayCore
@testable import RelayClient

/// Runs `conformance/parts.json` — typed answer parts (docs/PROTOCOL.md §5.5) through the whole
/// stream: SSE parsing, drops, resumes with `Last-Event-ID`, the seq dedupe, the text and the
/// `ChatUpdate.parts` updates — against `RelayStream` on a scripted relay (`ScriptedTransport`)
/// and a virtual clock, exactly as `clients/js/test/conformance.test.js` runs it against the
/// JavaScript kit. Each connection's body is sent whole, and again one byte per read.
final class PartsConformanceTests: XCTestCase {
    let urls = [URL(string: "http://relay-a.test")!, URL(string: "http://relay-b.test")!]

    func testPartsVectors() async throws {
        for c in try ConformanceTests.cases("parts.json") {
            for plan in ["whole", "byte by byte"] {
                let name = "conformance parts.json: \(c["name"] as? String ?? "?") (\(plan))"
                let got = try await run(c, plan: plan, name: name)
                let want = try canonical(c["expect"] ?? [:])
                if try canonical(got) != want { XCTFail("\(name): got \(try canonical(got)), want \(want)") }
            }
        }
    }

    /// Plays the case's connections in turn, checking each request, and returns what the app
    /// saw in the vectors' `expect` shape.
    private func run(_ c: [String: Any], plan: String, name: String) async throws -> [String: Any] {
        let transport = ScriptedTransport()
        let clock = VirtualClock()
        let client = RelayChatClient(baseURLs: urls, tokenProvider: { _ in "t" }, clock: clock, transport: transport, random: { 0 })
        let log = UpdateLog(client.startChat(ChatRequest(messages: [ChatMessage(role: "user", content: "Weather in Riyadh?")])))
        let connections = c["connections"] as? [[String: Any]] ?? []
        for (i, conn) in connections.enumerated() {
            try await eventually(5, "\(name): connection \(i)", every: 0.001) {
                if transport.requests.count > i { return true }
                clock.advance(by: 50)
                return false
            }
            let request = transport.requests[i]
            let last = (conn["lastEventId"] as? NSNumber)?.uint64Value ?? 0
            if last == 0 {
                XCTAssertEqual(request.method, "POST", "\(name): connection \(i)")
            } else {
                XCTAssertEqual([request.method, request.header("Last-Event-ID")], ["GET", String(last)], "\(name): connection \(i)")
            }
            let bytes = Array((conn["body"] as? String ?? "").utf8)
            var events: [ConnectionEvent] = [.response(status: 200, contentType: "text/event-stream", retryAfter: nil)]
            events += plan == "whole" ? [.data(Data(bytes))] : bytes.map { .data(Data([$0])) }
            transport.send(events + [.end(error: nil)], to: i)
        }
        let updates = try await log.finished()
        XCTAssertEqual(transport.requests.count, connections.count, "\(name): no request after the last connection")
        let renders = updates.renders
        let partUpdates = updates.compactMap { if case .parts(let p) = $0 { return p } else { return nil } }
        for (k, u) in partUpdates.enumerated() where u.parts != partUpdates[...k].map(\.part) {
            XCTFail("\(name): update \(k) lists \(u.parts), not the parts so far")
        }
        let last = partUpdates.last
        let direction = renders.first { $0.layout != nil }?.layout.map { $0.direction == .rightToLeft ? "rtl" : "ltr" }
        return ["text": renders.last?.text ?? "",
                "parts": try partUpdates.map { try object($0.part.json) },
                "toolCallUpdates": try partUpdates.compactMap(\.toolCall).map(callObject),
                "toolCalls": try (last?.toolCalls ?? []).map(callObject),
                "reasoning": last?.reasoning ?? "",
                "tokens": last?.tokens ?? 0,
                "tokensReceived": updates.telemetry?.tokensReceived ?? -1,
                "direction": direction ?? NSNull(),
                "completion": updates.completion.map(completionObject) ?? NSNull()]
    }

    /// A JSON text as Foundation objects.
    private func object(_ json: String) throws -> Any {
        try JSONSerialization.jsonObject(with: Data(json.utf8), options: [.fragmentsAllowed])
    }

    /// A tool call in the vectors' shape: `{id, name, arguments, ended, input?, output?}`.
    private func callObject(_ c: ToolCall) throws -> Any {
        var o: [String: Any] = ["id": c.id, "name": c.name, "arguments": c.arguments, "ended": c.isEnded]
        if let input = c.input { o["input"] = try object(input.compactJSON) }
        if let output = c.output { o["output"] = try object(output.compactJSON) }
        return o
    }

    /// A completion in the vectors' shape (the message is not compared).
    private func completionObject(_ c: Completion) -> Any {
        switch c {
        case .finished(let reason): return ["kind": "finished", "finishReason": reason]
        case .stopped: return ["kind": "stopped"]
        case .timedOut: return ["kind": "timedOut"]
        case .needsResume: return ["kind": "needsResume"]
        case .failed(let status, let code, _): return ["kind": "failed", "status": status, "code": code.rawValue]
        }
    }

    /// JSON text with sorted keys: equal for equal values whichever side built them.
    private func canonical(_ v: Any) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: v, options: [.sortedKeys, .fragmentsAllowed]), as: UTF8.self)
    }
}
