import Foundation
import XCTest
import RelayCore
@testable import RelayClient

/// Runs the language-neutral client-rule vectors in `conformance/` against
/// RelayClient, exactly as `clients/js/test/conformance.test.js` runs them against the
/// JavaScript kit, so the two kits cannot drift. Each failing case is reported as
/// `conformance <file>: <case name>: …`. The vectors' formats are in `conformance/README.md`.
final class ConformanceTests: XCTestCase {
    /// The repository root: the directory above `Tests/` holding `conformance/`, found from this file.
    static let conformanceDirectory: URL = {
        var dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while dir.path != "/" {
            let c = dir.appendingPathComponent("conformance")
            if FileManager.default.fileExists(atPath: c.appendingPathComponent("sse.json").path) { return c }
            dir = dir.deletingLastPathComponent()
        }
        fatalError("conformance/ not found above \(#filePath)")
    }()

    /// The `cases` array of a vector file.
    private func cases(_ file: String) throws -> [[String: Any]] { try Self.cases(file) }

    /// The `cases` array of a vector file (also read by `PartsConformanceTests`).
    static func cases(_ file: String) throws -> [[String: Any]] {
        let data = try Data(contentsOf: conformanceDirectory.appendingPathComponent(file))
        let obj = try XCTUnwrap(try JSONSerialization.jsonObject(with: data) as? [String: Any], "\(file): not a JSON object")
        let list = try XCTUnwrap(obj["cases"] as? [[String: Any]], "\(file): no cases")
        XCTAssertFalse(list.isEmpty, "\(file): empty")
        return list
    }

    private func fail(_ file: String, _ c: [String: Any], _ message: String) {
        XCTFail("conformance \(file): \(c["name"] as? String ?? "?"): \(message)")
    }

    // MARK: - SSE

    private struct SSEOutcome: Equatable {
        var items: [SSEParser.Item]
        var lastEventId: String
        var retry: Int?
    }

    private func sseBytes(_ c: [String: Any]) -> [UInt8] {
        if let hex = c["inputHex"] as? String {
            var out: [UInt8] = []
            var i = hex.startIndex
            while i < hex.endIndex {
                let j = hex.index(i, offsetBy: 2)
                out.append(UInt8(hex[i..<j], radix: 16)!)
                i = j
            }
            return out
        }
        return Array((c["input"] as? String ?? "").utf8)
    }

    private func sseExpected(_ c: [String: Any]) -> SSEOutcome {
        let e = c["expect"] as? [String: Any] ?? [:]
        let items: [SSEParser.Item] = (e["items"] as? [[String: Any]] ?? []).map { item in
            if let ev = item["event"] as? [String: String] {
                return .event(SSEMessage(type: ev["type"] ?? "", data: ev["data"] ?? "", lastEventId: ev["id"] ?? ""))
            }
            return .comment(item["comment"] as? String ?? "")
        }
        return SSEOutcome(items: items, lastEventId: e["lastEventId"] as? String ?? "", retry: (e["retry"] as? NSNumber)?.intValue)
    }

    /// Every case fed whole, byte by byte, and split in two at every byte boundary; then finish().
    func testSSEVectors() throws {
        for c in try cases("sse.json") {
            let bytes = sseBytes(c)
            let want = sseExpected(c)
            var plans: [(String, [ArraySlice<UInt8>])] = [("whole", [bytes[...]]), ("byte by byte", bytes.indices.map { bytes[$0..<$0 + 1] })]
            for k in 0...bytes.count { plans.append(("split at \(k)", [bytes[..<k], bytes[k...]])) }
            for (name, chunks) in plans {
                var p = SSEParser()
                var items: [SSEParser.Item] = []
                do {
                    for ch in chunks { items += try p.feed(Array(ch)) }
                } catch {
                    fail("sse.json", c, "\(name): threw \(error)")
                    break
                }
                let tail = p.finish()
                let got = SSEOutcome(items: items + tail, lastEventId: p.lastEventId, retry: p.retry)
                if got != want {
                    fail("sse.json", c, "\(name): got \(got), want \(want)")
                    break
                }
            }
        }
    }

    // MARK: - Render buffer timelines

    private func reasonName(_ r: RenderBuffer.Reason?) -> String { r?.rawValue ?? "nil" }

