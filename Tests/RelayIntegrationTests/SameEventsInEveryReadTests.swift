import Foundation
import RelayCore
import RelayTestKit
import RelayTestSupport
import XCTest

/// An event read at any time — live, replayed within the retained window, read back from the
/// text key beyond it, or from the retained answer once the stream's keys expired — and in any
/// read format — the SSE stream, an offset read's JSON bodies, a Durable Streams SSE read — is
/// the same event: the same id and the same JSON (docs/PROTOCOL.md §6.3, §6.5, §12). One reader
/// (`EventLog.read`, `RetainedAnswer.events(after:)`) and one framer (`EventFramer`) make it so.
final class SameEventsInEveryReadTests: RelayTestCase {
    private typealias Event = (seq: UInt64, json: String)

    private func get(_ relay: RelayProcess, _ token: String, _ id: String, _ query: String) throws -> HTTPResponse {
        try HTTPClient.request(port: relay.port, method: "GET", path: "/api/chat/stream/\(id)?\(query)",
                               headers: [("Authorization", "Bearer \(token)")])
    }

    private static func offset(_ seq: UInt64) -> String { String(format: "%020llu", seq) }

    /// The SSE resume after `k`, to its end.
    private func sse(_ relay: RelayProcess, _ token: String, _ id: String, after k: UInt64) throws -> [Event] {
        let events = try Chat.resume(port: relay.port, token: token, requestID: id, lastEventID: String(k)).readAll()
        return events.map { (UInt64($0.lastEventId) ?? 0, $0.data) }
    }

    /// Catch-up offset reads from `k`, read on from each `Stream-Next-Offset` until `Stream-Closed`.
    private func catchUp(_ relay: RelayProcess, _ token: String, _ id: String, after k: UInt64) throws -> [Event] {
        var out: [Event] = []
        var at = k
        for _ in 0..<100 {
            let r = try get(relay, token, id, "offset=\(Self.offset(at))")
            XCTAssertEqual(r.status, 200, r.text)
            let array = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(r.text.utf8)) as? [Any], r.text)
            let next = try XCTUnwrap(r.header("Stream-Next-Offset").flatMap { UInt64($0) })
            XCTAssertEqual(next, at + UInt64(array.count), "one offset per event")
            // The body is the events' JSON, comma-separated, exactly as stored: cut it back at the top level.
            out += zip((at + 1)...max(at + 1, next), Self.topLevelObjects(r.text)).map { ($0, $1) }
            at = next
            if r.header("Stream-Closed") == "true" { return out }
        }
        XCTFail("the catch-up never closed")
        return out
    }

    /// A Durable Streams SSE read from `k` to its end: each `data` event's array, numbered
    /// from the offset before it (the previous `control` event's `streamNextOffset`).
    private func durableSSE(_ relay: RelayProcess, _ token: String, _ id: String, after k: UInt64) throws -> [Event] {
        let r = try get(relay, token, id, "offset=\(Self.offset(k))&live=sse")
        XCTAssertEqual(r.status, 200, r.text)
        var out: [Event] = []
        var at = k
        for block in r.text.components(separatedBy: "\n\n") where !block.isEmpty {
            let lines = block.split(separator: "\n")
            let data = String(lines.first { $0.hasPrefix("data:") }?.dropFirst(5) ?? "")
            if lines.first == "event: data" {
                let objects = Self.topLevelObjects(data)
                out += zip((at + 1)...(at + UInt64(max(1, objects.count))), objects).map { ($0, $1) }
                at += UInt64(objects.count)
            } else if lines.first == "event: control" {
                let control = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(data.utf8)) as? [String: Any])
                XCTAssertEqual((control["streamNextOffset"] as? String).flatMap { UInt64($0) }, at, "the control event's offset")
            }
        }
        return out
    }

    /// The top-level objects of a JSON array's text, as their own text (`[{…},{…}]`).
    private static func topLevelObjects(_ array: String) -> [String] {
        var out: [String] = []
        var depth = 0, inString = false, escaped = false
        var start: String.Index?
        for i in array.indices {
            let c = array[i]
            if inString {
                if escaped { escaped = false } else if c == "\\" { escaped = true } else if c == "\"" { inString = false }
                continue
            }
            switch c {
            case "\"": inString = true
            case "{":
                if depth == 0 { start = i }
                depth += 1
            case "}":
                depth -= 1
                if depth == 0, let s = start { out.append(String(array[s...i])) }
            default: break
            }
        }
        return out
    }

    private func assertSame(_ got: [Event], _ want: [Event], _ what: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(got.map(\.seq), want.map(\.seq), "\(what): ids", file: file, line: line)
        let differing = zip(got, want).first { $0.0.json != $0.1.json }
        XCTAssertNil(differing.map { "seq \($0.0.seq): \($0.0.json) ≠ \($0.1.json)" }, "\(what): events", file: file, line: line)
    }

    func testAnEventIsTheSameLiveReplayedCaughtUpRetainedAndInEveryReadFormat() throws {
        // 320 deltas and a done: 121 events beyond the 200-entry window once the answer ended.
        let relay = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "50000", "RELAY_BUFFER_TTL": "6s"])
        let token = RelayProcess.token()
        let id = Chat.newID()
        let streamed: [Event] = try Chat.start(port: relay.port, token: token, requestID: id, maxTokens: 320).readAll()
            .map { (UInt64($0.lastEventId) ?? 0, $0.data) }
        XCTAssertEqual(streamed.map(\.seq), Array(1...321))
        // The window keeps 193–200 entries (StreamTrim): it moved past the first 121 events or more.
        XCTAssertLessThanOrEqual(Int(try redis.cli("XLEN", streamKey(id, "events"))) ?? 999, 200, "the window moved")

        func everyView(_ phase: String) throws {
            for k: UInt64 in [0, 1, 57, 120, 121, 250, 320] {
                let want = Array(streamed.drop { $0.seq <= k })
                assertSame(try sse(relay, token, id, after: k), want, "\(phase): SSE resume after \(k)")
                assertSame(try catchUp(relay, token, id, after: k), want, "\(phase): catch-up offset reads after \(k)")
                assertSame(try durableSSE(relay, token, id, after: k), want, "\(phase): DS SSE read after \(k)")
            }
        }
        // Within the TTL: the window's entries, and beyond them the text key.
        try everyView("stored stream")
        XCTAssertGreaterThan(try metric(relay, "relay_catch_up_events_total") ?? 0, 0, "some reads came back from the text key")
        // Once the keys expired: the retained answer.
        try eventually(15, "the stream's keys to expire") { (try? self.redis.cli("EXISTS", streamKey(id, "meta"))) == "0" }
        try everyView("retained answer")
        XCTAssertGreaterThan(try metric(relay, "relay_resumes_total{outcome=\"retained\"}") ?? 0, 0)
    }
}
