import Foundation
import RelayCore
import RelayTestKit
import RelayTestSupport
import RelayUpstream
import XCTest

/// Adaptive coalescing (docs/PROTOCOL.md "Slow links and slow consumers"). A client on
/// a slow link gets its deltas merged into
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
    /// Pass-through writes under a changing link: one reader that keeps up, then stops
    /// reading (the link backs up: its deltas are merged), then drains and keeps up
    /// again until the relay goes back to one event per token, then stops again and
    /// drops the connection mid-coalescing; it resumes on another relay from the last
    /// id it got. After every event, the text so far must be exactly the answer's first
    /// `id` tokens (a merged event's id is the highest seq it covers), and the whole
    /// answer arrives once.
    func testReaderSwitchingBetweenKeepingUpAndStallingResumesExactlyOnAnotherRelay() throws {
        let env = ["RELAY_SIMULATED_TOKENS_PER_SECOND": "300", "RELAY_COALESCE_BACKLOG": "1024"]
        let a = try startRelay(env)
        let b = try startRelay(env)
        let token = RelayProcess.token()
        let id = Chat.newID()
        let body = Chat.body()
        let tokens = SimulatedTokenizer.tokens(try XCTUnwrap(SimulatedDocuments.document(forModel: "simulated")))
        let reader = try RawConnection(port: a.port, receiveBuffer: 2_048)
        try reader.send("POST /api/chat/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nAuthorization: Bearer \(token)\r\n"
                        + "Content-Type: application/json\r\nX-Request-Id: \(id)\r\nContent-Length: \(body.count)\r\n\r\n"
                        + String(decoding: body, as: UTF8.self))
        var raw: [UInt8] = []
        var events: [SSEMessage] = []
        /// Reads what is there now (no waiting beyond `wait` s for the first bytes).
        func drain(wait: Double = 0.05) throws {
            var first = true
            while let chunk = reader.read(max: 65_536, timeout: first ? wait : 0), !chunk.isEmpty {
                raw += chunk
                first = false
            }
            events = try ScaleOutTests.sseEvents(fromRawHTTP: raw)
        }
        func ids() -> [UInt64] { events.compactMap { UInt64($0.lastEventId) } }
        func merged() throws -> Double { try metric(a, "relay_deltas_merged_total") ?? 0 }
        /// Stops reading until the generation is 150 events (≈ 7 KB of SSE, far above the
        /// 2 KB receive window plus the 1 KB backlog mark) past the last one received.
        func stall() throws {
            let have = ids().last ?? 0
            try eventually(15, "the generation to run 150 events ahead of \(have)") { try self.topSeq(id) >= have + 150 }
        }
        /// Whether some event of `i` after index `from` covers more than one seq.
        func hasMerged(_ i: [UInt64], after from: Int) -> Bool {
            i.indices.dropFirst().contains { $0 > from && i[$0] > i[$0 - 1] + 1 }
        }

        // 1. Keeps up: one event per token.
        try eventually(10, "the first 100 events") { try drain(); return ids().count >= 100 }
        XCTAssertEqual(ids(), Array(1...UInt64(ids().count)), "one event per token while keeping up")
        // 2. Stalls until merging, 3. drains and keeps up until 20 single-token events in a
        // row follow a merged one (the probe went back to one event per token).
        try stall()
        let beforeFirstStall = ids().count - 1
        try eventually(20, "one event per token again after merged events (ids: \(ids().suffix(30)))") {
            try drain()
            let i = ids()
            // The index of the last merged event (its id jumps by more than one).
            guard let lastMerge = i.indices.dropFirst().last(where: { i[$0] > i[$0 - 1] + 1 }) else { return false }
            return i.count - (lastMerge + 1) >= 20
        }
        XCTAssertTrue(hasMerged(ids(), after: beforeFirstStall), "the stalled link got merged deltas")
        // 4. Stalls again, takes what arrived (merged again), and drops the connection.
        let beforeSecondStall = ids().count - 1
        try stall()
        try eventually(5, "a merged event after the second stall") { try drain(); return hasMerged(ids(), after: beforeSecondStall) }
        reader.close()
        let ended = events.last.map { SequencedEvent(seq: 0, json: $0.data).isTerminal } ?? false
        XCTAssertFalse(ended, "the drop happened mid-answer (the test needs a longer answer or faster phases)")
        let firstPart = events
        let resumeFrom = try XCTUnwrap(firstPart.last?.lastEventId)

        // 5. Resumes on relay B from the last id received.
        let rest = try Chat.resume(port: b.port, token: token, requestID: id, lastEventID: resumeFrom).readAll()
        var text = ""
        var lastSeq: UInt64 = 0
        for e in firstPart + rest {
            let seq = try XCTUnwrap(UInt64(e.lastEventId), "every event has an id")
            XCTAssertGreaterThan(seq, lastSeq, "ids strictly increase across the resume")
            lastSeq = seq
            guard case .delta(let t)? = try? StreamEvent(json: e.data) else { continue }
            text += t
            XCTAssertEqual(text, tokens.prefix(Int(seq)).joined(), "the text through id \(seq) is exactly the first \(seq) tokens")
            if text != tokens.prefix(Int(seq)).joined() { break }
        }
        XCTAssertEqual(text, referenceText(), "the whole answer once: nothing lost or duplicated")
        XCTAssertTrue(rest.last.map { SequencedEvent(seq: 0, json: $0.data).isTerminal } ?? false, "the resumed response ends with done")
        print("switching reader: \(firstPart.count) events on A (ids up to \(resumeFrom), \(Int(try merged())) deltas merged), \(rest.count) on B")
    }
}
