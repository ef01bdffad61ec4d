import Foundation
import RelayCore
import RelayTestKit
import RelayTestSupport
import XCTest

/// Damage a Redis writer leaves in an answer's stored keys is answered as
/// `stored_data_unreadable` by every read (docs/PROTOCOL.md §8, docs/DATA_MODEL.md §4), at
/// once: never a hang on retries, never a guessed character, never another client disturbed.
final class DamagedStoredAnswerTests: RelayTestCase {
    private func finished(_ relay: RelayProcess, model: String = "simulated") throws -> (token: String, id: String, all: [SSEMessage]) {
        let token = RelayProcess.token()
        let id = Chat.newID()
        let all = try Chat.start(port: relay.port, token: token, requestID: id, model: model, maxTokens: 120).readAll()
        return (token, id, all)
    }

    private func reads(_ relay: RelayProcess, _ token: String, _ id: String) throws -> (sse: String, offsets: HTTPResponse) {
        let auth = [("Authorization", "Bearer \(token)")]
        let sse = try HTTPClient.request(port: relay.port, method: "GET", path: "/api/chat/stream/\(id)",
                                         headers: auth + [("Last-Event-ID", "0")], timeout: 10)
        let offsets = try HTTPClient.request(port: relay.port, method: "GET", path: "/api/chat/stream/\(id)?offset=-1", headers: auth)
        return (sse.text, offsets)
    }

    /// A key of another type (`WRONGTYPE` from Redis) is damage, not an outage: the resume
    /// ends with the error instead of retrying every 250 ms for ever.
    func testAStoredKeyOfAnotherTypeEndsTheReadWithStoredDataUnreadable() throws {
        let relay = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "50000", "RELAY_BUFFER_EVENTS": "40"])
        let (token, id, _) = try finished(relay)
        _ = try redis.cli("DEL", streamKey(id, "offsets"))
        _ = try redis.cli("LPUSH", streamKey(id, "offsets"), "a")
        let (sse, offsets) = try reads(relay, token, id)
        XCTAssertTrue(sse.contains("stored_data_unreadable"), "the SSE resume ends with the error: \(sse.suffix(300))")
        XCTAssertEqual(offsets.errorCode, "stored_data_unreadable", offsets.text)
        let healthy = try finished(relay)
        XCTAssertEqual(try Chat.resume(port: relay.port, token: healthy.token, requestID: healthy.id, lastEventID: "0").readAll().map(\.data),
                       healthy.all.map(\.data), "another answer reads as before")
    }

    /// An end offset moved inside a character (Arabic: two bytes each) is refused, not read
    /// back as U+FFFD.
    func testAnOffsetInsideACharacterIsRefusedNotReplaced() throws {
        let relay = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "50000", "RELAY_BUFFER_EVENTS": "40"])
        let (token, id, all) = try finished(relay, model: "simulated-ar")
        // Find a delta ending in a two-byte character; move its end offset one byte back into it.
        let seq = try XCTUnwrap(all.prefix(60).firstIndex { m in
            guard case .delta(let t)? = try? StreamEvent(json: m.data) else { return false }
            return t.utf8.last.map { $0 >= 0x80 } ?? false
        }) + 1
        _ = try redis.cli("BITFIELD", streamKey(id, "offsets"), "INCRBY", "u32", "#\(seq)", "-1")
        let (sse, offsets) = try reads(relay, token, id)
        XCTAssertFalse(sse.contains("\u{FFFD}"), "no replacement character sent")
        XCTAssertTrue(sse.contains("stored_data_unreadable"), sse.suffix(300).description)
        XCTAssertEqual(offsets.errorCode, "stored_data_unreadable", offsets.text)
    }
}