    private func directionName(_ d: TextDirection) -> String { d == .rightToLeft ? "rtl" : "ltr" }

    func testRenderTimelines() throws {
        for c in try cases("render.json") {
            var r = ResponseRenderer(now: 0)
            var flushes: [[String: String]] = []
            var direction: String?
            var problems: [String] = []
            var last: RenderUpdate?
            func record(_ at: Int64, _ u: RenderUpdate?) {
                if let u { last = u }
                guard let u, !u.appended.isEmpty else { return }
                if let l = u.layout {
                    if direction == nil { direction = directionName(l.direction) }
                } else {
                    problems.append("text released at \(at) ms without a layout")
                }
                flushes.append(["at": String(at), "text": u.appended, "reason": reasonName(u.reason)])
            }
            for s in c["steps"] as? [[String: Any]] ?? [] {
                let at = (s["at"] as? NSNumber)?.int64Value ?? 0
                if let d = s["delta"] as? String {
                    record(at, r.receive(.delta(d), now: at))
                } else if s["tick"] as? Bool == true {
                    record(at, r.tick(now: at))
                } else if s["background"] as? Bool == true {
                    r.enterBackground()
                } else if s["foreground"] as? Bool == true {
                    record(at, r.enterForeground(now: at))
                } else if let reason = s["done"] as? String {
                    record(at, r.receive(.done(finishReason: FinishReason(rawValue: reason), usage: Usage(promptTokens: 0, completionTokens: 0)), now: at))
                } else if let json = s["event"] as? String {
                    do {
                        record(at, try r.receive(json: Data(json.utf8), now: at))
                    } catch {
                        problems.append("event at \(at) ms not decoded: \(error)")
                    }
                }
            }
            let expect = c["expect"] as? [String: Any] ?? [:]
            let want: [[String: String]] = (expect["flushes"] as? [[String: Any]] ?? []).map {
                ["at": String(($0["at"] as? NSNumber)?.int64Value ?? -1), "text": $0["text"] as? String ?? "", "reason": $0["reason"] as? String ?? ""]
            }
            if flushes != want { problems.append("flushes \(flushes), want \(want)") }
            if direction != expect["direction"] as? String {
                problems.append("direction \(direction ?? "none"), want \(expect["direction"] as? String ?? "?")")
            }
            if let want = expect["completion"] {
                let got: AnyHashable? = last?.completion.map { AnyHashable(completionShape($0)) }
                if got != normalized(want) { problems.append("completion \(got.map { "\($0)" } ?? "none"), want \(want)") }
            }
            if let want = expect["budgetLimited"] as? Bool, last?.budgetLimited != want {
                problems.append("budgetLimited \(last?.budgetLimited.description ?? "no update"), want \(want)")
            }
            if !problems.isEmpty { fail("render.json", c, problems.joined(separator: "; ")) }
        }
    }

    /// A completion in the vectors' shape: `{kind, finishReason | status, code}` (numbers
    /// as Int64, as `normalized` gives the vector's; the message is not compared).
    private func completionShape(_ c: Completion) -> [String: AnyHashable] {
        switch c {
        case .finished(let reason): return ["kind": "finished", "finishReason": reason]
        case .stopped: return ["kind": "stopped"]
        case .timedOut: return ["kind": "timedOut"]
        case .needsResume: return ["kind": "needsResume"]
        case .failed(let status, let code, _): return ["kind": "failed", "status": Int64(status), "code": code.rawValue]
        }
    }

    // MARK: - Right-to-left decision

    /// Feeds the deltas to a ResponseRenderer, 100 ms apart, with a 50 ms tick after each:
    /// no text may be released before the delta that completes the sample
    /// (`decidedAfterDelta`), and the layout of the first released text — or, when none
    /// is released before the end, the layout at `done` — must be the expected one.
    /// The budget pill's text for each remaining count and period.
    func testBudgetPills() throws {
        for c in try cases("budget.json") {
            let remaining = (c["remaining"] as? NSNumber)?.intValue ?? -1
            let b = BudgetState(tier: "", limit: max(remaining, 1) * 2, used: max(remaining, 1) * 2 - remaining,
                                remaining: remaining, period: c["period"] as? String ?? "")
            XCTAssertEqual(b.pillText, c["pill"] as? String, "budget.json: \(c["name"] ?? "")")
        }
    }

