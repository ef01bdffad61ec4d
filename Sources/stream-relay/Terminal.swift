import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// `stream-relay chat`'s output: the answer to standard output, exactly its bytes (so runs
/// compare byte for byte and `chat … > answer.md` holds only the answer), and status lines
/// to standard error, laid out by `StatusLineLayout` so they never split the answer.
/// Used from one task at a time (the chat loop), hence `@unchecked Sendable`.
final class Terminal: @unchecked Sendable {
    private var layout: StatusLineLayout

    init() {
        layout = StatusLineLayout(mode: Self.currentMode())
    }

    /// Answer text, written to stdout unchanged.
    func text(_ s: String) {
        guard !s.isEmpty else { return }
        FileHandle.standardOutput.write(Data(s.utf8))
        layout.answer(s)
    }

    /// A status line (no line feed in `s`) on stderr.
    func status(_ s: String) {
        if case .terminal = layout.mode { layout.mode = Self.currentMode() }   // the window may have been resized
        printError(layout.status(s))
    }

    /// The answer is over: its unfinished last line is ended (see `StatusLineLayout.endOfAnswer`).
    func endOfAnswer() {
        printError(layout.endOfAnswer())
    }

    /// Where stdout and stderr go now: the same terminal (with its size), one file or pipe,
    /// or separate destinations (compared by device and inode, fstat(2)).
    static func currentMode() -> StatusLineLayout.Mode {
        var out = stat(), err = stat()
        guard fstat(STDOUT_FILENO, &out) == 0, fstat(STDERR_FILENO, &err) == 0 else { return .separate }
        let same = out.st_dev == err.st_dev && out.st_ino == err.st_ino && out.st_rdev == err.st_rdev
        guard same else { return .separate }
        guard isatty(STDOUT_FILENO) == 1 else { return .interleaved }
        var size = winsize()
        guard ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0 else { return .terminal(columns: nil, rows: nil) }
        return .terminal(columns: size.ws_col > 0 ? Int(size.ws_col) : nil, rows: size.ws_row > 0 ? Int(size.ws_row) : nil)
    }
}
