import RelayCore

/// The built-in agent answer of the simulated upstream (model `simulated-tools`,
/// docs/UPSTREAMS.md): what an agent backend streams for a drafting request — reasoning,
/// two tool calls whose arguments arrive in several pieces, a source, then the answer's
/// text. Deterministic: the same events every time, so a resumed or continued answer can
/// be compared event for event with an uninterrupted one. Original text written for this
/// project (a fixture, not legal advice).
///
/// Like a backend that runs its tools itself, each call's `tool_result` follows its
/// `tool_call_end`.
public enum SimulatedAgentAnswer {
    /// The model name that selects it.
    public static let model = "simulated-tools"

    /// The reasoning, streamed as `reasoning` pieces (one per token).
    static let reasoning = "The user wants a short mutual NDA for a supplier in Riyadh. Before drafting I should "
        + "confirm which law governs a contract between the two companies and take today's date for the "
        + "effective date, then keep the draft brief."

    /// The two tool calls: id, name, arguments' JSON (streamed a few characters at a time),
    /// and the output the backend's tool returned.
    static let calls: [(id: String, name: String, arguments: String, output: String)] = [
        ("call_1", "lookup_governing_law", #"{"country":"SA","contract_type":"mutual_nda","parties":["Acme Trading","Najd Supplies"]}"#,
         #"{"law":"Civil Transactions Law (Royal Decree M/191)","courts":"Riyadh","notes":["Arabic text prevails"]}"#),
        ("call_2", "current_date", #"{"timezone":"Asia/Riyadh"}"#, #"{"date":"2026-12-07","timezone":"Asia/Riyadh"}"#),
    ]

    /// The source the answer cites.
    static let source = AnswerPart.source(id: "src_1", url: "https://example.com/guides/saudi-contract-law",
                                          title: "Saudi Civil Transactions Law: an overview")

    /// The answer's text, streamed as `delta`s (one per token).
    static let text = "**Mutual Non-Disclosure Agreement**\n\nEffective date: the date both parties sign.\n\n"
        + "1. **Confidential Information.** Each party keeps the other's business, pricing and supplier "
        + "information confidential and uses it only to evaluate the supply arrangement.\n"
        + "2. **Term.** The obligations last three years from the effective date.\n"
        + "3. **Governing law.** The laws of the Kingdom of Saudi Arabia govern this agreement; disputes go "
        + "to the competent courts of Riyadh.\n\nSign below to accept these terms."

    /// Characters per argument piece.
    static let argumentPiece = 6

    /// Every event of the answer, in order (no terminal event).
    public static let events: [StreamEvent] = {
        var out: [StreamEvent] = SimulatedTokenizer.tokens(reasoning).map { .part(.reasoning($0)) }
        for call in calls {
            out.append(.part(.toolCallStart(id: call.id, name: call.name)))
            var rest = Substring(call.arguments)
            while !rest.isEmpty {
                out.append(.part(.toolCallDelta(id: call.id, arguments: String(rest.prefix(argumentPiece)))))
                rest = rest.dropFirst(argumentPiece)
            }
            // The arguments are this file's own constants: valid JSON.
            out.append(.part(.toolCallEnd(id: call.id, name: call.name, input: try! LenientJSON.parse(call.arguments))))
            out.append(.part(.toolResult(id: call.id, output: try! LenientJSON.parse(call.output))))
        }
        out.append(.part(source))
        out += SimulatedTokenizer.tokens(text).map { .delta($0) }
        return out
    }()

    /// Whether `e` is a generated token (a `delta`, a reasoning or argument piece,
    /// `AnswerPart.countsAsToken`).
    static func isToken(_ e: StreamEvent) -> Bool {
        switch e {
        case .delta: return true
        case .part(let p): return p.countsAsToken
        case .done, .error: return false
        }
    }

    /// How many of `events` are sent under `maxTokens` (tokens): every event up to and
    /// including the `maxTokens`-th token (all of them for `nil` or enough tokens).
    static func count(maxTokens: Int?) -> Int {
        guard let m = maxTokens else { return events.count }
        var tokens = 0
        for (i, e) in events.enumerated() where isToken(e) {
            tokens += 1
            if tokens == m { return i + 1 }
        }
        return m <= 0 ? 0 : events.count
    }

    /// Tokens among the first `n` events.
    static func tokens(inFirst n: Int) -> Int { events.prefix(n).reduce(0) { $0 + (isToken($1) ? 1 : 0) } }
}
