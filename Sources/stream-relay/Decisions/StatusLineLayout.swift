/// Where `stream-relay chat` puts a status line ("⟳ connection lost …") relative to the
/// answer, so that status lines never split the answer's text.
///
/// The answer goes to standard output byte for byte, always: this type never adds a byte
/// to it. Status lines go to standard error, laid out by where the two streams end up:
///
/// * `.separate` — stdout and stderr are different files, pipes or terminals: a status
///   line is just a line on stderr.
/// * `.interleaved` — one file or pipe holds both (`2>&1`), not a terminal: a status line
///   that arrives while the answer's current line is unfinished is preceded by a line
///   break on stderr, so it stands on a line of its own in the combined output.
/// * `.terminal` — both are the same terminal: the answer's unfinished line is erased,
///   the status line written in its place, and the unfinished line written again below
///   it (on stderr), so the line reads whole and the answer continues after the status
///   lines. Erasing needs the line's height in rows, from the terminal's width; when
///   the width is unknown, or the line is taller than the screen, the line stays where it
///   is and is repeated below the status line instead.
///
/// Pure: no I/O; the caller writes `stderr` bytes and the answer's own bytes.
struct StatusLineLayout {
    /// Where stdout and stderr go (see the type's documentation).
    enum Mode: Equatable {
        case separate
        case interleaved
        /// The same terminal, `columns` × `rows` cells when known (`TIOCGWINSZ`).
        case terminal(columns: Int?, rows: Int?)
    }

    /// Where the streams go; the caller updates `.terminal` sizes as the window changes.
    var mode: Mode
    /// The answer's text since its last line feed (what an erase must remove), as written.
    private(set) var unfinishedLine = ""
    /// Whether the combined output (`.interleaved`) is at the start of a line.
    private var combinedAtLineStart = true

    init(mode: Mode) {
        self.mode = mode
    }

    /// Records answer text written to stdout (the caller writes `text` itself, unchanged).
    mutating func answer(_ text: String) {
        guard !text.isEmpty else { return }
        if let lastBreak = text.lastIndex(of: "\n") {
            unfinishedLine = String(text[text.index(after: lastBreak)...])
        } else {
            unfinishedLine += text
        }
        combinedAtLineStart = unfinishedLine.isEmpty
    }

    /// The bytes to write to stderr for the status line `line` (no line feed in it).
    mutating func status(_ line: String) -> String {
        switch mode {
        case .separate:
            return line + "\n"
        case .interleaved:
            let out = (combinedAtLineStart ? "" : "\n") + line + "\n"
            combinedAtLineStart = true
            return out
        case .terminal(let columns, let rows):
            guard !unfinishedLine.isEmpty else { return line + "\n" }
            guard let columns, columns > 0 else {
                return "\n" + line + "\n" + unfinishedLine
            }
            let height = Self.rowsOccupied(by: unfinishedLine, columns: columns)
            if let rows, rows > 0, height >= rows {
                return "\n" + line + "\n" + unfinishedLine
            }
            // CR to the line's first column, up to its first row, erase to the end of the
            // screen (ECMA-48 CUU and ED), the status line, then the line again.
            let up = height > 1 ? "\u{1B}[\(height - 1)A" : ""
            return "\r" + up + "\u{1B}[J" + line + "\n" + unfinishedLine
        }
    }

    /// The bytes to write to stderr once the answer is over, before the final status lines:
    /// a line feed ends its unfinished last line on a terminal or in combined output, so the
    /// final lines are not glued to it and the unfinished line is not repeated after them.
    mutating func endOfAnswer() -> String {
        defer { unfinishedLine = ""; combinedAtLineStart = true }
        switch mode {
        case .separate: return ""
        case .interleaved: return combinedAtLineStart ? "" : "\n"
        case .terminal: return unfinishedLine.isEmpty ? "" : "\n"
        }
    }

    /// How many terminal rows `line` (no line feed) takes at `columns` cells per row: its
    /// display width (`displayWidth`) divided by `columns`, rounded up, at least 1. A line
    /// that exactly fills its last row leaves the cursor on that row (the pending wrap of
    /// VT100-compatible terminals), so it counts no extra row.
    static func rowsOccupied(by line: String, columns: Int) -> Int {
        let width = displayWidth(line)
        return max(1, (width + columns - 1) / columns)
    }

    /// The number of terminal cells `line` takes: 2 for East Asian wide and fullwidth
    /// characters and emoji shown as emoji (Unicode UAX #11, UTS #51), 0 for combining
    /// marks, format characters (ZWJ, bidi marks) and controls, 1 for everything else; a tab
    /// advances to the next multiple of 8. Errs low where terminals differ (an
    /// underestimate leaves a fragment on screen; an overestimate would erase a finished
    /// line of the answer).
    static func displayWidth(_ line: String) -> Int {
        var width = 0
        for scalar in line.unicodeScalars {
            if scalar == "\t" {
                width = (width / 8 + 1) * 8
            } else {
                width += cells(scalar)
            }
        }
        return width
    }

    private static func cells(_ s: Unicode.Scalar) -> Int {
        let v = s.value
        if v < 0x20 || (v >= 0x7F && v < 0xA0) { return 0 }
        switch s.properties.generalCategory {
        case .nonspacingMark, .enclosingMark, .format: return 0
        default: break
        }
        if s.properties.isEmojiPresentation { return 2 }
        switch v {
        case 0x1100...0x115F, 0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF, 0x4E00...0x9FFF,
             0xA000...0xA4CF, 0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE30...0xFE4F, 0xFF00...0xFF60,
             0xFFE0...0xFFE6, 0x20000...0x2FFFD, 0x30000...0x3FFFD:
            return 2
        default:
            return 1
        }
    }
}
