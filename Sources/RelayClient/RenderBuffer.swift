/// Accumulates streamed deltas and decides when the UI shows them
/// (`conformance/CLIENT_RULES.md`; the vectors in `conformance/render.json`).
///
/// Rules, in order of precedence:
/// * **At once** when a paragraph break (`\n\n`, a blank line) or a Markdown thematic
///   break line (`---`, `***`, `___`, CommonMark §4.1) *outside fenced code* completes.
/// * Otherwise **every 50 ms** (`intervalMs`), when the caller's `tick(now:)` finds that
///   much time since the last flush.
/// * The **first** timed flush also waits for 30 characters (`firstRenderCharacters`), so
///   the text direction is known before anything is shown (`conformance/CLIENT_RULES.md`
///   "Right-to-left decision"); a flush
///   boundary or `done` skips that wait.
/// * **Never mid-word**: a trailing partial word (text after the last whitespace) is
///   held back; a flush ends at whitespace or right before it; text without spaces (CJK) is released once 64 characters are held
///   (`longRunCharacters`) so it never stalls.
/// * **Grapheme clusters stay whole**: the last `Character` is always held (a later
///   delta may extend it — emoji ZWJ sequences, Arabic letters with diacritics, flags)
///   unless it is LF or CRLF, after which Unicode always breaks (UAX #29 rule GB4).
/// * **Everything** on `finish()` (`done`).
/// * In the **background** nothing is flushed; `enterForeground` replays what was
///   buffered. Text is only ever moved from `pending` into a flush, so the
///   concatenation of all flushes equals the concatenation of all deltas.
///
/// Times are milliseconds from a `RelayClock`.
public struct RenderBuffer: Sendable {
    /// Why a flush happened.
    public enum Reason: String, Sendable, Equatable {
        /// The 50 ms interval elapsed.
        case interval
        /// A blank line (`\n\n`) completed.
        case paragraphBreak
        /// A `---` / `***` / `___` line completed outside fenced code.
        case thematicBreak
        /// 64 characters without whitespace were held (CJK and other unspaced text).
        case longRun
        /// The stream ended (`done`, error, stop, timeout): everything.
        case done
        /// The app came back to the foreground: buffered text replayed.
        case foreground
    }

    /// Text released to the UI, with the rule that released it.
    public struct Flush: Sendable, Equatable {
        public var text: String
        public var reason: Reason
        public init(text: String, reason: Reason) {
            self.text = text
            self.reason = reason
        }
    }

    /// UI update interval, ms (`conformance/CLIENT_RULES.md`).
    public static let intervalMs: Int64 = 50
    /// Held characters of unspaced text after which they are released anyway.
    public static let longRunCharacters = 64
    /// Characters the first timed flush waits for (direction detection window).
    public static let firstRenderCharacters = 30

    /// Text received but not yet flushed.
    public private(set) var pending = ""
    /// `true` between `enterBackground()` and `enterForeground(now:)`.
    public private(set) var isBackground = false
    /// `true` after `finish()`.
    public private(set) var isFinished = false
    /// `true` once anything has been flushed.
    public private(set) var hasFlushed = false

    private var lastFlushAt: Int64
    private var scanner = MarkdownLineScanner()
    private var boundarySeen = false

    /// A buffer whose 50 ms interval starts at `now` (ms).
    public init(now: Int64) {
        lastFlushAt = now
    }

    /// Adds a delta. Returns a flush when the delta completed a paragraph break or a
    /// thematic break line (and the app is in the foreground).
    public mutating func append(_ delta: String, now: Int64) -> Flush? {
        guard !isFinished, !delta.isEmpty else { return nil }
        pending += delta
        var reason: Reason?
        for line in scanner.feed(delta) {
            if MarkdownSyntax.isBlank(line.text) {
                reason = reason ?? .paragraphBreak
            } else if !line.insideFence, !line.isFence, MarkdownSyntax.isThematicBreak(line.text) {
                reason = .thematicBreak
            }
        }
        guard let reason else { return nil }
        boundarySeen = true
        if isBackground { return nil }
        return flushSafePrefix(reason: reason, now: now)
    }

    /// The 50 ms timer: flushes the safe prefix (whole words, whole clusters) when at
    /// least `intervalMs` passed since the last flush. Call it as often as you like.
    public mutating func tick(now: Int64) -> Flush? {
        guard !isBackground, !isFinished, now - lastFlushAt >= Self.intervalMs, !pending.isEmpty else { return nil }
        if !hasFlushed && !boundarySeen && !Self.hasAtLeast(Self.firstRenderCharacters, pending) { return nil }
        return flushSafePrefix(reason: .interval, now: now)
    }

    /// The stream ended: returns everything still pending (`nil` when nothing is, or
    /// when in the background — `enterForeground` then returns it).
    public mutating func finish(now: Int64) -> Flush? {
        guard !isFinished else { return nil }
        isFinished = true
        _ = scanner.finish()
        if isBackground { return nil }
        return flushAll(reason: .done, now: now)
    }

    /// The app went to the background: updates pause; text keeps accumulating.
    public mutating func enterBackground() {
        isBackground = true
    }

    /// The app is back: replays everything buffered — all of it after `finish`, else
    /// the safe prefix (the held partial word follows on the next tick or `done`).
    public mutating func enterForeground(now: Int64) -> Flush? {
        guard isBackground else { return nil }
        isBackground = false
        if isFinished { return flushAll(reason: .foreground, now: now) }
        return flushSafePrefix(reason: .foreground, now: now)
    }

    // MARK: - Cutting

    private mutating func flushAll(reason: Reason, now: Int64) -> Flush? {
        guard !pending.isEmpty else { return nil }
        let text = pending
        pending = ""
        return emit(text, reason: reason, now: now)
    }

    private mutating func flushSafePrefix(reason: Reason, now: Int64) -> Flush? {
        let (cut, long) = Self.safeCut(pending)
        guard cut > pending.startIndex else { return nil }
        let text = String(pending[..<cut])
        pending = String(pending[cut...])
        return emit(text, reason: long && reason == .interval ? .longRun : reason, now: now)
    }

    private mutating func emit(_ text: String, reason: Reason, now: Int64) -> Flush {
        lastFlushAt = now
        hasFlushed = true
        return Flush(text: text, reason: reason)
    }

    /// The end of the longest prefix of `s` that may be shown: it ends after or right
    /// before a whitespace character (never mid-word) and before the last `Character`
    /// unless that is LF or CRLF (clusters stay whole); or, when the trailing unspaced run is at
    /// least `longRunCharacters` long, at the last stable cluster boundary.
    static func safeCut(_ s: String) -> (String.Index, longRun: Bool) {
        guard !s.isEmpty else { return (s.startIndex, false) }
        let last = s.index(before: s.endIndex)
        let stableEnd = (s[last] == "\n" || s[last] == "\r\n") ? s.endIndex : last
        // A held trailing space ends the word before it: that word may go.
        if stableEnd == last && s[last].isWhitespace { return (last, false) }
        var i = stableEnd
        var run = stableEnd == s.endIndex ? 0 : 1   // the held last character counts
        while i > s.startIndex {
            let p = s.index(before: i)
            if s[p].isWhitespace { return (i, false) }
            run += 1
            if run >= longRunCharacters { return (stableEnd, true) }
            i = p
        }
        return (s.startIndex, false)
    }

    static func hasAtLeast(_ n: Int, _ s: String) -> Bool {
        var count = 0
        for _ in s {
            count += 1
            if count >= n { return true }
        }
        return false
    }
}
