import Foundation

/// The `budget_limited` field of a `done` event (docs/PROTOCOL.md §9;
/// `conformance/CLIENT_RULES.md` "Budget-limited answers"): the relay adds
/// `"budget_limited":true` to `{"type":"done","finish_reason":"length","usage":{…}}` when
/// the answer stopped at the token budget reserved for it at admission (the budget, not
/// the request's `max_tokens`, set the upstream's `max_tokens`). Absent means `false`.
///
/// Read from the event's JSON text next to `RelayCore.StreamEvent` (whose cases the
/// relay matches everywhere), so the kit can tell the app without a new event case.
public enum BudgetLimitedFlag {
    /// `true` when `json` is a `done` event object whose `budget_limited` is JSON `true`.
    /// Any other text (a `delta`, an `error`, malformed JSON, `"budget_limited":1`) is
    /// `false`: only the relay's exact flag marks an answer as cut by the budget.
    public static func isSet(inEventJSON json: Data) -> Bool {
        guard let fields = try? JSONDecoder().decode(DoneFields.self, from: json) else { return false }
        return fields.type == "done" && fields.budgetLimited == true
    }

    /// `isSet(inEventJSON:)` for the JSON text of an SSE `data:` line.
    public static func isSet(inEventJSON json: String) -> Bool {
        isSet(inEventJSON: Data(json.utf8))
    }

    /// The two fields read; `budget_limited` must be a JSON boolean (`JSONDecoder` does
    /// not take `1` for `true`; a wrong type fails the decode, hence `false`).
    private struct DoneFields: Decodable {
        var type: String
        var budgetLimited: Bool?
        enum CodingKeys: String, CodingKey {
            case type
            case budgetLimited = "budget_limited"
        }
    }
}
