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

    // MARK: - Typed parts (docs/PROTOCOL.md §5.5): the render rules are for the text only

    func testPartsReleaseNothingAndAreNotSampledForTheDirection() {
        var r = ResponseRenderer(now: 0)
        XCTAssertNil(r.receive(.part(.reasoning("يسأل المستخدم عن الطقس في الرياض اليوم بالتفصيل.\n\n")), now: 10),
                     "a paragraph break in reasoning flushes nothing")
        XCTAssertNil(r.receive(.part(.toolCallStart(id: "call_1", name: "get_weather")), now: 20))
        XCTAssertNil(r.receive(.part(.toolCallDelta(id: "call_1", arguments: "{\n\n\"city\": \"Riyadh\"}")), now: 30))
        XCTAssertNil(r.tick(now: 100))
        XCTAssertTrue(r.typing.isVisible, "parts do not hide the typing indicator")
        XCTAssertNil(r.firstTokenAt, "the first token is the first delta")
        XCTAssertNil(r.receive(.delta("The weather "), now: 110))
        XCTAssertNil(r.receive(.part(.source(id: "s1", url: "https://example.com", title: "Weather")), now: 120))
        let u = r.receive(.done(finishReason: "stop", usage: usage), now: 130)
        XCTAssertEqual(u?.text, "The weather ")
        XCTAssertEqual(u?.layout?.direction, .leftToRight, "the Arabic reasoning is not in the sample")
        XCTAssertEqual(r.firstTokenAt, 110)
        XCTAssertEqual(r.tokensReceived, 1, "deltas only")
        XCTAssertEqual(r.partTokensReceived, 2, "the reasoning piece and the argument piece")
    }

    /// A short text after long reasoning: the `done`'s completion tokens count the reasoning,
    /// the draft progress (shown over 1,000 text tokens) must not.
    func testPartTokensAreLeftOutOfTheDraftProgress() {
        let doc = "# NDA\n\nThis draft has 7 clauses.\n\n## Clause 1 — Definitions\n" + String(repeating: "word ", count: 300)
        func render(reasoningPieces: Int) -> RenderUpdate? {
            var r = ResponseRenderer(now: 0)
            for _ in 0..<reasoningPieces { _ = r.receive(.part(.reasoning("thinking ")), now: 1) }
            let deltas = doc.split(separator: " ", omittingEmptySubsequences: false).map { String($0) + " " }
            for d in deltas { _ = r.receive(.delta(d), now: 2) }
            let completion = deltas.count + reasoningPieces
            return r.receive(.done(finishReason: "stop", usage: Usage(promptTokens: 1, completionTokens: completion)), now: 3)
        }
        XCTAssertNil(render(reasoningPieces: 1_500)?.progress, "about 320 text tokens: no progress")
        XCTAssertNil(render(reasoningPieces: 0)?.progress)
        var coalesced = ResponseRenderer(now: 0)
        _ = coalesced.receive(.delta(doc), now: 1)
        let u = coalesced.receive(.done(finishReason: "stop", usage: Usage(promptTokens: 1, completionTokens: 1_200)), now: 2)
        XCTAssertEqual(u?.progress?.text, "Drafting clause 1 of 7…", "a coalesced delta's tokens are read from the usage")
    }
}
