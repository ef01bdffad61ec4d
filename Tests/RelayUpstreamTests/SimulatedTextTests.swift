import Foundation
import XCTest
@testable import RelayUpstream

/// The simulated upstream's documents and tokenizer.
final class SimulatedTextTests: XCTestCase {
    private let tricky: [String] = [
        "",
        " ",
        "   ",
        "a",
        "Hello, world!",
        "The Party's \"Confidential Information\" isn't theirs.",
        "family 👩‍👩‍👧‍👦 and flags 🇸🇦🇬🇧 and 👍🏽 skin tone",
        "👩‍💻👨‍👩‍👧",
        "combining e\u{301}t\u{301}e\u{301} and a\u{308}\u{304} stacked, \u{301} leading mark",
        "\u{301}starts with a mark",
        "line one\r\nline two\r\n\r\n  indented\r\n",
        "bare CR\rand LF\n\n\nand tabs\t\tend",
        "trailing spaces   ",
        "   leading spaces",
        "## Clause 3 — Obligations\n\n---\n\n- item **bold**.\n",
        "numbers 1234567 and ٢٠٢٥ and 3.14159 and (30)",
        "Supercalifragilisticexpialidocious antidisestablishmentarianism",
        "سِرِّيَّة المعلومات، «الطرف الأول»؛ حُرِّرت ١٠ بنود؟",
        "mixed عربي and English\u{200F} with RLM\u{00A0}and NBSP",
        "\u{2028}line separator\u{2029}paragraph separator",
        "ascii ~!@#$%^&*()_+-={}[]|\\:;\"'<>,.?/ all",
        "Zalgo: Z\u{36B}\u{303}\u{344}a\u{30E}\u{346}l\u{35B}g\u{352}o\u{31A}",
    ]

    // MARK: - Invariants

    func testJoinInvariantOnDocuments() {
        for doc in [SimulatedDocuments.englishNDA, SimulatedDocuments.arabicLegal] {
            let tokens = SimulatedTokenizer.tokens(doc)
            XCTAssertEqual(tokens.joined(), doc)
            XCTAssertFalse(tokens.contains(where: \.isEmpty))
        }
    }

    func testJoinInvariantOnTrickyStrings() {
        for text in tricky {
            let tokens = SimulatedTokenizer.tokens(text)
            XCTAssertEqual(tokens.joined(), text, "join mismatch for \(text.debugDescription)")
            XCTAssertFalse(tokens.contains(where: \.isEmpty), "empty token for \(text.debugDescription)")
            XCTAssertEqual(SimulatedTokenizer.estimateTokens(text), tokens.count)
        }
        XCTAssertEqual(SimulatedTokenizer.tokens(""), [])
        XCTAssertEqual(SimulatedTokenizer.estimateTokens(""), 0)
    }

    func testGraphemeClustersAreNeverSplit() {
        for text in tricky + [SimulatedDocuments.arabicLegal] {
            let tokens = SimulatedTokenizer.tokens(text)
            // Tokenizing token by token must give the same characters as the whole:
            // a cut inside a cluster would change the Character count.
            XCTAssertEqual(tokens.reduce(0) { $0 + $1.count }, text.count, "\(text.debugDescription)")
        }
        let family = "👩‍👩‍👧‍👦"
        XCTAssertTrue(SimulatedTokenizer.tokens("a \(family) b").contains(" \(family)"))
        let crlf = SimulatedTokenizer.tokens("x\r\ny")
        XCTAssertEqual(crlf, ["x", "\r\n", "y"])
        let voweled = "سِرِّيَّة"
        XCTAssertEqual(SimulatedTokenizer.tokens(voweled).joined(), voweled)
        XCTAssertTrue(SimulatedTokenizer.tokens("e\u{301}").allSatisfy { $0.unicodeScalars.first != "\u{301}" })
    }

    func testLLMLikeShape() {
        XCTAssertEqual(SimulatedTokenizer.tokens("## Clause 3 — Definitions"),
                       ["##", " Clause", " 3", " —", " Defini", "tions"])
        XCTAssertEqual(SimulatedTokenizer.tokens("the Party's rights"),
                       ["the", " Party", "'s", " rights"])
        XCTAssertEqual(SimulatedTokenizer.tokens("end.\n\n---\n"), ["end", ".", "\n\n", "---", "\n"])
        XCTAssertEqual(SimulatedTokenizer.tokens("a  b"), ["a", " ", " b"])
        XCTAssertEqual(SimulatedTokenizer.tokens("x\n  - y"), ["x", "\n", " ", " -", " y"])
        // Long words are cut into pieces of a few characters.
        for token in SimulatedTokenizer.tokens("confidentiality antidisestablishmentarianism") {
            XCTAssertLessThanOrEqual(token.trimmingCharacters(in: .whitespaces).count, 8, token)
        }
    }

    func testDeterminism() {
        for doc in [SimulatedDocuments.englishNDA, SimulatedDocuments.arabicLegal] + tricky {
            XCTAssertEqual(SimulatedTokenizer.tokens(doc), SimulatedTokenizer.tokens(doc))
        }
    }

    func testAverageTokenLength() {
        for doc in [SimulatedDocuments.englishNDA, SimulatedDocuments.arabicLegal] {
            let tokens = SimulatedTokenizer.tokens(doc)
            let average = Double(doc.count) / Double(tokens.count)
            XCTAssertGreaterThanOrEqual(average, 2, "average \(average)")
            XCTAssertLessThanOrEqual(average, 6, "average \(average)")
        }
    }

    func testEstimateMatchesTokenCount() {
        for doc in [SimulatedDocuments.englishNDA, SimulatedDocuments.arabicLegal] {
            XCTAssertEqual(SimulatedTokenizer.estimateTokens(doc), SimulatedTokenizer.tokens(doc).count)
        }
    }

