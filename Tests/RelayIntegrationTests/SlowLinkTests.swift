import Foundation
import RelayCore
import RelayTestSupport
import XCTest

/// Issue 14: adaptive coalescing. A client on a slow link gets its deltas merged into
/// fewer, larger deltas (each with the highest seq it covers, losing nothing) so the
/// answer keeps pace with the generation; a fast client on the same stream still gets
/// one event per token.
final class SlowLinkTests: RelayTestCase {
    /// The 3,019-token NDA at 150 tokens/s (the 15–30 s answers of the mobile rules)
    /// to a reader throttled to 4 KB/s with a 2 KB receive buffer, next to a fast reader
    /// of the same stream. Timings are recorded, asserted only generously.
    func testThrottledReaderKeepsPaceWithFewerBytesAndFastReaderIsUnchanged() throws {
        let relay = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "150", "RELAY_COALESCE_BACKLOG": "1024"])
        let token = RelayProcess.token()
        let id = Chat.newID()
        let body = Chat.body()
        let slow = try ThrottledReader(port: relay.port, bytesPerSecond: 4_096)
        try slow.send("POST /api/chat/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nAuthorization: Bearer \(token)\r\n"
                      + "Content-Type: application/json\r\nX-Request-Id: \(id)\r\nContent-Length: \(body.count)\r\n\r\n"
                      + String(decoding: body, as: UTF8.self))
        // The fast reader joins from the start (Last-Event-ID 0) once the stream exists.
        var fastConnection: SSEConnection?
        try eventually(10, "the stream to exist") {
            fastConnection = try? Chat.resume(port: relay.port, token: token, requestID: id, lastEventID: "0")
            return fastConnection?.status == 200
        }
        let fast = ScaleOutTests.Collector(try XCTUnwrap(fastConnection), timeout: 30)
        XCTAssertTrue(slow.readToEnd(timeout: 90), "the relay ended the slow response")
        try eventually(30, "the fast reader's done (\(fast.events.count) events; slow: \(slow.received.count) bytes)") { fast.terminal != nil }
        let generationEnd = try XCTUnwrap(fast.terminal).2
        let fastEvents = fast.events.map { $0.0 }

        // Fast link: every seq 1…n as its own event, and the whole answer.
        assertSequence(fastEvents)
        let reference = Chat.text(fastEvents)
        XCTAssertGreaterThanOrEqual(fastEvents.count, 3_000)

        // Slow link: the same text, exactly; ids increasing, ending with the same done.
        let slowEvents = try ScaleOutTests.sseEvents(fromRawHTTP: slow.received)
        XCTAssertEqual(Chat.text(slowEvents), reference, "nothing lost or duplicated on the slow link")
        let ids = slowEvents.compactMap { UInt64($0.lastEventId) }
        XCTAssertEqual(ids, ids.sorted())
        XCTAssertEqual(Set(ids).count, ids.count)
        XCTAssertEqual(slowEvents.last?.data, fastEvents.last?.data)
        XCTAssertEqual(slowEvents.last?.lastEventId, fastEvents.last?.lastEventId)

        let textBytes = reference.utf8.count
        let ratio = Double(slow.received.count) / Double(textBytes)
        let lag = try XCTUnwrap(slow.lastByteAt).timeIntervalSince(generationEnd)
        let merged = try metric(relay, "relay_deltas_merged_total") ?? 0
        print("slow link (4 KB/s, SO_RCVBUF 2 KB): \(slow.received.count) bytes on the wire for \(textBytes) bytes of text (\(String(format: "%.2f", ratio))×), "
              + "\(slowEvents.count) events for \(fastEvents.count), last byte \(String(format: "%.2f", lag)) s after the generation's end; \(Int(merged)) deltas merged")
        XCTAssertLessThanOrEqual(ratio, 2.5, "wire bytes ≤ 2.5 × text bytes")
        XCTAssertLessThan(lag, 5, "the slow reader finishes within a few seconds of the generation")
        XCTAssertGreaterThan(merged, 0, "merges are counted in /metrics")
        let help = try HTTPClient.request(port: relay.port, method: "GET", path: "/metrics").text
        XCTAssertTrue(help.contains("# HELP relay_deltas_merged_total "))
    }
}
