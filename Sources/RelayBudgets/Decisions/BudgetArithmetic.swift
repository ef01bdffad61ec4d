import RelayCore

/// The token arithmetic of budgets (docs/PROTOCOL.md §9, docs/DATA_MODEL.md §9): what a
/// request may reserve at admission, the `max_tokens` the upstream gets, and what a settlement charges.
/// Pure; the Redis side (`RelayRedis.BudgetLedger`, `Scripts.reserve`/`settle`) applies
/// the same clamp atomically. Units: tokens.
///
/// What counts: **prompt + completion tokens** of every generation, as in the
/// upstream's `usage` (`total_tokens`). Before the upstream reports usage, prompt tokens
/// are estimated with `ChatRequest.estimatePromptTokens` (RelayCore).
public enum BudgetArithmetic {
    /// The completion tokens a request asks for before the budget: the request's
    /// `max_tokens`, else `defaultCap`, never above `cap`; in summary mode never above
    /// `summaryCap` (summary mode keeps its cap).
    public static func wantedCompletion(maxTokens: Int?, summary: Bool, defaultCap: Int, cap: Int, summaryCap: Int) -> Int {
        if summary { return max(1, min(maxTokens ?? summaryCap, summaryCap, cap)) }
        return max(1, min(maxTokens ?? defaultCap, cap))
    }

    /// A reservation's outcome for the caller.
    public struct Grant: Sendable, Equatable {
        /// Tokens reserved (prompt estimate + completion allowed).
        public var reserved: Int
        /// `max_tokens` for the upstream: `reserved - promptEstimate`.
        public var maxTokens: Int
        /// `true` when the budget, not the request, set `maxTokens` (the `done` event
        /// then says `budget_limited` when the answer stopped at it).
        public var limitedByBudget: Bool

        /// A grant as it was made (a takeover reads it back from `StoredRequest`).
        public init(reserved: Int, maxTokens: Int, limitedByBudget: Bool) {
            self.reserved = reserved
            self.maxTokens = maxTokens
            self.limitedByBudget = limitedByBudget
        }
    }

    /// Clamps a request to what remains: `grant = min(want, limit - used - reserved)`
    /// where `want = promptEstimate + wantedCompletion`. `nil` when fewer than
    /// `minimumCompletion` completion tokens would remain: `429 token_budget_exhausted`
    /// before the stream.
    public static func grant(promptEstimate: Int, wantedCompletion: Int, remaining: Int, minimumCompletion: Int) -> Grant? {
        let want = promptEstimate + wantedCompletion
        let granted = min(want, max(0, remaining))
        let completion = granted - promptEstimate
        guard completion >= max(1, min(minimumCompletion, wantedCompletion)) else { return nil }
        return Grant(reserved: granted, maxTokens: completion, limitedByBudget: granted < want)
    }

    /// The grant for this request from the tokens the ledger holds under its id (its
    /// own reservation, or a concurrent retry's of the same id): `max_tokens` is what
    /// is left after this request's prompt estimate, at least 1.
    public static func grant(reservedTokens: Int, promptEstimate: Int, wantedCompletion: Int) -> Grant {
        let completion = max(1, min(wantedCompletion, reservedTokens - promptEstimate))
        return Grant(reserved: reservedTokens, maxTokens: completion, limitedByBudget: completion < wantedCompletion)
    }

    /// The relay's own enforcement of a grant's completion tokens. The upstream gets
    /// `max_tokens`, but an OpenAI-compatible server may ignore it (some do; reasoning
    /// models read `max_completion_tokens`), so the generation counts what it streams —
    /// one token per `delta` event (neither supported dialect reports a running count
    /// before its last chunk) — and at the grant cancels the upstream and ends with `done`
    /// (`finish_reason: "length"`, `"budget_limited": true` when the budget set the cap).
    public struct CompletionCap: Sendable, Equatable {
        /// Completion tokens the generation may stream (`Grant.maxTokens`, at least 1).
        public let granted: Int
        /// Whether the budget, not the request's `max_tokens` or the tier cap, set `granted`.
        public let limitedByBudget: Bool

        public init(_ grant: Grant) {
            granted = max(1, grant.maxTokens)
            limitedByBudget = grant.limitedByBudget
        }

        /// `true` once `streamed` completion tokens reach the grant: the generation must
        /// stop the upstream now and end the stream (`ending`).
        public func isReached(streamed: Int) -> Bool { streamed >= granted }

        /// The `done` that ends a stream cut at the grant: `finish_reason: "length"`, usage =
        /// the prompt (`reportedPrompt`, else the estimate) + the completion tokens streamed
        /// (what settlement charges, `BudgetArithmetic.charge`).
        public func ending(reportedPrompt: Int?, promptEstimate: Int, streamed: Int) -> (finishReason: FinishReason, usage: Usage) {
            (.length, Usage(promptTokens: max(0, reportedPrompt ?? promptEstimate), completionTokens: max(0, streamed)))
        }
    }

    /// Tokens a settlement charges: the upstream's prompt tokens when it reported them
    /// (else the estimate) plus the completion tokens generated (the upstream's count,
    /// else the number of `delta` events).
    public static func charge(reportedPrompt: Int?, promptEstimate: Int, completion: Int) -> Int {
        max(0, reportedPrompt ?? promptEstimate) + max(0, completion)
    }

    /// What another instance charges for a stream whose owner died (`upstream_lost`):
    /// the prompt estimate stored with the stream plus one token per `delta` event —
    /// every event before the final one is a delta, so `lastSeqBefore` of them.
    public static func chargeForLostStream(promptEstimate: Int, lastSeqBefore: UInt64) -> Int {
        promptEstimate + Int(lastSeqBefore)
    }
}