    func testTokenizingTheEnglishDocumentIsFast() {
        let doc = SimulatedDocuments.englishNDA
        _ = SimulatedTokenizer.tokens(doc)
        let start = Date()
        let tokens = SimulatedTokenizer.tokens(doc)
        let elapsedMs = Date().timeIntervalSince(start) * 1000
        print("SimulatedTokenizer: English \(tokens.count) tokens in \(String(format: "%.2f", elapsedMs)) ms, Arabic \(SimulatedTokenizer.tokens(SimulatedDocuments.arabicLegal).count) tokens")
        // Not a speed target (those are never asserted): a guard against a pathological
        // (quadratic) tokenizer, which takes seconds here; typically a few ms, so the
        // bound holds on a loaded 2-core machine.
        XCTAssertLessThan(elapsedMs, 2_000)
    }

    // MARK: - English document

    func testEnglishTokenCountRange() {
        let count = SimulatedTokenizer.tokens(SimulatedDocuments.englishNDA).count
        XCTAssertGreaterThanOrEqual(count, 2_900)
        XCTAssertLessThanOrEqual(count, 3_400)
    }

    func testEnglishClausesMatchOutline() throws {
        let doc = SimulatedDocuments.englishNDA
        XCTAssertTrue(doc.hasPrefix("# "), "begins with a title")
        let lines = doc.components(separatedBy: "\n")
        // Outline: "This draft has N clauses:" then "1. Title" … "N. Title".
        let outlineLine = try XCTUnwrap(lines.first { $0.hasPrefix("This draft has ") })
        let n = try XCTUnwrap(Int(outlineLine.dropFirst("This draft has ".count).prefix { $0.isNumber }))
        XCTAssertTrue(outlineLine.hasSuffix("\(n) clauses:"))
        XCTAssertGreaterThanOrEqual(n, 5)

        let outlineStart = try XCTUnwrap(lines.firstIndex(of: outlineLine))
        let outlineTitles = lines[(outlineStart + 1)...].drop { $0.isEmpty }.prefix(n).map { line -> String in
            let parts = line.split(separator: ".", maxSplits: 1)
            return parts.count == 2 ? parts[1].trimmingCharacters(in: .whitespaces) : ""
        }
        for (i, line) in lines[(outlineStart + 1)...].drop(while: { $0.isEmpty }).prefix(n).enumerated() {
            XCTAssertTrue(line.hasPrefix("\(i + 1). "), "outline item \(i + 1): \(line)")
        }

        let headings = lines.filter { $0.hasPrefix("## ") }
        XCTAssertEqual(headings.count, n)
        for (i, heading) in headings.enumerated() {
            XCTAssertEqual(heading, "## Clause \(i + 1) \u{2014} \(outlineTitles[i])")
        }
        // Headings appear in order in the text.
        var cursor = doc.startIndex
        for i in 1...n {
            let range = try XCTUnwrap(doc.range(of: "## Clause \(i) \u{2014} ", range: cursor..<doc.endIndex), "clause \(i)")
            cursor = range.upperBound
        }
    }

    func testEnglishFormatting() {
        let doc = SimulatedDocuments.englishNDA
        let lines = doc.components(separatedBy: "\n")
        XCTAssertTrue(lines.contains("---"), "has a --- section break line")
        XCTAssertTrue(doc.contains("\n\n"), "paragraphs separated by blank lines")
        XCTAssertTrue(lines.contains { $0.hasPrefix("- ") }, "has a bulleted list")
        XCTAssertTrue(doc.contains("**"), "has bold")
        for curly in ["\u{2018}", "\u{2019}", "\u{201C}", "\u{201D}"] {
            XCTAssertFalse(doc.contains(curly), "straight quotes only")
        }
        XCTAssertFalse(doc.contains("\r"))
        XCTAssertFalse(lines.contains { $0.hasPrefix("    ") }, "no stray indentation from the literal")
    }

    // MARK: - Arabic document

    func testArabicDocument() {
        let doc = SimulatedDocuments.arabicLegal
        let first = doc.unicodeScalars.first!
        XCTAssertTrue((0x0600...0x06FF).contains(first.value) && first.properties.isAlphabetic,
                      "begins with an Arabic letter")
        let lines = doc.components(separatedBy: "\n")
        XCTAssertTrue(lines.contains("---"))
        XCTAssertTrue(lines.contains { $0.hasPrefix("## ") })
        let tashkeel = (0x064B...0x0652).compactMap(Unicode.Scalar.init)
        XCTAssertTrue(doc.unicodeScalars.contains { tashkeel.contains($0) }, "has diacritics")
        let arabicIndicDigits = (0x0660...0x0669).compactMap(Unicode.Scalar.init)
        XCTAssertTrue(doc.unicodeScalars.contains { arabicIndicDigits.contains($0) }, "has Arabic-Indic digits")
        let count = SimulatedTokenizer.tokens(doc).count
        XCTAssertGreaterThanOrEqual(count, 800)
        XCTAssertLessThanOrEqual(count, 1_500)
    }

    // MARK: - Model selection

    func testDocumentForModel() {
        XCTAssertEqual(SimulatedDocuments.document(forModel: nil), SimulatedDocuments.englishNDA)
        XCTAssertEqual(SimulatedDocuments.document(forModel: "simulated"), SimulatedDocuments.englishNDA)
        XCTAssertEqual(SimulatedDocuments.document(forModel: "simulated-ar"), SimulatedDocuments.arabicLegal)
        XCTAssertNil(SimulatedDocuments.document(forModel: "simulated-bench"))
        XCTAssertNil(SimulatedDocuments.document(forModel: "gpt-4o"))
        XCTAssertNil(SimulatedDocuments.document(forModel: ""))
    }
}
