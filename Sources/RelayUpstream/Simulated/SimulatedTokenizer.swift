import Foundation

/// A deterministic, LLM-like tokenizer for the simulated upstream.
///
/// It does not reproduce any real vocabulary; it cuts text into pieces of a few
/// characters the way byte-pair-encoding tokenizers tend to:
///
/// * a single space is attached to the FOLLOWING word, number or punctuation
///   (`" Clause"`, `" 3"`, `" —"`); longer space runs keep all but their last
///   space as a token of their own;
/// * letter runs (letters plus their combining marks) of up to 8 characters are
///   one token; longer ones are cut into near-equal pieces of 4–6 letters
///   (the first piece also carries the leading space, if any);
/// * digit runs are cut into groups of at most 3 digits (ASCII or Arabic-Indic);
/// * short contractions after a letter (`'s`, `'t`, `'ll`) are one token;
/// * ASCII punctuation runs of up to 3 characters (`**`, `---`, `.**`) are one
///   token; any other symbol (`—`, `،`, an emoji) is a token by itself;
/// * whitespace containing line breaks is a token ending at its last break
///   (`"\n\n"`), followed by any indentation as its own token.
///
/// Cuts only ever fall on grapheme-cluster boundaries (`Character`s), so an
/// Arabic letter with its diacritics, a CRLF pair or an emoji ZWJ sequence is
/// never split. For every string `t`, `tokens(t).joined() == t` and no token is
/// empty.
public enum SimulatedTokenizer {
    /// Letter runs up to this many characters stay whole.
    private static let maxWholeWord = 8
    /// Target length, in characters, of the pieces of a longer letter run.
    private static let pieceLength = 6
    /// Longest run of ASCII punctuation kept as one token.
    private static let maxPunctuationRun = 3
    /// Longest digit group kept as one token.
    private static let maxDigitGroup = 3

    /// Splits `text` into tokens.
    ///
    /// - Parameter text: any string, possibly empty.
    /// - Returns: the tokens in order; each is a non-empty run of whole
    ///   `Character`s and their concatenation is exactly `text`. Empty text
    ///   gives `[]`. Deterministic: equal inputs give equal outputs.
    public static func tokens(_ text: String) -> [String] {
        var indices: [String.Index] = []
        let chars = characters(of: text, indices: &indices)
        var result: [String] = []
        result.reserveCapacity(chars.count / 3 + 1)
        scan(chars) { start, end in
            result.append(String(text[indices[start]..<indices[end]]))
        }
        return result
    }

    /// Counts the tokens of `text` without building them.
    ///
    /// - Parameter text: any string, e.g. a prompt's concatenated messages.
    /// - Returns: a count in tokens, equal to `tokens(text).count` (0 for "");
    ///   used for `usage.prompt_tokens`.
    public static func estimateTokens(_ text: String) -> Int {
        var count = 0
        var chars: [CharClass] = []
        chars.reserveCapacity(text.utf8.count)
        for c in text { chars.append(classify(c)) }
        scan(chars) { _, _ in count += 1 }
        return count
    }

    // MARK: - Classification

    /// The class of one grapheme cluster, as the scanner sees it.
    enum CharClass: Equatable {
        case space          // U+0020
        case otherSpace     // tab, no-break space, other non-newline whitespace
        case newline        // \n, \r, \r\n, U+2028, …
        case letter         // letters and marks (with their combining marks)
        case digit          // decimal digits of any script
        case apostrophe     // ' or ’ (for contractions)
        case asciiPunct     // other ASCII punctuation and symbols
        case symbol         // anything else: non-ASCII punctuation, emoji, controls
    }

    private static func characters(of text: String, indices: inout [String.Index]) -> [CharClass] {
        var chars: [CharClass] = []
        chars.reserveCapacity(text.utf8.count)
        indices.reserveCapacity(text.utf8.count + 1)
        var i = text.startIndex
        while i < text.endIndex {
            indices.append(i)
            let next = text.index(after: i)
            chars.append(classify(text[i]))
            i = next
        }
        indices.append(text.endIndex)
        return chars
    }

