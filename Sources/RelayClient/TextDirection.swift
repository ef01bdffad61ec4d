/// Base direction of an answer's text.
public enum TextDirection: String, Sendable, Equatable {
    case leftToRight
    case rightToLeft
}

/// How the UI lays out an answer: its base direction and line height. Decided once,
/// before the first text is rendered (issue 5 item 5), and never changed after.
public struct TextLayout: Sendable, Equatable {
    /// Base paragraph direction.
    public var direction: TextDirection
    /// `true` when the sample's strong letters include Arabic script.
    public var isArabic: Bool
    /// Line-height multiplier (× font size): 1.8 for Arabic (its marks need the room),
    /// 1.5 for other right-to-left scripts, 1.4 otherwise.
    public var lineHeightMultiplier: Double

    public init(direction: TextDirection, isArabic: Bool) {
        self.direction = direction
        self.isArabic = isArabic
        self.lineHeightMultiplier = isArabic ? 1.8 : (direction == .rightToLeft ? 1.5 : 1.4)
    }

    /// The default when a text has no strong letters at all: left-to-right.
    public static let defaultLeftToRight = TextLayout(direction: .leftToRight, isArabic: false)
}

/// Detects the direction of a text from its strong letters (issue 5 item 5).
///
/// * Only the first `sampleCharacters` (30) `Character`s are examined.
/// * A strong letter is a scalar of a letter category (Lu, Ll, Lt, Lm, Lo). It is
///   right-to-left in U+0590–08FF, U+FB1D–FDFF or U+FE70–FEFF (Hebrew, Arabic,
///   Syriac, Thaana, N'Ko, Samaritan, Mandaic, presentation forms), else left-to-right.
/// * Ignored: digits (ASCII and Arabic-Indic U+0660–0669, U+06F0–06F9 are `Nd`, not
///   letters), punctuation, Markdown markers (`#`, `*`, `_`, `` ` ``, `>`, `-`, `|`, …),
///   combining marks, URLs (`http://…`, `https://…`, `www.…` up to whitespace), link
///   targets (`](…)`) and autolinks (`<…>`).
/// * More right-to-left than left-to-right letters → RTL, fewer → LTR; a tie goes to
///   the first strong letter.
public enum DirectionDetection {
    /// Characters examined, from the start of the answer.
    public static let sampleCharacters = 30

    /// The layout for `text`'s first 30 characters, or `nil` when they hold no strong letter.
    public static func detect(_ text: String) -> TextLayout? {
        detect(sample: text.prefix(sampleCharacters))
    }

    /// The layout for all of `sample`, or `nil` when it holds no strong letter.
    public static func detect(sample: Substring) -> TextLayout? {
        var rtl = 0, ltr = 0, arabic = 0
        var first: TextDirection?
        for scalar in strongLetterCandidates(sample) {
            guard isLetter(scalar) else { continue }
            if isRightToLeft(scalar) {
                rtl += 1
                if isArabic(scalar) { arabic += 1 }
                if first == nil { first = .rightToLeft }
            } else {
                ltr += 1
                if first == nil { first = .leftToRight }
            }
        }
        guard let first else { return nil }
        let dir: TextDirection = rtl > ltr ? .rightToLeft : (ltr > rtl ? .leftToRight : first)
        return TextLayout(direction: dir, isArabic: arabic > 0)
    }

    /// `true` for U+0590–08FF, U+FB1D–FDFF, U+FE70–FEFF.
    public static func isRightToLeft(_ s: Unicode.Scalar) -> Bool {
        let v = s.value
        return (0x0590...0x08FF).contains(v) || (0xFB1D...0xFDFF).contains(v) || (0xFE70...0xFEFF).contains(v)
    }

    /// Arabic script blocks: U+0600–06FF, 0750–077F, 0870–08FF, FB50–FDFF, FE70–FEFF.
    public static func isArabic(_ s: Unicode.Scalar) -> Bool {
        let v = s.value
        return (0x0600...0x06FF).contains(v) || (0x0750...0x077F).contains(v) || (0x0870...0x08FF).contains(v)
            || (0xFB50...0xFDFF).contains(v) || (0xFE70...0xFEFF).contains(v)
    }

    static func isLetter(_ s: Unicode.Scalar) -> Bool {
        switch s.properties.generalCategory {
        case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter: return true
        default: return false
        }
    }

    /// The scalars of `sample` outside URLs, link targets and autolinks.
    static func strongLetterCandidates(_ sample: Substring) -> [Unicode.Scalar] {
        let scalars = Array(sample.unicodeScalars)
        var out: [Unicode.Scalar] = []
        out.reserveCapacity(scalars.count)
        var i = 0
        func hasPrefix(_ p: String, at k: Int) -> Bool {
            let ps = Array(p.unicodeScalars)
            guard k + ps.count <= scalars.count else { return false }
            for j in 0..<ps.count where Character(scalars[k + j]).lowercased() != String(ps[j]) { return false }
            return true
        }
        while i < scalars.count {
            let s = scalars[i]
            let atWordStart = i == 0 || !isLetter(scalars[i - 1])
            if atWordStart && (hasPrefix("http://", at: i) || hasPrefix("https://", at: i) || hasPrefix("www.", at: i)) {
                while i < scalars.count, !scalars[i].properties.isWhitespace, scalars[i] != ")", scalars[i] != ">" { i += 1 }
                continue
            }
            if s == "]" && i + 1 < scalars.count && scalars[i + 1] == "(" {
                i += 2
                while i < scalars.count, scalars[i] != ")" { i += 1 }
                continue
            }
            if s == "<" {
                var j = i + 1
                while j < scalars.count, scalars[j] != ">", !scalars[j].properties.isWhitespace { j += 1 }
                let body = String(String.UnicodeScalarView(scalars[(i + 1)..<min(j, scalars.count)]))
                if body.contains(":") || body.contains("@") { i = j + 1; continue }
            }
            out.append(s)
            i += 1
        }
        return out
    }
}

/// Holds an answer's direction once decided (issue 5 item 5: "once set it never flips").
public struct DirectionDetector: Sendable, Equatable {
    /// The decided layout; `nil` until `decide(from:)`.
    public private(set) var layout: TextLayout?

    public init() {}

    /// Decides from `received` (all text received so far) unless already decided.
    /// Uses the first 30 characters; when they hold no strong letter, the first
    /// strong letters of whatever else has arrived; with none at all, left-to-right.
    @discardableResult
    public mutating func decide(from received: String) -> TextLayout {
        if let layout { return layout }
        let l = DirectionDetection.detect(received)
            ?? DirectionDetection.detect(sample: received.prefix(2_000))
            ?? .defaultLeftToRight
        layout = l
        return l
    }
}
