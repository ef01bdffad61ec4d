import Foundation
import RelayCore
import RelayTestKit
import RelayTestSupport
import XCTest

/// Streams through a real Redis: SSE framing (docs/PROTOCOL.md "Stream responses"), the
/// event log's shape (docs/DATA_MODEL.md "The event stream").
final class StreamTests: RelayTestCase {
    func testHeadersFramingAndGaplessSequence() throws {
        let relay = try startRelay()
        let id = Chat.newID()
        let c = try Chat.start(port: relay.port, token: RelayProcess.token(), requestID: id, maxTokens: 40)
        XCTAssertEqual(c.status, 200)
        XCTAssertEqual(c.header("Content-Type"), "text/event-stream; charset=utf-8")
        XCTAssertEqual(c.header("Cache-Control"), "no-store")
        XCTAssertEqual(c.header("X-Accel-Buffering"), "no")
        XCTAssertEqual(c.header("X-Request-Id"), id)
        let events = try c.readAll()
        XCTAssertTrue((500...1500).contains(c.parser.retry ?? 0), "retry: 1000 ms ± 50 %, got \(String(describing: c.parser.retry))")
        XCTAssertEqual(events.count, 41, "40 deltas and done")
        assertSequence(events)
        guard case .done(let reason, let usage, _)? = try? StreamEvent(json: events.last!.data) else {
            return XCTFail("last event is done")
        }
        XCTAssertEqual(reason, "length")
        XCTAssertEqual(usage.completionTokens, 40)
        XCTAssertTrue(c.ended, "the response ends after done")
    }

    func testGeneratedIDWhenNoneGiven() throws {
        let relay = try startRelay()
        let c = try Chat.start(port: relay.port, token: RelayProcess.token(), maxTokens: 3)
        let id = try XCTUnwrap(c.header("X-Request-Id"))
        XCTAssertNoThrow(try RequestID(validating: id))
        XCTAssertEqual(try c.readAll().count, 4)
    }

