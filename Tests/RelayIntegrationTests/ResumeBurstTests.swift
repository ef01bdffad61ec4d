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

    /// Clients that leave while their replay waits for a slot (they gave up, to retry) cost no
    /// Redis read: the read is skipped when its turn comes (docs/OPERATIONS.md "Resume
    /// bursts"), so the clients still there are not kept waiting behind reads nobody gets.
    func testResumesWhoseClientsLeftCostAtMostOneReplayReadEachAndTheRelayStillServes() throws {
        let relay = try startRelay(["RELAY_WORKERS": "1", "RELAY_REPLAY_CONCURRENCY": "1",
                                    "RELAY_SIMULATED_TOKENS_PER_SECOND": "100000"])
        let token = RelayProcess.token()
        let id = Chat.newID()
        let all = try Chat.start(port: relay.port, token: token, requestID: id, maxTokens: 3000).readAll()
        XCTAssertGreaterThan(all.count, 1000)
        func xranges() throws -> Int {
            let info = try redis.cli("INFO", "commandstats")
            guard let line = info.split(whereSeparator: \.isNewline).first(where: { $0.hasPrefix("cmdstat_xrange:") }),
                  let calls = line.split(separator: ",").first?.split(separator: "=").last else { return 0 }
            return Int(calls) ?? 0
        }
        let before = try xranges()
        // 150 resumes from the start; each client reads its response head, then leaves.
        let n = 150
        var resumes: [RawConnection] = []
        for _ in 0..<n { resumes.append(try RawConnection(port: relay.port)) }
        for c in resumes {
            try c.send("GET /api/chat/stream/\(id) HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer \(token)\r\n"
                       + "Last-Event-ID: 0\r\nConnection: close\r\n\r\n")
        }
        for c in resumes {
            var head = ""
            while !head.contains("\r\n\r\n"), let bytes = c.read(max: 512, timeout: 30), !bytes.isEmpty {
                head += String(decoding: bytes, as: UTF8.self)
            }
            XCTAssertTrue(head.hasPrefix("HTTP/1.1 200 "), head)
            c.close()
        }
        try eventually(30, "no replay left waiting") { try metric(relay, "relay_replays_queued") == 0 }
        // Each resume's `open` script calls XRANGE … COUNT 1 once; the rest are replay reads.
        let reads = try xranges() - before - n
        let skipped = try metric(relay, "relay_replays_skipped_total") ?? 0
        print("resumes that left: \(reads) of \(n) replay reads made, \(Int(skipped)) skipped")
        // A subscription whose client left before its replay was even asked for reads nothing;
        // one that left while queued is skipped when its turn comes (which of the two happens
        // depends on the machine's pace: ReplayAdmissionTests checks the skip itself). Either
        // way no resume costs more than one read, made or skipped.
        XCTAssertLessThanOrEqual(reads + Int(skipped), n, "at most one read (made or skipped) per resume")
        // The relay still serves a whole resume afterwards.
        let again = try RawConnection(port: relay.port)
        defer { again.close() }
        try again.send("GET /api/chat/stream/\(id) HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer \(token)\r\n"
                       + "Last-Event-ID: \(all.count - 1)\r\nConnection: close\r\n\r\n")
        let answer = String(decoding: again.readToEnd(timeout: 20), as: UTF8.self)
        XCTAssertTrue(answer.contains(all.last!.data), answer.suffix(300).description)
    }
}