    static func classify(_ c: Character) -> CharClass {
        // Fast path for the ASCII bulk of English text.
        if let a = c.asciiValue {
            switch a {
            case 0x20: return .space
            case 0x0A, 0x0D: return .newline  // "\r\n" is one Character with asciiValue 0x0A
            case 0x09, 0x0B, 0x0C: return .otherSpace
            case 0x30...0x39: return .digit
            case 0x41...0x5A, 0x61...0x7A: return .letter
            case 0x27: return .apostrophe
            case 0x21...0x7E: return .asciiPunct
            default: return .symbol
            }
        }
        if c.isNewline { return .newline }
        if c.isWhitespace { return .otherSpace }
        if c == "\u{2019}" { return .apostrophe }
        let s = c.unicodeScalars.first!
        let props = s.properties
        if props.generalCategory == .decimalNumber { return .digit }
        if props.isAlphabetic { return .letter }
        switch props.generalCategory {
        case .nonspacingMark, .spacingMark, .enclosingMark:
            // A stray combining mark (e.g. at the start of the text) reads as part of a word.
            return .letter
        default:
            return .symbol
        }
    }

    // MARK: - Scanner

    /// Walks the classified characters and reports each token as a half-open
    /// range `[start, end)` of character offsets, in order, covering everything.
    private static func scan(_ chars: [CharClass], emit: (Int, Int) -> Void) {
        let n = chars.count
        var i = 0
        while i < n {
            switch chars[i] {
            case .space, .otherSpace, .newline:
                var end = i
                var lastNewline = -1
                while end < n, chars[end] == .space || chars[end] == .otherSpace || chars[end] == .newline {
                    if chars[end] == .newline { lastNewline = end }
                    end += 1
                }
                // The last single space before a non-space belongs to the next token.
                var runEnd = end
                if end < n, chars[end - 1] == .space, end - 1 > lastNewline {
                    runEnd = end - 1
                }
                if lastNewline >= i {
                    emit(i, lastNewline + 1)
                    if lastNewline + 1 < runEnd { emit(lastNewline + 1, runEnd) }
                } else if i < runEnd {
                    emit(i, runEnd)
                }
                if runEnd < end {
                    // Leading space glued to the following token.
                    i = scanContent(chars, from: runEnd + 1, tokenStart: runEnd, emit: emit)
                } else {
                    i = end
                }
            default:
                i = scanContent(chars, from: i, tokenStart: i, emit: emit)
            }
        }
    }

    /// Scans one non-space unit starting at `from` (the first token starting at
    /// `tokenStart`, which may include one leading space) and returns the offset
    /// just past it.
    private static func scanContent(_ chars: [CharClass], from: Int, tokenStart: Int,
                                    emit: (Int, Int) -> Void) -> Int {
        let n = chars.count
        switch chars[from] {
        case .letter:
            var end = from
            while end < n, chars[end] == .letter { end += 1 }
            emitWord(start: tokenStart, lettersStart: from, end: end, emit: emit)
            return end
        case .digit:
            var end = from
            while end < n, chars[end] == .digit { end += 1 }
            var start = tokenStart
            var groupStart = from
            while groupStart < end {
                let groupEnd = min(groupStart + maxDigitGroup, end)
                emit(start, groupEnd)
                start = groupEnd
                groupStart = groupEnd
            }
            return end
        case .apostrophe:
            // Contraction: letter + apostrophe + 1–2 letters (+ end of word).
            if tokenStart == from, from > 0, chars[from - 1] == .letter {
                var end = from + 1
                while end < n, chars[end] == .letter, end - from <= 3 { end += 1 }
                let letters = end - from - 1
                if letters >= 1, letters <= 2, end == n || chars[end] != .letter {
                    emit(from, end)
                    return end
                }
            }
            emit(tokenStart, from + 1)
            return from + 1
        case .asciiPunct:
            var end = from + 1
            while end < n, end - from < maxPunctuationRun, chars[end] == .asciiPunct { end += 1 }
            emit(tokenStart, end)
            return end
        default:
            emit(tokenStart, from + 1)
            return from + 1
        }
    }

    /// Emits a letter run `[lettersStart, end)`, the first piece starting at
    /// `start` (one leading space or none), cut into near-equal pieces.
    private static func emitWord(start: Int, lettersStart: Int, end: Int, emit: (Int, Int) -> Void) {
        let length = end - lettersStart
        if length <= maxWholeWord {
            emit(start, end)
            return
        }
        let pieces = (length + pieceLength - 1) / pieceLength
        let base = length / pieces
        var extra = length % pieces
        var pieceStart = start
        var cut = lettersStart
        for _ in 0..<pieces {
            cut += base
            if extra > 0 { cut += 1; extra -= 1 }
            emit(pieceStart, cut)
            pieceStart = cut
        }
    }
}
