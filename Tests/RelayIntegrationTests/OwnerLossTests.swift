import Foundation
import RelayCore
import RelayRedis
import RelayTestKit
import RelayTestSupport
import RelayUpstream
import XCTest

/// An owner lost mid-answer — stopped (SIGSTOP) past its lease, or killed — while its
/// stream is read elsewhere, with takeovers off (`RELAY_MAX_CONTINUATIONS=0`; with them on:
/// `TakeoverTests`): another relay ends the stream with `upstream_lost` at the
/// fence (docs/PROTOCOL.md), the fenced owner adds nothing after it, and every resume is
/// a byte-exact prefix of the answer (docs/LOSSLESS_RESUME.md).
final class OwnerLossTests: RelayTestCase {
    /// The owner is stopped (SIGSTOP) past its 3 s lease while a client resumed on
    /// another relay: that relay ends the stream with `upstream_lost`. Woken (SIGCONT),
    /// the fenced owner appends and delivers nothing more: its own client gets exactly
    /// the events stored before the fence, then that `upstream_lost`, and Redis holds
    /// nothing after it.
    func testAStalledOwnerWokenAfterTheFenceAddsNothingAndItsClientGetsUpstreamLost() throws {
        let a = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "40", "RELAY_WORKERS": "1", "RELAY_MAX_CONTINUATIONS": "0"])
        let b = try startRelay(["RELAY_SIMULATED_TOKENS_PER_SECOND": "40", "RELAY_MAX_CONTINUATIONS": "0"])
        let token = RelayProcess.token()
        let id = Chat.newID()
        let owner = try Chat.start(port: a.port, token: token, requestID: id, maxTokens: 600)
        var ownerEvents: [SSEMessage] = []
        for _ in 0..<5 { ownerEvents.append(try XCTUnwrap(try owner.nextEvent())) }
        let pid = a.process.processIdentifier
        Foundation.kill(pid, SIGSTOP)
        var stopped = true
        defer { if stopped { Foundation.kill(pid, SIGCONT) } }
        let resumed = try Chat.resume(port: b.port, token: token, requestID: id, lastEventID: ownerEvents.last!.lastEventId)
        let rest = try resumed.readAll(timeout: 15)
        guard let last = rest.last, case .error(_, "upstream_lost", _)? = try? StreamEvent(json: last.data) else {
            return XCTFail("the resumed client ends with upstream_lost, got \(rest.suffix(2).map(\.data))")
        }
        let fenceSeq = try XCTUnwrap(UInt64(last.lastEventId))
        assertSequence(ownerEvents + rest)
        Foundation.kill(pid, SIGCONT)
        stopped = false
        ownerEvents += try owner.readAll(timeout: 15)
        assertSequence(ownerEvents)
        XCTAssertEqual(ownerEvents.last?.lastEventId, String(fenceSeq), "the owner's client ends with the fence's event")
        XCTAssertEqual(ownerEvents.last?.data, last.data)
        XCTAssertEqual(ownerEvents.filter(isTerminal).count, 1)
        // Give the woken owner time to try its appends, then check that Redis holds
        // nothing after the terminal event.
        try eventually(10, "the woken owner to end its generation") {
            try self.metric(a, "relay_running_generations") == 0
        }
        XCTAssertEqual(try storedSeqs(id).last, fenceSeq, "nothing follows the terminal event")
        XCTAssertEqual(try redis.cli("HMGET", streamKey(id, "meta"), "state", "last_seq"), "failed\n\(fenceSeq)")
        // A fresh resume from 0 gets the same, whole prefix, byte-exact.
        let again = try Chat.resume(port: b.port, token: token, requestID: id, lastEventID: "0").readAll(timeout: 10)
        XCTAssertEqual(Chat.text(again), Chat.text(ownerEvents))
        XCTAssertEqual(again.last?.lastEventId, String(fenceSeq))
    }

    /// The owner is killed (SIGKILL) mid-answer with text buffered (`TextCheckpoint`)
    /// after the retained window moved; another relay ends the stream with
    /// `upstream_lost` (its lease expiry appends with `MAXLEN cap`), and a resume from
    /// every position on it is byte-exact — at the default cap and at
    /// `RELAY_BUFFER_EVENTS=1` (each event's text stored before its `XADD`). (Also
    /// tried at caps 17 and 129: held; left out to keep the test at seconds.)
    func testAKilledOwnerWithTextBufferedResumesByteExactFromEveryPosition() throws {
        let doc = SimulatedDocuments.document(forModel: "simulated")!
        let tokens = SimulatedTokenizer.tokens(doc)
        for cap in ["1", "200"] {
            let env = ["RELAY_SIMULATED_TOKENS_PER_SECOND": "3000", "RELAY_BUFFER_EVENTS": cap, "RELAY_MAX_CONTINUATIONS": "0"]
            let a = try startRelay(env.merging(["RELAY_WORKERS": "1"]) { $1 })
            let b = try startRelay(env)
            let token = RelayProcess.token()
            let id = Chat.newID()
            let owner = try Chat.start(port: a.port, token: token, requestID: id)
            for _ in 0..<330 { _ = try XCTUnwrap(try owner.nextEvent(), "cap \(cap)") }
            a.kill9()
            owner.close()
            let all = try Chat.resume(port: b.port, token: token, requestID: id, lastEventID: "0").readAll(timeout: 15)
            guard let last = all.last, case .error(_, "upstream_lost", _)? = try? StreamEvent(json: last.data),
                  let fence = Int(last.lastEventId) else {
                XCTFail("cap \(cap): ends with upstream_lost, got \(all.suffix(1).map(\.data))"); continue
            }
            XCTAssertGreaterThanOrEqual(fence, 331, "cap \(cap)")
            // Event i (< fence) is token i's delta.
            let text = { (from: Int) in tokens[from..<(fence - 1)].joined() }
            XCTAssertEqual(Chat.text(all), text(0), "cap \(cap): resume from 0")
            var wrong: [Int] = []
            for k in 1..<fence where Chat.text(try Chat.resume(port: b.port, token: token, requestID: id,
                                                                lastEventID: String(k)).readAll(timeout: 10)) != text(min(k, fence - 1)) {
                wrong.append(k)
            }
            XCTAssertEqual(wrong, [], "cap \(cap): fence \(fence), resumes that were not byte-exact")
        }
    }
}
