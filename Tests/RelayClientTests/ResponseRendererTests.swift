import RelayTestKit
import XCTest
import RelayCore
@testable import RelayClient

final class ResponseRendererTests: XCTestCase {
    let usage = Usage(promptTokens: 10, completionTokens: 20)

    func testArabicDirectionIsSetOnTheFirstUpdate() {
        let clock = VirtualClock(startMs: 0)
        var r = ResponseRenderer(now: clock.nowMs())
        var updates: [RenderUpdate] = []
        for word in "مرحبا بك في هذا المشروع الذي يتضمن عدة بنود مهمة ".split(separator: " ") {
            clock.advance(by: 20)
            if let u = r.receive(.delta(word + " "), now: clock.nowMs()) { updates.append(u) }
            if let u = r.tick(now: clock.nowMs()) { updates.append(u) }
        }
        XCTAssertFalse(updates.isEmpty)
        XCTAssertEqual(updates.first?.layout?.direction, .rightToLeft)
        XCTAssertGreaterThanOrEqual(updates.first?.layout?.lineHeightMultiplier ?? 0, 1.8)
        XCTAssertGreaterThanOrEqual(updates.first?.text.count ?? 0, 30, "the first render waited for 30 characters")
        XCTAssertTrue(updates.allSatisfy { $0.layout == updates.first?.layout })
    }

    func testFirstRenderOnDoneWithShortAnswer() {
        var r = ResponseRenderer(now: 0)
        XCTAssertNil(r.receive(.delta("Yes"), now: 10))
        XCTAssertNil(r.tick(now: 500))
        let u = r.receive(.done(finishReason: "stop", usage: usage), now: 600)
        XCTAssertEqual(u?.text, "Yes")
        XCTAssertEqual(u?.layout?.direction, .leftToRight)
        XCTAssertEqual(u?.completion, .finished(finishReason: "stop"))
        XCTAssertEqual(r.usage, usage)
        XCTAssertNil(r.receive(.delta("late"), now: 700))
    }

    func testTypingIndicatorUntilFirstText() {
        var r = ResponseRenderer(now: 0)
        XCTAssertTrue(r.typing.isVisible)
        _ = r.receive(.delta("Hello there, this is a long enough start "), now: 300)
        XCTAssertTrue(r.typing.isVisible)
        let u = r.tick(now: 350)
        XCTAssertEqual(u?.showsTypingIndicator, false)
        XCTAssertFalse(r.typing.isVisible)
        XCTAssertEqual(r.firstTokenAt, 300)
    }

    func testProgressAppearsOnLongDrafts() {
        var r = ResponseRenderer(now: 0)
        var now: Int64 = 0
        var last: RenderUpdate?
        let doc = "# NDA\n\nThis draft has 7 clauses.\n\n## Clause 1 — Definitions\n" + String(repeating: "word ", count: 600)
            + "\n\n## Clause 2 — Scope\n" + String(repeating: "term ", count: 600)
        for token in doc.split(separator: " ", omittingEmptySubsequences: false) {
            now += 5
            if let u = r.receive(.delta(token + " "), now: now) { last = u }
            if let u = r.tick(now: now) { last = u }
        }
        XCTAssertGreaterThan(r.tokensReceived, 1_000)
        XCTAssertEqual(last?.progress?.text, "Drafting clause 2 of 7…")
    }

    func testErrorEventCompletesWithFailure() {
        var r = ResponseRenderer(now: 0)
        _ = r.receive(.delta("Partial ans"), now: 1)
        let u = r.receive(.error(status: 401, code: "session_revoked", message: "revoked"), now: 2)
        XCTAssertEqual(u?.text, "Partial ans")
        XCTAssertEqual(u?.completion, .failed(status: 401, code: "session_revoked", message: "revoked"))
    }

    func testCompletionWithoutPendingTextStillReported() {
        var r = ResponseRenderer(now: 0)
        let u = r.finish(.timedOut, now: 60_000)
        XCTAssertEqual(u?.completion, .timedOut)
        XCTAssertEqual(u?.appended, "")
        XCTAssertNil(r.finish(.stopped, now: 60_001))
    }

    func testBackgroundThenForegroundReplaysAndCompletes() {
        var r = ResponseRenderer(now: 0)
        r.enterBackground()
        XCTAssertNil(r.receive(.delta("Para one.\n\n"), now: 1))
        XCTAssertNil(r.tick(now: 100))
        XCTAssertNil(r.receive(.done(finishReason: "stop", usage: usage), now: 200))
        let u = r.enterForeground(now: 300)
        XCTAssertEqual(u?.text, "Para one.\n\n")
        XCTAssertEqual(u?.completion, .finished(finishReason: "stop"))
        XCTAssertEqual(u?.reason, .foreground)
    }

    /// Random chunkings of a mixed text end with the same rendered text.
    func testRenderedTextEqualsDeltasForRandomChunkings() {
        let text = "# عنوان\n\nمرحبا 👩‍💻 world.\n\n---\n```\n---\n```\n漢字漢字漢字 " + String(repeating: "مَرْحَبًا ", count: 30)
        var rng = SplitMix64(seed: 99)
        for _ in 0..<100 {
            var r = ResponseRenderer(now: 0)
            var now: Int64 = 0
            for c in randomChunks(text, using: &rng) {
                now += Int64.random(in: 0...30, using: &rng)
                _ = r.receive(.delta(c), now: now)
                _ = r.tick(now: now)
            }
            _ = r.receive(.done(finishReason: "stop", usage: usage), now: now + 1)
            XCTAssertEqual(Array(r.text.unicodeScalars), Array(text.unicodeScalars))
            XCTAssertEqual(r.layout?.direction, .rightToLeft)
        }
    }
}