    func testRTLDecisions() throws {
        for c in try cases("rtl.json") {
            let deltas = c["deltas"] as? [String] ?? []
            let expect = c["expect"] as? [String: Any] ?? [:]
            let decidedAfter = (expect["decidedAfterDelta"] as? NSNumber)?.intValue
            var r = ResponseRenderer(now: 0)
            var firstRelease: (index: Int, layout: TextLayout?)?
            for (i, d) in deltas.enumerated() {
                let t = Int64(i) * 100
                for u in [r.receive(.delta(d), now: t), r.tick(now: t + 50)] {
                    if let u, !u.appended.isEmpty, firstRelease == nil { firstRelease = (i, u.layout) }
                }
            }
            let end = r.receive(.done(finishReason: "stop", usage: Usage(promptTokens: 0, completionTokens: 0)), now: Int64(deltas.count) * 100)
            var problems: [String] = []
            if let f = firstRelease {
                if f.index < (decidedAfter ?? Int.max) {
                    problems.append("text released after delta \(f.index), before the decision (after delta \(decidedAfter.map(String.init) ?? "done"))")
                }
            }
            let layout = firstRelease.map { $0.layout } ?? end?.layout ?? r.layout
            guard let layout else {
                fail("rtl.json", c, (problems + ["no layout decided (want \(expect["direction"] ?? "?"))"]).joined(separator: "; "))
                continue
            }
            if directionName(layout.direction) != expect["direction"] as? String {
                problems.append("direction \(directionName(layout.direction)), want \(expect["direction"] ?? "?")")
            }
            if layout.isArabic != (expect["isArabic"] as? Bool) { problems.append("isArabic \(layout.isArabic)") }
            if abs(layout.lineHeightMultiplier - ((expect["lineHeight"] as? NSNumber)?.doubleValue ?? 0)) > 1e-9 {
                problems.append("lineHeight \(layout.lineHeightMultiplier), want \(expect["lineHeight"] ?? "?")")
            }
            if !problems.isEmpty { fail("rtl.json", c, problems.joined(separator: "; ")) }
        }
    }

    // MARK: - Reconnect decision tables

    /// The Swift action in the vectors' shape (`refreshToken` is compared only when the
    /// vector names it).
    private func actionShape(_ a: ReconnectPolicy.Action, refreshToken: Bool, expect: [String: Any]) -> [String: AnyHashable] {
        switch a {
        case .none: return ["action": "none"]
        case .sendRequest: return ["action": "sendRequest"]
        case .stop: return ["action": "stop"]
        case .wait(let until): return ["action": "wait", "until": until]
        case .reconnect(let last):
            var d: [String: AnyHashable] = ["action": "reconnect", "lastEventId": Int64(last)]
            if expect["refreshToken"] != nil { d["refreshToken"] = refreshToken }
            return d
        case .finish(let c):
            return ["action": "finish", "completion": completionShape(c)]
        }
    }

    /// The vector's expected action with numbers as Int64 (and `refreshToken` as Bool), for comparison.
    private func normalized(_ v: Any, key: String = "") -> AnyHashable {
        switch v {
        case let d as [String: Any]:
            var out: [String: AnyHashable] = [:]
            for (k, x) in d { out[k] = normalized(x, key: k) }
            return out
        case let s as String: return s
        case let n as NSNumber: return key == "refreshToken" ? AnyHashable(n.boolValue) : AnyHashable(n.int64Value)
        default: return "\(v)"
        }
    }

