import RelayTestKit
import XCTest
@testable import RelayClient

final class DraftProgressTests: XCTestCase {
    let nda = """
    # Mutual Non-Disclosure Agreement

    This draft has 7 clauses.

    ## Clause 1 — Definitions
    Text.

    ## Clause 2 — Obligations
    ### 2.1 Sub-point
    More text.

    ## Clause 3 — Confidentiality
    Text

    """

    func testNumberedClausesWithStatedTotal() {
        var p = DraftProgress()
        p.append(nda)
        let s = p.snapshot(tokensReceived: 1_001)
        XCTAssertEqual(s?.index, 3)
        XCTAssertEqual(s?.total, 7)
        XCTAssertEqual(s?.title, "Clause 3 — Confidentiality")
        XCTAssertEqual(s?.text, "Drafting clause 3 of 7…")
        XCTAssertEqual(p.headings.count, 5)
    }

    func testOnlyForAnswersOverOneThousandTokens() {
        var p = DraftProgress()
        p.append(nda)
        XCTAssertNil(p.snapshot(tokensReceived: 1_000))
        XCTAssertNotNil(p.snapshot(tokensReceived: 1_001))
    }

    func testWithoutTotal() {
        var p = DraftProgress()
        p.append("# Title\n\n## Scope\ntext\n## Term\ntext\n## Fees\n")
        XCTAssertEqual(p.snapshot(tokensReceived: 2_000)?.text, "Drafting clause 3…")
        XCTAssertEqual(p.snapshot(tokensReceived: 2_000)?.title, "Fees")
    }

    func testTotalFromNumberedOutlineList() {
        var p = DraftProgress()
        p.append("# Lease\n\nOutline:\n1. Parties\n2. Term\n3. Rent\n4. Deposit\n5. Signatures\n\n## Parties\n")
        XCTAssertEqual(p.snapshot(tokensReceived: 1_500)?.text, "Drafting clause 1 of 5…")
        // A numbered list inside a clause does not change the total.
        p.append("1. a\n2. b\n3. c\n4. d\n5. e\n6. f\n7. g\n## Term\n")
        XCTAssertEqual(p.snapshot(tokensReceived: 1_500)?.text, "Drafting clause 2 of 5…")
    }

    func testTotalPassedByTheAppWins() {
        var p = DraftProgress(expectedTotal: 4)
        p.append("This draft has 9 clauses.\n## Clause 1 — A\n")
        XCTAssertEqual(p.snapshot(tokensReceived: 1_500)?.total, 4)
    }

    func testTotalInWordsAndNeverBelowIndex() {
        var p = DraftProgress()
        p.append("The agreement has three sections.\n## Section 1\n## Section 2\n## Section 3\n## Section 4\n")
        XCTAssertEqual(p.snapshot(tokensReceived: 1_500)?.index, 4)
        XCTAssertEqual(p.snapshot(tokensReceived: 1_500)?.total, 4)
    }

    func testATXRules() {
        var p = DraftProgress()
        p.append("## One\n#NoSpace\n    ## indented code\n   ## Three spaces\n")
        XCTAssertEqual(p.headings.map(\.title), ["One", "Three spaces"])
    }

    func testSetextHeadings() {
        var p = DraftProgress()
        p.append("Agreement\n=========\n\nScope\n-----\ntext\n\nTerm\n---\n- item\n---\n")
        XCTAssertEqual(p.headings.map(\.title), ["Agreement", "Scope", "Term"])
        XCTAssertEqual(p.headings.map(\.level), [1, 2, 2])
        XCTAssertEqual(p.snapshot(tokensReceived: 1_001)?.index, 2)
    }

    func testNothingInsideFencedCode() {
        var p = DraftProgress()
        p.append("## Clause 1 — A\n```markdown\n## Clause 9 — Not real\nText\n---\n```\n## Clause 2 — B\n")
        XCTAssertEqual(p.headings.map(\.number), [1, 2])
        XCTAssertEqual(p.snapshot(tokensReceived: 1_001)?.index, 2)
    }

    func testHeadingSplitAcrossChunks() {
        var p = DraftProgress()
        for chunk in ["## Cla", "use 3 ", "— Conf", "identiality", "\nbody"] { p.append(chunk) }
        XCTAssertEqual(p.snapshot(tokensReceived: 1_001)?.index, 3)
        XCTAssertEqual(p.snapshot(tokensReceived: 1_001)?.title, "Clause 3 — Confidentiality")
    }

    func testHeadingOnTheLastUnterminatedLineIsFoundAtFinish() {
        var p = DraftProgress()
        p.append("## Clause 1 — A\ntext\n## Clause 2 — B")
        XCTAssertEqual(p.current?.index, 1)
        p.finish()
        XCTAssertEqual(p.current?.index, 2)
    }

    func testRandomChunkingsFindTheSameHeadings() {
        var whole = DraftProgress()
        whole.append(nda)
        var rng = SplitMix64(seed: 7)
        for _ in 0..<100 {
            var p = DraftProgress()
            for c in randomChunks(nda, using: &rng, maxLength: 5) { p.append(c) }
            XCTAssertEqual(p, whole)
        }
    }

    func testArabicClauseHeadings() {
        var p = DraftProgress()
        p.append("# اتفاقية عدم إفشاء\n\nتتكون هذه المسودة من 6 بنود.\n\n## البند ١ — التعريفات\nنص\n## البند ٢ — الالتزامات\n")
        let s = p.snapshot(tokensReceived: 1_200)
        XCTAssertEqual(s?.index, 2)
        XCTAssertEqual(s?.total, 6)
    }

    func testHeadingNumbers() {
        XCTAssertEqual(DraftProgress.headingNumber("Clause 3 — Confidentiality"), 3)
        XCTAssertEqual(DraftProgress.headingNumber("ARTICLE 12: Law"), 12)
        XCTAssertEqual(DraftProgress.headingNumber("4. Term"), 4)
        XCTAssertEqual(DraftProgress.headingNumber("5 — Fees"), 5)
        XCTAssertEqual(DraftProgress.headingNumber("المادة ٣"), 3)
        XCTAssertNil(DraftProgress.headingNumber("2024 budget"))
        XCTAssertNil(DraftProgress.headingNumber("Scope"))
    }
}
