/// The seam between the text of an answer stored so far and the text of the call that
/// continues it (docs/UPSTREAMS.md, "Continuing an answer").
///
/// The continuing call gets the answer so far as a final assistant message (a "prefill")
/// WITHOUT its trailing whitespace: the Anthropic Messages API refuses a final assistant
/// content that ends in whitespace (docs "Prefill Claude's response"), and chat templates
/// of OpenAI-compatible servers may trim it (Hugging Face `continue_final_message`), so the
/// relay never depends on how a template treats it. The model then continues after the
/// stripped prefill, and usually generates that whitespace again (a tokenizer attaches a
/// space to the following word: `"Hello"` → `" world"`).
///
/// The reader already has the whole text so far, whitespace included, so the continuation
/// must not send it twice. `pass` drops the continuation's leading characters while they
/// repeat the stripped whitespace, Unicode scalar by scalar, across as many deltas as it
/// takes; at the first scalar that differs (or once all of it was repeated) everything
/// else passes unchanged. So at the seam the reader sees: the text so far exactly as it was
/// sent, then the model's continuation minus the whitespace it repeated. The only thing a
/// model can change at the seam is whitespace: if it continues with different whitespace
/// (`"\n"` where `"  "` was stripped) or none at all, that difference is shown as is; no
/// visible character is repeated or dropped.
///
/// Pure value, no I/O.
public struct ContinuationSeam: Sendable, Equatable {
    /// The stripped trailing whitespace still expected at the start of the continuation,
    /// as Unicode scalars.
    private let whitespace: [Unicode.Scalar]
    /// How many scalars of `whitespace` the continuation has repeated so far.
    private var matched = 0
    /// `true` once a scalar differed or all of `whitespace` was repeated: then every
    /// delta passes unchanged.
    private var settled: Bool

    /// Splits `text` (the answer so far) into the prefill sent to the upstream and its
    /// trailing whitespace (`Character.isWhitespace`: spaces, tabs, line breaks, other
    /// Unicode white space), which is held back.
    /// - Returns: `prefill + whitespace == text`; `prefill` is empty or ends in a
    ///   non-whitespace character; `whitespace` is empty or all whitespace.
    public static func split(_ text: String) -> (prefill: String, whitespace: String) {
        var end = text.endIndex
        while end > text.startIndex {
            let before = text.index(before: end)
            guard text[before].isWhitespace else { break }
            end = before
        }
        return (String(text[..<end]), String(text[end...]))
    }

    /// - Parameter whitespace: the whitespace `split` held back (may be empty: then every
    ///   delta passes unchanged).
    public init(whitespace: String) {
        self.whitespace = Array(whitespace.unicodeScalars)
        settled = self.whitespace.isEmpty
    }

    /// The part of one continuation delta the reader should get: `delta` minus the
    /// leading scalars that repeat the held-back whitespace. May be empty (the delta only
    /// repeated whitespace).
    public mutating func pass(_ delta: String) -> String {
        if settled { return delta }
        let scalars = delta.unicodeScalars
        var i = scalars.startIndex
        while i < scalars.endIndex {
            if matched == whitespace.count || scalars[i] != whitespace[matched] {
                settled = true
                break
            }
            matched += 1
            i = scalars.index(after: i)
        }
        if matched == whitespace.count { settled = true }
        return String(scalars[i...])
    }
}