    func testReconnectTables() throws {
        for c in try cases("reconnect.json") {
            var p = ReconnectPolicy(backoffMs: 1000)
            // The vectors' random source, a fixed draw in [0, 1); the policy turns it into the waits
            // (conformance/CLIENT_RULES.md "Reconnect decisions").
            let random = (c["random"] as? NSNumber)?.doubleValue ?? 0
            for (i, s) in (c["steps"] as? [[String: Any]] ?? []).enumerated() {
                let at = (s["at"] as? NSNumber)?.int64Value ?? 0
                let input = s["input"] as? String ?? ""
                var a: ReconnectPolicy.Action
                switch input {
                case "start": a = p.start(now: at)
                case "rtt":
                    p.backoffMs = NetworkAdvice(NetworkConditions(rttMs: (s["rttMs"] as? NSNumber)?.doubleValue)).reconnectBackoffMs
                    a = .none
                case "response":
                    let status = (s["status"] as? NSNumber)?.intValue ?? 0
                    let err = (s["code"] as? String).map { APIError(status: status, code: ErrorCode(rawValue: $0), message: "") }
                    let retryAfter = (s["retryAfter"] as? NSNumber).map { $0.int64Value * 1000 }
                    a = p.responseOpened(status: status, contentType: s["contentType"] as? String, error: err,
                                         retryAfterMs: retryAfter, random: random, now: at)
                case "event":
                    let json = try JSONSerialization.data(withJSONObject: s["event"] ?? [:])
                    let ev = try? StreamEvent(json: String(decoding: json, as: UTF8.self))
                    a = p.eventReceived(seq: (s["seq"] as? NSNumber)?.uint64Value, event: ev, random: random, now: at)
                case "pollSent":
                    p.pollSent(now: at)
                    a = .none
                case "pollResponse":
                    let status = (s["status"] as? NSNumber)?.intValue ?? 0
                    let err = (s["code"] as? String).map { APIError(status: status, code: ErrorCode(rawValue: $0), message: "") }
                    a = p.pollOpened(status: status, contentType: s["contentType"] as? String, closed: s["closed"] as? Bool ?? false,
                                     error: err, retryAfterMs: (s["retryAfter"] as? NSNumber).map { $0.int64Value * 1000 },
                                     random: random, now: at)
                case "drop": a = p.connectionLost(random: random, now: at)
                case "tick": a = p.tick(now: at)
                case "background":
                    p.enterBackground(now: at)
                    a = .none
                case "foreground": a = p.enterForeground(now: at)
                case "stop": a = p.stop(now: at)
                case "resume": a = p.resume(now: at)
                default:
                    fail("reconnect.json", c, "unknown input \(input)")
                    a = .none
                }
                // `refreshToken`: whether the provider must be asked first (freshTokenNeeded).
                var refresh = false
                if case .reconnect = a {
                    refresh = p.freshTokenNeeded
                    if refresh { p.freshTokenFetched() }
                }
                let want = s["expect"] as? [String: Any] ?? [:]
                let got = AnyHashable(actionShape(a, refreshToken: refresh, expect: want))
                if got != normalized(want) {
                    fail("reconnect.json", c, "step \(i) (\(input) at \(at) ms): got \(got), want \(normalized(want))")
                    break
                }
            }
        }
    }

    // MARK: - Buffering proxies

    func testBufferingDecisions() throws {
        for c in try cases("buffering.json") {
            let num = { (v: Any?) -> Int64? in (v as? NSNumber)?.int64Value }
            var d = ProxyBufferingDetector(sentAt: num(c["sent"]) ?? 0)
            var got: [String: AnyHashable] = ["decision": "sse", "at": NSNull(), "reason": NSNull()]
            func note(_ v: ProxyBufferingDetector.Verdict, _ at: Int64) {
                if case .longPoll(let r) = v, got["decision"] == AnyHashable("sse") {
                    got = ["decision": "longPoll", "at": at, "reason": r.rawValue]
                }
            }
            func due(_ t: Int64?) {
                if let dl = d.deadline, t == nil || dl <= t! { note(d.tick(now: dl), dl) }
            }
            d.headers(at: num(c["headers"]) ?? 0)
            for r in c["reads"] as? [[String: Any]] ?? [] {
                let at = num(r["at"]) ?? 0
                due(at)
                note(d.read(at: at, bytes: Int(num(r["bytes"]) ?? 0), events: Int(num(r["events"]) ?? 0),
                            terminal: r["terminal"] as? Bool ?? false), at)
            }
            if let end = num(c["end"]) {
                due(end)
                note(d.ended(at: end), end)
            }
            due(nil)
            let e = c["expect"] as? [String: Any] ?? [:]
            let want: [String: AnyHashable] = ["decision": e["decision"] as? String ?? "?",
                                               "at": num(e["at"]).map { AnyHashable($0) } ?? AnyHashable(NSNull()),
                                               "reason": (e["reason"] as? String).map { AnyHashable($0) } ?? AnyHashable(NSNull())]
            if got != want { fail("buffering.json", c, "got \(got), want \(want)") }
        }
    }
}
