/// Progress of a long draft from its Markdown headings: "Drafting
/// clause 3 of 7…", or "Drafting clause 3…" while the total is unknown.
///
/// * Headings: ATX (`## Title`, 1–6 `#` then a space, ≤3 spaces of indent, CommonMark
///   §4.2) and setext (a paragraph line underlined by `===` or `---`, §4.3). Lines in
///   fenced code are never headings. Lines are assembled across chunks first, so a
///   heading split over several deltas is still found (once its line ends).
/// * Clause headings: a first level-1 heading without a number is the document title
///   and is not counted. The first other heading sets the clause level; headings at
///   that level or shallower are clauses, deeper ones (sub-clauses) are not.
/// * Index: the number in the heading when it has one (`Clause 3 — …`, `Article 3`,
///   `Section 3`, `3. …`, `البند 3`, `المادة ٣`), else the ordinal among clauses.
/// * Total: the count the app passes in; else an outline before the first clause —
///   a sentence like "This draft has 9 clauses" or a numbered list (its largest number).
/// * Shown only for answers over 1,000 tokens (`longAnswerTokens`); one delta event
///   is one token on the relay's wire.
public struct DraftProgress: Sendable, Equatable {
    /// One heading found in the answer.
    public struct Heading: Sendable, Equatable {
        /// 1–6 (setext: 1 for `===`, 2 for `---`).
        public var level: Int
        /// The heading text without markers.
        public var title: String
        /// The number it carries (`Clause 3` → 3), if any.
        public var number: Int?
    }

    /// What the UI shows.
    public struct Snapshot: Sendable, Equatable {
        /// 1-based index of the clause being drafted.
        public var index: Int
        /// Its heading text.
        public var title: String
        /// Number of clauses, when known.
        public var total: Int?
        /// "Drafting clause 3 of 7…" / "Drafting clause 3…" (U+2026 ellipsis).
        public var text: String
    }

    /// Answers must be longer than this many tokens to show progress.
    public static let longAnswerTokens = 1_000

    /// All headings found so far, title included.
    public private(set) var headings: [Heading] = []
    /// The clause being drafted (index and title), whatever the answer's length.
    public var current: (index: Int, title: String)? { currentIndex.map { ($0, currentTitle) } }
    /// The total from the app, from a stated count, or from the outline.
    public var total: Int? {
        let t = expectedTotal ?? statedTotal ?? (outlineMax >= 2 ? outlineMax : nil)
        guard let t else { return nil }
        return max(t, currentIndex ?? 0)
    }

    private let expectedTotal: Int?
    private let noun: String
    private var scanner = MarkdownLineScanner()
    private var previousLine: String?
    private var clauseLevel: Int?
    private var clauseCount = 0
    private var currentIndex: Int?
    private var currentTitle = ""
    private var statedTotal: Int?
    private var outlineMax = 0

    /// - Parameters:
    ///   - expectedTotal: the number of clauses when the app knows it (wins over the text).
    ///   - noun: the word in the progress text; "clause" by default.
    public init(expectedTotal: Int? = nil, noun: String = "clause") {
        self.expectedTotal = expectedTotal
        self.noun = noun
    }

    public static func == (a: DraftProgress, b: DraftProgress) -> Bool {
        a.headings == b.headings && a.currentIndex == b.currentIndex && a.total == b.total
    }

    /// Feeds a delta.
    public mutating func append(_ delta: String) {
        for line in scanner.feed(delta) { consume(line) }
    }

    /// The stream ended: the unterminated last line is examined too.
    public mutating func finish() {
        if let line = scanner.finish() { consume(line) }
    }

    /// The progress to show after `tokensReceived` tokens: `nil` for answers of at most
    /// 1,000 tokens or before the first clause heading.
    public func snapshot(tokensReceived: Int) -> Snapshot? {
        guard tokensReceived > Self.longAnswerTokens, let index = currentIndex else { return nil }
        let t = total
        let text = t.map { "Drafting \(noun) \(index) of \($0)…" } ?? "Drafting \(noun) \(index)…"
        return Snapshot(index: index, title: currentTitle, total: t, text: text)
    }

    // MARK: - Lines

