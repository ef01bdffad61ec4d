import Foundation
import RelayTestSupport
import RelayTestKit
import XCTest

/// docs/PROTOCOL.md §4.3 "Resume bursts": a worker keeps at most `RELAY_REPLAY_CONCURRENCY`
/// replay reads outstanding; the others wait their turn. Every resume of a burst still gets
/// exactly the events it lacks, and nothing stays queued afterwards.
final class ResumeBurstTests: RelayTestCase {
    func testABurstOfResumesBeyondTheReplayWindowEachGetsExactlyTheRest() throws {
        let relay = try startRelay(["RELAY_WORKERS": "1", "RELAY_REPLAY_CONCURRENCY": "2"])
        let token = RelayProcess.token()
        let id = Chat.newID()
        let all = try Chat.start(port: relay.port, token: token, requestID: id, maxTokens: 60).readAll()
        XCTAssertEqual(all.count, 61)

        // 60 resumes from every position, all sent before any answer is read: the worker
        // gets them within a few loop turns, far more than its 2 replay slots.
        var resumes: [(Int, RawConnection)] = []
        for from in 0..<60 { resumes.append((from, try RawConnection(port: relay.port))) }
        for (from, c) in resumes {
            try c.send("GET /api/chat/stream/\(id) HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer \(token)\r\n"
                       + "Last-Event-ID: \(from)\r\nConnection: close\r\n\r\n")
        }
        for (from, c) in resumes {
            let answer = String(decoding: c.readToEnd(timeout: 30), as: UTF8.self)
            XCTAssertTrue(answer.hasPrefix("HTTP/1.1 200 "), "resume from \(from): \(answer.prefix(200))")
            // Lines by LF bytes (a Swift Character joins CR LF into one).
            let ids = answer.utf8.split(separator: UInt8(ascii: "\n")).map { String(decoding: $0, as: UTF8.self) }.compactMap { line -> String? in
                line.hasPrefix("id: ") ? String(line.dropFirst(4)).trimmingCharacters(in: .whitespaces) : nil
            }
            XCTAssertEqual(ids, all[from...].map(\.lastEventId), "resume from \(from): each missing event once, in order")
            for e in all[from...] { XCTAssertTrue(answer.contains(e.data), "resume from \(from): event \(e.lastEventId)") }
        }
        let waited = try XCTUnwrap(try metric(relay, "relay_replays_waited_total"))
        print("resume burst: \(Int(waited)) of 60 replay reads waited for a slot")
        XCTAssertGreaterThan(waited, 0, "the burst was more than the window")
        try eventually(10, "no replay left waiting") { try metric(relay, "relay_replays_queued") == 0 }
    }
}
