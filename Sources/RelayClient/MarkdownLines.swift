/// Splits streamed Markdown into complete lines, however the text was chunked, and
/// tracks fenced code blocks (CommonMark 0.31.2 §4.5 "Fenced code blocks").
///
/// Lines end at LF (U+000A); a CR before the LF is dropped. Splitting works on
/// Unicode scalars, never on `Character` (where `"\r\n"` is one character).
/// Shared by `RenderBuffer` (thematic breaks outside code) and `DraftProgress`
/// (headings outside code).
struct MarkdownLineScanner: Sendable {
    /// One complete line.
    struct Line: Sendable, Equatable {
        /// The line without its terminator.
        var text: String
        /// `true` when the line is inside a fenced code block (its content, not a fence).
        var insideFence: Bool
        /// `true` when the line opens or closes a fence.
        var isFence: Bool
    }

    private var partial = String.UnicodeScalarView()
    private var fence: (char: Unicode.Scalar, length: Int)?

    /// `true` while an opened fence has not been closed.
    var inFence: Bool { fence != nil }

    /// Feeds more text; returns the lines it completed, in order.
    mutating func feed(_ text: String) -> [Line] {
        var out: [Line] = []
        for s in text.unicodeScalars {
            if s == "\n" {
                if partial.last == "\r" { partial.removeLast() }
                out.append(classify(String(partial)))
                partial = String.UnicodeScalarView()
            } else {
                partial.append(s)
            }
        }
        return out
    }

    /// Ends the stream: returns the unterminated last line, if any.
    mutating func finish() -> Line? {
        guard !partial.isEmpty else { return nil }
        let line = classify(String(partial))
        partial = String.UnicodeScalarView()
        return line
    }

    private mutating func classify(_ text: String) -> Line {
        if let open = fence {
            if let f = MarkdownSyntax.fence(text), f.char == open.char, f.length >= open.length, f.info.allSatisfy({ $0 == " " || $0 == "\t" }) {
                fence = nil
                return Line(text: text, insideFence: false, isFence: true)
            }
            return Line(text: text, insideFence: true, isFence: false)
        }
        if let f = MarkdownSyntax.fence(text), !(f.char == "`" && f.info.contains("`")) {
            fence = (f.char, f.length)
            return Line(text: text, insideFence: false, isFence: true)
        }
        return Line(text: text, insideFence: false, isFence: false)
    }
}

/// Line-level Markdown recognisers (CommonMark 0.31.2). Pure functions of one line.
enum MarkdownSyntax {
    /// Leading indentation in columns (a tab counts 4) and the rest of the line.
    static func indent(_ line: Substring) -> (columns: Int, rest: Substring) {
        var cols = 0
        var i = line.startIndex
        while i < line.endIndex {
            if line[i] == " " { cols += 1 } else if line[i] == "\t" { cols += 4 - cols % 4 } else { break }
            i = line.index(after: i)
        }
        return (cols, line[i...])
    }

    /// `true` for a blank line: empty or only spaces and tabs (a paragraph break).
    static func isBlank(_ line: String) -> Bool {
        line.unicodeScalars.allSatisfy { $0 == " " || $0 == "\t" }
    }

    /// A code fence opener/closer (§4.5): ≤3 spaces of indent, then ≥3 backticks or
    /// ≥3 tildes; returns the fence character, its length and the info string.
    static func fence(_ line: String) -> (char: Unicode.Scalar, length: Int, info: Substring)? {
        let (cols, rest) = indent(line[...])
        guard cols <= 3, let first = rest.unicodeScalars.first, first == "`" || first == "~" else { return nil }
        let n = rest.unicodeScalars.prefix(while: { $0 == first }).count
        guard n >= 3 else { return nil }
        let info = rest.unicodeScalars.dropFirst(n)
        return (first, n, Substring(info))
    }

    /// A thematic break (§4.1): ≤3 spaces of indent, then ≥3 of the same `-`, `*` or
    /// `_`, optionally separated by spaces or tabs, and nothing else (`---`, `***`, `___`, `- - -`).
    static func isThematicBreak(_ line: String) -> Bool {
        let (cols, rest) = indent(line[...])
        guard cols <= 3, let c = rest.unicodeScalars.first, c == "-" || c == "*" || c == "_" else { return false }
        var count = 0
        for s in rest.unicodeScalars {
            if s == c { count += 1 } else if s != " " && s != "\t" { return false }
        }
        return count >= 3
    }

    /// An ATX heading (§4.2): ≤3 spaces of indent, 1–6 `#`, then a space, a tab or the
    /// end of the line. Returns the level and the title without the optional closing `#`s.
    static func atxHeading(_ line: String) -> (level: Int, title: String)? {
        let (cols, rest) = indent(line[...])
        guard cols <= 3 else { return nil }
        let hashes = rest.prefix(while: { $0 == "#" }).count
        guard (1...6).contains(hashes) else { return nil }
        var body = rest.dropFirst(hashes)
        if let f = body.first, f != " " && f != "\t" { return nil }
        body = body.drop(while: { $0 == " " || $0 == "\t" })
        var title = String(body)
        while let l = title.last, l == " " || l == "\t" { title.removeLast() }
        // Closing sequence: `#`s preceded by a space (or the whole title).
        let closing = title.reversed().prefix(while: { $0 == "#" }).count
        if closing > 0 {
            let before = title.dropLast(closing)
            if before.isEmpty || before.last == " " || before.last == "\t" {
                title = String(before)
                while let l = title.last, l == " " || l == "\t" { title.removeLast() }
            }
        }
        return (hashes, title)
    }

    /// A setext heading underline (§4.3): ≤3 spaces of indent, then only `=` (level 1)
    /// or only `-` (level 2), then optional trailing spaces.
    static func setextUnderline(_ line: String) -> Int? {
        let (cols, rest) = indent(line[...])
        guard cols <= 3, let c = rest.first, c == "=" || c == "-" else { return nil }
        let run = rest.prefix(while: { $0 == c })
        guard rest.dropFirst(run.count).allSatisfy({ $0 == " " || $0 == "\t" }) else { return nil }
        return c == "=" ? 1 : 2
    }

    /// A line that can be the content line of a setext heading: a paragraph line, so
    /// not blank, not indented code, not an ATX heading, a fence, a thematic break,
    /// a list item or a block quote.
    static func isParagraphText(_ line: String) -> Bool {
        let (cols, rest) = indent(line[...])
        guard cols <= 3, !isBlank(line) else { return false }
        if atxHeading(line) != nil || fence(line) != nil || isThematicBreak(line) { return false }
        if let f = rest.first, f == ">" { return false }
        if let f = rest.first, "-*+".contains(f), rest.dropFirst().first == " " { return false }
        if orderedListNumber(line) != nil { return false }
        return true
    }

    /// The number of an ordered list item (§5.2): ≤3 spaces, 1–9 digits, `.` or `)`,
    /// then a space. Returns the number.
    static func orderedListNumber(_ line: String) -> Int? {
        let (cols, rest) = indent(line[...])
        guard cols <= 3 else { return nil }
        let digits = rest.prefix(while: { $0.isASCII && $0.isNumber })
        guard (1...9).contains(digits.count) else { return nil }
        let after = rest.dropFirst(digits.count)
        guard let d = after.first, d == "." || d == ")", after.dropFirst().first == " " else { return nil }
        return Int(digits)
    }
}