    private mutating func consume(_ line: MarkdownLineScanner.Line) {
        defer { previousLine = line.insideFence || line.isFence ? nil : line.text }
        guard !line.insideFence, !line.isFence else { return }
        if let (level, title) = MarkdownSyntax.atxHeading(line.text) {
            found(level: level, title: title)
            previousLine = nil
            return
        }
        if let prev = previousLine, MarkdownSyntax.isParagraphText(prev), let level = MarkdownSyntax.setextUnderline(line.text) {
            found(level: level, title: prev.trimming(" \t"))
            return
        }
        guard clauseLevel == nil else { return }
        // Outline region: before the first clause heading.
        if statedTotal == nil, let n = Self.statedCount(line.text) { statedTotal = n }
        if let n = MarkdownSyntax.orderedListNumber(line.text) { outlineMax = max(outlineMax, n) }
    }

    private mutating func found(level: Int, title rawTitle: String) {
        let title = rawTitle.trimming("*_ \t")
        let number = Self.headingNumber(title)
        headings.append(Heading(level: level, title: title, number: number))
        if clauseLevel == nil {
            if headings.count == 1 && level == 1 && number == nil { return }   // the document title
            clauseLevel = level
        }
        guard let cl = clauseLevel, level <= cl else { return }
        clauseCount += 1
        currentIndex = number ?? clauseCount
        currentTitle = title
    }

    // MARK: - Numbers

    /// The number a heading carries: `Clause|Article|Section|Part|Schedule N`,
    /// `البند|المادة|الفقرة N`, or a leading `N.` / `N)` / `N —`.
    static func headingNumber(_ title: String) -> Int? {
        let words = title.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\u{00A0}" })
        guard let first = words.first else { return nil }
        let keywords: Set<String> = ["clause", "article", "section", "part", "schedule", "البند", "المادة", "الفقرة", "بند", "مادة"]
        if keywords.contains(first.lowercased()), words.count > 1 {
            return decimalPrefix(words[1])
        }
        let digits = first.prefix(while: { $0.unicodeScalars.first.flatMap(decimalValue) != nil })
        if !digits.isEmpty {
            let after = first.dropFirst(digits.count)
            if after == "." || after == ")" || after == ":" { return decimalPrefix(digits) }
            if after.isEmpty, words.count > 1, ["—", "–", "-", ":"].contains(words[1]) { return decimalPrefix(digits) }
        }
        return nil
    }

    /// "This draft has 9 clauses", "7 sections follow", "يتكون من 7 بنود": a number
    /// (digits or English words one–twenty) right before clauses/sections/articles/parts.
    static func statedCount(_ line: String) -> Int? {
        let nouns: Set<String> = ["clauses", "sections", "articles", "parts", "headings", "بنود", "مواد", "بندا", "بندًا", "مادة"]
        let words: [String: Int] = ["two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
                                    "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
                                    "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20]
        let tokens = line.split(whereSeparator: { !($0.isLetter || $0.isNumber || $0.unicodeScalars.first?.properties.generalCategory == .nonspacingMark) })
            .map { $0.lowercased() }
        guard tokens.count >= 2 else { return nil }
        for k in 1..<tokens.count where nouns.contains(tokens[k]) {
            let prev = tokens[k - 1]
            if prev.unicodeScalars.allSatisfy({ decimalValue($0) != nil }), let n = decimalPrefix(Substring(prev)), n > 0 { return n }
            if let n = words[tokens[k - 1]] { return n }
        }
        return nil
    }

    /// Value of the leading decimal digits (any script's `Nd`: ASCII, Arabic-Indic, …).
    static func decimalPrefix(_ s: Substring) -> Int? {
        var v = 0
        var any = false
        for scalar in s.unicodeScalars {
            guard let d = decimalValue(scalar) else { break }
            v = v * 10 + d
            any = true
            if v > 100_000 { return nil }
        }
        return any ? v : nil
    }

    static func decimalValue(_ s: Unicode.Scalar) -> Int? {
        guard s.properties.numericType == .decimal, let v = s.properties.numericValue else { return nil }
        return Int(v)
    }
}

extension String {
    /// The string without leading and trailing characters from `set`.
    func trimming(_ set: String) -> String {
        var s = Substring(self)
        while let f = s.first, set.contains(f) { s.removeFirst() }
        while let l = s.last, set.contains(l) { s.removeLast() }
        return String(s)
    }
}
