import Foundation
import RelayCore
import RelayRedis
import RelayTestKit
import XCTest
import RelayEventStore

/// A stalled owner (A) wakes after another instance took its answer over and *finished* it
/// (docs/PROTOCOL.md §4.5, docs/DATA_MODEL.md §6.1): `Scripts.refreshLease` checks the epoch
/// before the state, so A hears "taken over", not "not running", and its appender stays held:
/// its lossless-resume text writes (plain `SETRANGE`s no epoch fences) never reach the
/// finished text. Against real Redis, with the calls `OwnerLeases.confirm` makes; were the
/// refresh to answer "not running", the test lifts the hold as a woken owner once did, and
/// the text check fails.
final class WokenOwnerAfterAFinishedTakeoverTests: RelayTestCase {
    func testAWokenOwnerHearsTakenOverAndWritesNothingOverTheFinishedText() throws {
        let h = try appendHarness(maxLen: 40)   // TextCheckpoint.every = 5
        let id = try RequestID(validating: "woken" + UUID().uuidString.replacingOccurrences(of: "-", with: ""))
        let k = StreamKeys(id)
        let a = LockedBox<StreamAppender?>(nil)
        let o = try startAppender(loop: h.loop, log: h.log, id, appender: a)
        let loop = h.loop
        nonisolated(unsafe) let log = h.log

        // A (instance "test", epoch 0) stores 1…5 and their text.
        h.run {
            for i in 1...5 { a.value!.append(seq: UInt64(i), event: .delta("A\(i) ")) }
        }
        try eventually(5, "A's 1…5 stored with their text") { a.value?.ackedSeq == 5 && a.value?.textStoredThrough == 5 }
        // A stalls: the lease it knew has passed.
        h.run { a.value!.leaseKnown(untilMs: loop.nowMs) }

        // B takes over (the lease lapsed) and finishes the answer: 6…8 and done at 9.
        _ = try redis.cli("SET", k.request, "{}")
        _ = try redis.cli("DEL", k.lease)
        let taken = LockedBox<EventLog.TakenStream?>(nil)
        h.run {
            log.takeover(id, instance: "relay-b", maxContinuations: 2) { r in
                if case .success(.taken(let t)) = r { taken.value = t }
            }
        }
        try eventually(5, "B took over") { taken.value != nil }
        let b = LockedBox<StreamAppender?>(nil)
        let bDrained = LockedBox(0)
        h.run {
            let w = StreamAppender(log: log, loop: loop, id: id, taken: taken.value!)
            w.onDrained = { bDrained.mutate { $0 += 1 } }
            b.value = w
            for i in 6...8 { w.append(seq: UInt64(i), event: .delta("B\(i) ")) }
            w.append(seq: 9, event: .done(finishReason: "stop", usage: Usage(promptTokens: 1, completionTokens: 8)))
        }
        addTeardownBlock { loop.post { b.value = nil } }
        try eventually(5, "B finished") { bDrained.value > 0 && b.value?.ackedSeq == 9 }
        let textBefore = try redis.cli("GET", k.text)
        XCTAssertEqual(textBefore, "A1 A2 A3 A4 A5 B6 B7 B8")   // (cli output trimmed)

        // A wakes; its upstream's buffered tokens arrive (Generation: the first starts the
        // hold, the rest wait in heldUpstream); OwnerLeases.confirm asks refreshLease.
        let found = LockedBox<EventLog.LeaseRefresh?>(nil)
        h.run {
            XCTAssertTrue(a.value!.holdIfLeaseLapsed(), "A is held after its stall")
            log.refreshLease(k, instance: "test", epoch: 0) { r in
                found.value = r
                // OwnerLeases.confirm on .notRunning → Generation.ownershipConfirmed(untilMs: .max)
                guard r == .notRunning, let w = a.value else { return }
                w.leaseConfirmed(untilMs: .max)
                for i in 6...11 { w.append(seq: UInt64(i), event: .delta("ZZ\(i) ")) }
            }
        }
        try eventually(5, "A's refresh answered") { found.value != nil }
        XCTAssertEqual(found.value, .takenOver, "A's epoch (0) is stale: B (epoch 1) took the answer over; got \(String(describing: found.value))")
        // Had the hold been lifted, A's text write (5 buffered deltas) would be in by now.
        let settled = LockedBox(false)
        h.run { settled.value = true }
        try eventually(5, "A's loop turned") { settled.value }
        XCTAssertEqual(try redis.cli("GET", k.text), textBefore, "a stale owner's text write must not land on the taker's finished text")
        _ = o
    }
}
