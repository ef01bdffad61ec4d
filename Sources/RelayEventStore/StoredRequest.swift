import Foundation
import RelayCore

/// What another instance needs to continue a stream whose owner was lost (takeover,
/// docs/DATA_MODEL.md §6.1): the request as the upstream got it (messages after the
/// relay's policy, model, mode, `max_tokens` already clamped to the grant) and the budget
/// reservation it draws on. Kept in `relay:{id}:request` (`StreamKeys.request`) for the
/// stream's lifetime, written by `Scripts.create`.
///
/// `encoded()` / `decode(_:)` are the one place its bytes are made and read.
public struct StoredRequest: Sendable, Equatable {
    /// The request sent upstream, `maxTokens` = the granted completion tokens.
    public var request: ChatRequest
    /// The budget hash charged (`BudgetLedger.key`), empty when none.
    public var budgetKey: String
    /// The relay's prompt estimate of `request`, tokens (docs/PROTOCOL.md §9).
    public var promptEstimate: Int
    /// Tokens reserved (prompt estimate + granted completion).
    public var reservedTokens: Int
    /// Whether the budget, not the request, set `maxTokens` (`done` then says `budget_limited`).
    public var limitedByBudget: Bool
    /// The budget's limit for the owner's tier at admission, tokens: a continuation's
    /// re-sent prompt is reserved only within it (`BudgetLedger.extend`).
    public var budgetLimit: Int

    public init(request: ChatRequest, budgetKey: String, promptEstimate: Int, reservedTokens: Int, limitedByBudget: Bool,
                budgetLimit: Int) {
        self.budgetLimit = budgetLimit
        self.request = request
        self.budgetKey = budgetKey
        self.promptEstimate = promptEstimate
        self.reservedTokens = reservedTokens
        self.limitedByBudget = limitedByBudget
    }

    /// The stored form: one JSON object
    /// `{"v":1,"request":{…ChatRequest body…},"budget":str,"prompt":int,"reserved":int,"limited":bool,"limit":int}`.
    /// The request is `ChatRequest.jsonBody` as it is, so the tools' schemas keep their member
    /// order and number literals.
    public func encoded() -> String {
        let obj: [String: Any] = ["v": 1, "budget": budgetKey, "prompt": promptEstimate,
                                  "reserved": reservedTokens, "limited": limitedByBudget, "limit": budgetLimit]
        var data = (try? JSONSerialization.data(withJSONObject: obj, options: [.sortedKeys])) ?? Data("{}".utf8)
        data.removeLast()  // the closing brace of a non-empty object
        data.append(contentsOf: Array(",\"request\":".utf8))
        data.append(request.jsonBody)
        data.append(UInt8(ascii: "}"))
        return String(decoding: data, as: UTF8.self)
    }

    /// Reads `encoded()`'s form (also as written before the request was kept as text).
    /// - Throws: `StoredRequestUnreadable` for anything else (a newer version's form, damage).
    public static func decode(_ s: String) throws -> StoredRequest {
        guard let obj = try? JSONSerialization.jsonObject(with: Data(s.utf8)) as? [String: Any],
              (obj["v"] as? NSNumber)?.intValue == 1, obj["request"] is [String: Any],
              // The request's own text (`JSONValue` keeps member order), not a re-serialization.
              let value = try? LenientJSON.parse(s), let body = value["request"],
              let request = try? ChatRequest.parse(Data(body.compactJSON.utf8)),
              let budget = obj["budget"] as? String, let prompt = (obj["prompt"] as? NSNumber)?.intValue,
              let reserved = (obj["reserved"] as? NSNumber)?.intValue, let limited = obj["limited"] as? Bool,
              let limit = (obj["limit"] as? NSNumber)?.intValue
        else { throw StoredRequestUnreadable() }
        return StoredRequest(request: request, budgetKey: budget, promptEstimate: prompt, reservedTokens: reserved,
                             limitedByBudget: limited, budgetLimit: limit)
    }
}

/// `StoredRequest.decode` could not read the stored bytes.
public struct StoredRequestUnreadable: Error, Sendable, Equatable {
    public init() {}
}
