import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RelayClient
import RelayClientCurl
import RelayCore
import RelayTestKit
import RelayTestSupport
import XCTest

/// What the client-kit tests share (docs/CLIENT_KITS.md): the request, a client on a set of
/// relay ports, and the admin revocation.
class ClientKitTestCase: RelayTestCase {
    static let adminKey = "admin-key-for-client-tests-0123456789"
    static let prompt = ChatMessage(role: "user", content: "Draft a mutual NDA")

    func request(maxTokens: Int, model: String = "simulated") -> ChatRequest {
        ChatRequest(messages: [Self.prompt], model: model, maxTokens: maxTokens)
    }

    func url(_ port: Int) -> URL { URL(string: "http://127.0.0.1:\(port)")! }

    func client(_ ports: [Int], token: @escaping @Sendable () -> String = { RelayProcess.token(sub: "client-kit") },
                clock: any RelayClock = SystemClock(), telemetry: TelemetrySink? = nil) -> RelayChatClient {
        RelayChatClient(baseURLs: ports.map(url), token: { token() }, clock: clock, telemetry: telemetry,
                        configuration: .ephemeral)
    }

    static func revoke(_ relay: RelayProcess, sid: String) throws -> Int {
        try HTTPClient.request(port: relay.port, method: "POST", path: "/admin/sessions/\(sid)/revoke",
                               headers: [("Authorization", "Bearer \(Self.adminKey)")]).status
    }

    /// `relay:{id}:meta` state `cancelled`, the log ends with `done` `cancelled`, and
    /// `last_seq` stops moving.
    func assertCancelled(_ id: String, sub: String = "client-kit", file: StaticString = #filePath, line: UInt = #line) throws {
        let meta = streamKey(id, "meta", sub: sub)
        try eventually(5, "state cancelled") { try redis.cli("HGET", meta, "state") == "cancelled" }
        let last = try redis.cli("XREVRANGE", streamKey(id, "events", sub: sub), "+", "-", "COUNT", "1")
        XCTAssertTrue(last.contains("\"done\"") && last.contains("cancelled"), "log ends with done cancelled: \(last)", file: file, line: line)
        // The generation stopped: the `done` entry is the stream's last one (its id is
        // last_seq), so nothing was appended after it.
        let seq = try redis.cli("HGET", meta, "last_seq")
        XCTAssertTrue(last.hasPrefix("\(seq)-"), "the done entry is the last one (last_seq \(seq)): \(last.prefix(40))", file: file, line: line)
        XCTAssertLessThan(Int(seq) ?? .max, 5_000, file: file, line: line)
    }

    // MARK: - Helpers

    /// Everything a `RelayStream` yielded.
    struct Outcome {
        var updates: [ChatUpdate] = []
        var statuses: [ConnectionStatus] {
            updates.compactMap { if case .connection(let s) = $0 { return s } else { return nil } }
        }
        var budgets: [BudgetState] {
            updates.compactMap { if case .budget(let b) = $0 { return b } else { return nil } }
        }
        var renders: [RenderUpdate] {
            updates.compactMap { if case .render(let r) = $0 { return r } else { return nil } }
        }
        /// The text on screen at the end.
        var text: String { renders.last?.text ?? "" }
        var completion: Completion? { renders.last?.completion }
        var telemetry: TelemetryRecord? {
            if case .telemetry(let t)? = updates.last { return t }
            return nil
        }
    }

    /// Reads `stream`, pressing Stop once the first text is on screen.
    func collectStoppingAtFirstText(_ stream: RelayStream) async throws -> Outcome {
        let stopped = Box(false)
        return try await collect(stream, timeout: 10) { u in
            if case .render(let r) = u, !r.text.isEmpty, !stopped.value {
                stopped.value = true
                stream.stop()
            }
        }
    }

    /// Reads `stream` to its end (at most `timeout` seconds; then stops it and throws),
    /// calling `onUpdate` for each update as it arrives.
    func collect(_ stream: RelayStream, timeout: Double = 20,
                 _ onUpdate: @escaping @Sendable (ChatUpdate) -> Void = { _ in }) async throws -> Outcome {
        let result = Box<Outcome?>(nil)
        let reader = Task {
            var o = Outcome()
            for await u in stream {
                onUpdate(u)
                o.updates.append(u)
            }
            result.value = o
        }
        do {
            try await eventually(timeout, "stream \(stream.requestId) to end", every: 0.01) { result.value != nil }
        } catch {
            stream.stop()
            reader.cancel()
            throw error
        }
        let o = try XCTUnwrap(result.value)
        // The sequence ends with the completion, then the telemetry record.
        XCTAssertNotNil(o.telemetry, "the last update is the telemetry record")
        XCTAssertNotNil(o.completion, "the last render carries the completion")
        return o
    }

    func find(_ needle: [UInt8], in hay: [UInt8]) -> Int? {
        guard hay.count >= needle.count else { return nil }
        for i in 0...(hay.count - needle.count) where hay[i..<(i + needle.count)].elementsEqual(needle) { return i }
        return nil
    }
}