    func testStreamHoldsExactlyMaxlenEntriesAfter1000Appends() throws {
        let relay = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "20000"])
        let id = Chat.newID()
        let events = try Chat.start(port: relay.port, token: RelayProcess.token(), requestID: id, maxTokens: 999).readAll()
        XCTAssertEqual(events.count, 1000)
        XCTAssertEqual(try redis.cli("XLEN", streamKey(id, "events")), "200")
        XCTAssertEqual(try redis.cli("HGET", streamKey(id, "meta"), "last_seq"), "1000")
        XCTAssertEqual(try redis.cli("HGET", streamKey(id, "meta"), "state"), "done")
        let first = try redis.cli("XRANGE", streamKey(id, "events"), "-", "+", "COUNT", "1")
        XCTAssertTrue(first.hasPrefix("801-0"), "oldest retained entry is 801-0, got \(first.prefix(20))")
    }

    /// The keys' TTL is set by the first append (text and offsets: by the first text
    /// write, which creates them), refreshed at least once per interval
    /// (`TTLRefreshPolicy`: a tenth of the TTL, here 2 s) while the generation appends,
    /// and set to the full TTL by the final append (not on every event).
    func testTTLIsSetRefreshedWhileAppendingAndRenewedByTheFinalAppend() throws {
        let relay = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "200", "RELAY_BUFFER_TTL": "20s"])
        let id = Chat.newID()
        let c = try Chat.start(port: relay.port, token: RelayProcess.token(), requestID: id, maxTokens: 1_000)
        // Events and meta get their TTL from the first append; text and offsets from the
        // first text write (once per 25 events, TextCheckpoint), which creates them.
        for _ in 0..<30 { _ = try c.nextEvent() }
        let keys = ["events", "meta", "text", "offsets"].map { streamKey(id, $0) }
        for k in keys {
            let t = Int(try redis.cli("PTTL", k)) ?? -1
            XCTAssertTrue((1...20_000).contains(t), "\(k) has a TTL from the first append or text write: \(t)")
        }
        let t1 = Int(try redis.cli("PTTL", streamKey(id, "events"))) ?? -1
        // 800 more events (4 s at 200 tokens/s): without a refresh the TTL would be ≈ t1 − 4,000.
        // Every key of the stream is refreshed alike: events, meta, text and offsets.
        for _ in 0..<800 { _ = try c.nextEvent() }
        for k in keys {
            let t2 = Int(try redis.cli("PTTL", k)) ?? -1
            XCTAssertGreaterThan(t2, t1 - 3_000, "\(k): TTL refreshed while appending (t1 \(t1), t2 \(t2))")
            XCTAssertGreaterThan(t2, 20_000 - 2_000 - 1_000, "\(k): refreshed within the last interval (+ 1 s slack): \(t2)")
            XCTAssertLessThanOrEqual(t2, 20_000, "\(k): TTL is RELAY_BUFFER_TTL: \(t2)")
        }
        _ = try c.readAll()
        for k in keys {
            let t = Int(try redis.cli("PTTL", k)) ?? -1
            XCTAssertGreaterThan(t, 20_000 - 1_500, "\(k) renewed by the final append: \(t)")
        }
        c.close()
    }

    func testDisconnectedClientsGenerationRunsToTheEnd() throws {
        let relay = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "300"])
        let id = Chat.newID()
        let c = try Chat.start(port: relay.port, token: RelayProcess.token(), requestID: id, maxTokens: 150)
        for _ in 0..<5 { _ = try c.nextEvent() }
        c.close()
        try eventually(10, "the generation to finish") {
            try redis.cli("HGET", streamKey(id, "meta"), "state") == "done"
        }
        XCTAssertEqual(try redis.cli("HGET", streamKey(id, "meta"), "last_seq"), "151")
    }

    func testHeartbeatsOnAnIdleStream() throws {
        let relay = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "0.5", "RELAY_HEARTBEAT": "150ms"])
        let c = try Chat.start(port: relay.port, token: RelayProcess.token(), maxTokens: 2)
        let first = try XCTUnwrap(try c.nextEvent(timeout: 10))
        XCTAssertEqual(first.lastEventId, "1")
        XCTAssertGreaterThanOrEqual(c.comments.count, 3, "pings during the 2 s before the first token")
        XCTAssertTrue(c.comments.allSatisfy { $0 == "ping" })
        c.close()
    }

    func testPrivateRedisDefaultStartsAndCleansUp() throws {
        let relay = try RelayProcess(redisURL: nil, env: ["RELAY_SIMULATED_TOKENS_PER_SECOND": "2000"])
        let log = relay.log
        XCTAssertTrue(log.contains("started a private redis-server"), log)
        let line = try XCTUnwrap(log.split(separator: "\n").first { $0.contains("private redis-server") })
        let obj = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "a JSON log line")
        let url = try XCTUnwrap(obj["redis"] as? String)
        XCTAssertTrue(url.hasPrefix("unix://"))
        let socket = String(url.dropFirst("unix://".count))
        XCTAssertTrue(FileManager.default.fileExists(atPath: socket))
        let events = try Chat.start(port: relay.port, token: RelayProcess.token(), maxTokens: 5).readAll()
        XCTAssertEqual(events.count, 6)
        XCTAssertEqual(relay.terminate(), 0)
        XCTAssertFalse(FileManager.default.fileExists(atPath: socket), "private Redis socket removed on exit")
    }

    func testLongQuietStreamOutlivesTheRequestTimeout() throws {
        let relay = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "0.5", "RELAY_REQUEST_TIMEOUT": "1s", "RELAY_HEARTBEAT": "10s"])
        let events = try Chat.start(port: relay.port, token: RelayProcess.token(), maxTokens: 2).readAll(timeout: 10)
        XCTAssertEqual(events.count, 3, "a stream quiet for longer than the request timeout is not cut")
    }

    func testIncompleteRequestIsCutWith408AfterTheRequestTimeout() throws {
        let relay = try startRelay(["RELAY_REQUEST_TIMEOUT": "1s"])
        let t0 = Date()
        // Promises 100 bytes of body, sends 3, then waits.
        let c = try RawConnection(port: relay.port)
        try c.send("POST /api/chat/stream HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc")
        let answer = String(decoding: c.readToEnd(timeout: 15), as: UTF8.self)
        XCTAssertTrue(answer.hasPrefix("HTTP/1.1 408 "), "408, then the connection closes: \(answer)")
        XCTAssertTrue(answer.contains("\"request_timeout\"") && answer.contains("Connection: close"), answer)
        let elapsed = Date().timeIntervalSince(t0)
        // Not before RELAY_REQUEST_TIMEOUT (a 50 ms allowance for timer rounding); the
        // upper bound is loose for a loaded 2-core machine.
        XCTAssertGreaterThanOrEqual(elapsed, 0.95, "cut before the request timeout")
        XCTAssertLessThan(elapsed, 8, "cut long after the request timeout")
        XCTAssertEqual(try HTTPClient.request(port: relay.port, method: "GET", path: "/healthz").status, 200)
    }
}
