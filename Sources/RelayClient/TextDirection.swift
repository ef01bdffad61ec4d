/// Base direction of an answer's text.
public enum TextDirection: String, Sendable, Equatable {
    case leftToRight
    case rightToLeft
}

/// How the UI lays out an answer: its base direction and line height. Decided once,
/// before the first text is rendered, and never changed after
/// (`conformance/CLIENT_RULES.md` "Right-to-left decision").
public struct TextLayout: Sendable, Equatable {
    /// Base paragraph direction.
    public var direction: TextDirection
    /// `true` when the sample holds Arabic (then `direction` is right-to-left).
    public var isArabic: Bool
    /// Line-height multiplier (× font size): 1.8 for Arabic (its marks need the room),
    /// 1.4 otherwise.
    public var lineHeightMultiplier: Double

    /// The layout for a sample with (`true`) or without Arabic.
    public init(arabic: Bool) {
        self.direction = arabic ? .rightToLeft : .leftToRight
        self.isArabic = arabic
        self.lineHeightMultiplier = arabic ? 1.8 : 1.4
    }

    /// Left-to-right, line height 1.4 (no Arabic in the sample, or an empty sample).
    public static let defaultLeftToRight = TextLayout(arabic: false)
    /// Right-to-left Arabic, line height 1.8.
    public static let arabic = TextLayout(arabic: true)
}

/// The right-to-left rule, exactly as `conformance/CLIENT_RULES.md` states it (shared with the
/// JavaScript kit and the `conformance/` vectors):
///
/// * The **sample** is built from the answer text as it arrives, counting Unicode
///   scalars, skipping whitespace (Unicode `White_Space`) and the Markdown syntax
///   characters `#` `*` `_` `` ` `` `~` `>` `-` `|` `=` `+` `[` `]` `(` `)` `!`; it is
///   the first 30 scalars that remain.
/// * **Arabic present** in the sample (U+0600–06FF, U+0750–077F, U+0870–089F,
///   U+08A0–08FF, U+FB50–FDFF, U+FE70–FEFF) → right-to-left; otherwise left-to-right.
public enum DirectionDetection {
    /// Scalars in the sample.
    public static let sampleScalars = 30

    /// Markdown syntax characters that never enter the sample.
    public static let markdownSyntax: Set<Unicode.Scalar> = ["#", "*", "_", "`", "~", ">", "-", "|", "=", "+", "[", "]", "(", ")", "!"]

    /// `true` when `s` enters the sample (not whitespace, not Markdown syntax).
    public static func counts(_ s: Unicode.Scalar) -> Bool {
        !s.properties.isWhitespace && !markdownSyntax.contains(s)
    }

    /// The sample of `text`: its first 30 counted scalars (fewer when the text is short).
    public static func sample(of text: String) -> [Unicode.Scalar] {
        var out: [Unicode.Scalar] = []
        for s in text.unicodeScalars where counts(s) {
            out.append(s)
            if out.count == sampleScalars { break }
        }
        return out
    }

    /// The layout for the whole of `text` as a finished answer (the sample as it stands).
    public static func layout(of text: String) -> TextLayout {
        TextLayout(arabic: sample(of: text).contains(where: isArabic))
    }

    /// Arabic script blocks: U+0600–06FF, 0750–077F, 0870–089F, 08A0–08FF, FB50–FDFF, FE70–FEFF.
    public static func isArabic(_ s: Unicode.Scalar) -> Bool {
        let v = s.value
        return (0x0600...0x06FF).contains(v) || (0x0750...0x077F).contains(v) || (0x0870...0x08FF).contains(v)
            || (0xFB50...0xFDFF).contains(v) || (0xFE70...0xFEFF).contains(v)
    }
}

/// Builds the sample as deltas arrive and decides the direction once: when the sample
/// holds 30 scalars, or when the answer ends (`decideNow()`), whichever comes first.
/// Never changes its decision afterwards.
public struct DirectionDetector: Sendable, Equatable {
    /// The decided layout; `nil` until decided.
    public private(set) var layout: TextLayout?
    /// Counted scalars so far (at most 30).
    public private(set) var sampled = 0
    private var arabicSeen = false

    public init() {}

    /// Adds a delta's text to the sample. Returns the layout when this delta completed
    /// the sample (the decision is made now), else `nil`.
    @discardableResult
    public mutating func feed(_ delta: String) -> TextLayout? {
        guard layout == nil else { return nil }
        for s in delta.unicodeScalars where DirectionDetection.counts(s) {
            if DirectionDetection.isArabic(s) { arabicSeen = true }
            sampled += 1
            if sampled == DirectionDetection.sampleScalars {
                let l = TextLayout(arabic: arabicSeen)
                layout = l
                return l
            }
        }
        return nil
    }

    /// Decides with the sample as it stands (the answer ended); an empty sample is
    /// left-to-right. Returns the decided layout (the earlier one when already decided).
    @discardableResult
    public mutating func decideNow() -> TextLayout {
        if let layout { return layout }
        let l = TextLayout(arabic: arabicSeen)
        layout = l
        return l
    }
}
