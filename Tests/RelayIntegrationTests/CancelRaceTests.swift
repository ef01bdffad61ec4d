import Foundation
import RelayAuth
import RelayBudgets
import RelayCore
import RelayTestKit
import RelayTestSupport
import XCTest

/// A Stop (`DELETE /api/chat/stream/{id}`, docs/PROTOCOL.md §7) sent through one instance a
/// random 0–6 ms after the `POST` of the same client-chosen id went to the other one — so
/// the `DELETE` often arrives before the stream exists — always stops the answer: the
/// `DELETE` is accepted (`202`), the stream ends with `done` `"cancelled"`, and the budget is
/// charged at most the prompt estimate plus the deltas sent before the cancel (§9.2).
final class CancelRaceTests: RelayTestCase {
    /// How one raced stop ended.
    enum Outcome: Equatable {
        /// `done` "cancelled" after `deltas` deltas; the DELETE said `state`.
        case stopped(state: String, deltas: Int)
        case missed(String)
    }

    func testStopRacingItsPostAcrossInstancesAlwaysStopsTheAnswerIdle() throws {
        try race(trials: 300, loadStreams: 0)
    }

    func testStopRacingItsPostAcrossInstancesAlwaysStopsTheAnswerUnderLoad() throws {
        try race(trials: 300, loadStreams: 30)
    }

    /// Runs `trials` races (8 at a time) with `loadStreams` long answers running on the
    /// instance that gets the `POST`s.
    private func race(trials: Int, loadStreams: Int) throws {
        let env = ["RELAY_SIMULATED_TOKENS_PER_SECOND": "100"]
        let a = try startRelay(env).port, b = try startRelay(env).port
        var load: [SSEConnection] = []
        for i in 0..<loadStreams {
            let c = try Chat.start(port: a, token: RelayProcess.token(sub: "load-\(i)"), maxTokens: 4000)
            XCTAssertEqual(c.status, 200)
            _ = try c.nextEvent()
            load.append(c)
        }
        defer { for c in load { c.close() } }
        let period = BudgetPolicy.period(now: Int64(Date().timeIntervalSince1970))
        let results = LockedBox([String: Int]())
        let misses = LockedBox([String]())
        let overcharges = LockedBox([String]())
        let seed = UInt64(Date().timeIntervalSince1970)
        print("cancel race seed \(seed)")
        let t0 = Date()
        let redis: RedisServer = self.redis
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            var rng = SplitMix64(seed: seed &+ UInt64(worker))
            for trial in stride(from: worker, to: trials, by: 8) {
                let sub = "stopper-\(trial)-\(UUID().uuidString.prefix(6))"
                let token = RelayProcess.token(sub: sub)
                let id = Chat.newID()
                let offsetUs = UInt32(rng.next() % 6_001)
                let group = DispatchGroup()
                let raced = LockedBox<SSEConnection?>(nil)
                DispatchQueue.global().async(group: group) {
                    let c = try? Chat.start(port: a, token: token, requestID: id, maxTokens: 1000)
                    raced.mutate { $0 = c }
                }
                usleep(offsetUs)   // pacing on purpose: the DELETE leaves a random 0–6 ms after the POST
                let stop = try? HTTPClient.request(port: b, method: "DELETE", path: "/api/chat/stream/\(id)",
                                                   headers: [("Authorization", "Bearer \(token)")])
                group.wait()
                let o = Self.outcome(stop, raced.value)
                raced.value?.close()
                switch o {
                case .missed(let why):
                    results.mutate { $0["MISSED", default: 0] += 1 }
                    misses.mutate { $0.append("trial \(trial) (offset \(offsetUs) µs): \(why)") }
                case .stopped(let state, let deltas):
                    results.mutate { $0["stopped, DELETE found \(state)", default: 0] += 1 }
                    // The settlement (§9.2) is written when the generation ends.
                    let scoped = "\(OwnerHash.of(sub)):\(id)"
                    let budget = "relay:budget:{u:\(OwnerHash.of(sub))}:\(period)"
                    var charged: Int?
                    let deadline = Date().addingTimeInterval(5)
                    while charged == nil && Date() < deadline {
                        charged = Int((try? redis.cli("HGET", budget, "s:\(scoped)")) ?? "")
                        if charged == nil { usleep(20_000) }
                    }
                    let prompt = Int((try? redis.cli("HGET", "relay:{\(scoped)}:meta", "prompt")) ?? "") ?? 0
                    if charged == nil || charged! > prompt + deltas || prompt == 0 {
                        overcharges.mutate { $0.append("trial \(trial): charged \(charged.map(String.init) ?? "nothing settled"), prompt estimate \(prompt), \(deltas) deltas") }
                    }
                }
            }
        }
        let elapsed = Date().timeIntervalSince(t0)
        print("cancel race (\(loadStreams) streams of load) over \(trials) trials in \(String(format: "%.1f", elapsed)) s: \(results.value.sorted { $0.key < $1.key })")
        XCTAssertEqual(misses.value, [], "every raced stop was accepted and ended its stream with done cancelled")
        XCTAssertEqual(overcharges.value, [], "each stopped answer is charged at most its prompt estimate plus the deltas sent")
        XCTAssertEqual(results.value.values.reduce(0, +), trials)
    }

    /// The `DELETE` must be accepted, and the stream must end with `done` "cancelled"
    /// within 5 s (an answer not stopped runs ~10 s at 100 tokens/s).
    static func outcome(_ stop: HTTPResponse?, _ c: SSEConnection?) -> Outcome {
        guard let stop else { return .missed("DELETE not answered") }
        guard stop.status == 202 else { return .missed("DELETE answered \(stop.status) \(stop.errorCode ?? "")") }
        let state = ((try? JSONSerialization.jsonObject(with: Data(stop.body))) as? [String: Any])?["state"] as? String ?? "?"
        guard let c else { return .missed("POST not answered") }
        guard c.status == 200 else { return .missed("POST answered \(c.status)") }
        var deltas = 0
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline, let e = try? c.nextEvent(timeout: 5) {
            if e.data.hasPrefix("{\"type\":\"delta\"") { deltas += 1; continue }
            if e.data.hasPrefix("{\"type\":\"done\""), e.data.contains("\"finish_reason\":\"cancelled\"") {
                return .stopped(state: state, deltas: deltas)
            }
            return .missed("ended with \(e.data) after \(deltas) deltas (DELETE found \(state))")
        }
        return .missed("still running 5 s after the DELETE was accepted (\(deltas) deltas, DELETE found \(state))")
    }
}
