import Foundation
import RelayCore

/// The caller's token budget, from `GET /api/budget`
/// (`{"tier","limit","used","reserved","remaining","period"}`, docs/PROTOCOL.md §9) and then each
/// `done`'s usage, so the app can disable Send *before* making a request that would fail
/// with 429 `token_budget_exhausted`. Units: tokens.
///
/// With reservations (docs/PROTOCOL.md §9) the relay reserves at admission what an answer may spend
/// and reports `remaining = max(0, limit − used − reserved)`: tokens held by answers still
/// running are not available. The pill shows `remaining` as the relay reports it; a
/// budget-limited `done` sets it to 0 (see `apply(_:budgetLimited:)`).
public struct BudgetState: Sendable, Equatable {
    /// Tier name (`free`, `pro`, …).
    public var tier: String
    /// Tokens allowed per period.
    public var limit: Int
    /// Tokens used (settled) this period.
    public var used: Int
    /// Tokens reserved by answers still running (0 when the relay's reply has no `reserved`).
    public var reserved: Int
    /// Tokens a new request may still reserve this period: `limit − used − reserved` as
    /// the relay computed it (never negative).
    public var remaining: Int
    /// The period as the relay names it (`2025-11`, `month`, `day`, …).
    public var period: String

    /// Warning below this fraction of `limit` remaining (20 %).
    public static let warningFraction = 0.2

    public init(tier: String, limit: Int, used: Int, reserved: Int = 0, remaining: Int, period: String) {
        self.tier = tier
        self.limit = limit
        self.used = used
        self.reserved = max(0, reserved)
        self.remaining = max(0, remaining)
        self.period = period
    }

    /// Decodes the `GET /api/budget` body. Missing `reserved` is 0; missing `remaining` is
    /// `limit − used − reserved`; a present `remaining` is kept as the relay reports it.
    /// - Throws: `BudgetDecodingError` when it is not a JSON object with numeric `limit`.
    public init(json: Data) throws {
        guard let obj = (try? JSONSerialization.jsonObject(with: json)) as? [String: Any],
              let limit = (obj["limit"] as? NSNumber)?.intValue else {
            throw BudgetDecodingError()
        }
        let used = (obj["used"] as? NSNumber)?.intValue ?? 0
        let reserved = (obj["reserved"] as? NSNumber)?.intValue ?? 0
        let remaining = (obj["remaining"] as? NSNumber)?.intValue ?? (limit - used - reserved)
        self.init(tier: obj["tier"] as? String ?? "", limit: limit, used: used, reserved: reserved, remaining: remaining,
                  period: obj["period"] as? String ?? "month")
    }

    /// Counts a finished generation: its `total_tokens` are used.
    ///
    /// - Parameter budgetLimited: the `done` said `"budget_limited": true`. The relay
    ///   granted that answer everything not yet used or reserved and the answer stopped
    ///   there, so after its settlement nothing a new request could reserve is left —
    ///   at most the prompt estimate's error, below `RELAY_BUDGET_MIN_TOKENS`, which the
    ///   relay refuses with 429. `remaining` becomes 0 and Send is disabled until a fresh
    ///   `GET /api/budget` reports tokens again (another answer released its reservation,
    ///   a new period began). Subtracting the usage alone is not enough: the `remaining`
    ///   read before the answer did not know what concurrent answers reserved meanwhile,
    ///   nor the upstream's own prompt count, and the pill would claim tokens the relay
    ///   would refuse.
    public mutating func apply(_ usage: Usage, budgetLimited: Bool = false) {
        used += usage.totalTokens
        remaining = budgetLimited ? 0 : max(0, remaining - usage.totalTokens)
    }

    /// The note an app shows under an answer the budget cut (`RenderUpdate.budgetLimited`):
    /// `Answer shortened: this month's token budget is used up` (`today's`, `this week's`
    /// for daily and weekly periods).
    public var budgetLimitedNote: String { Self.budgetLimitedNote(period: period) }

    /// `budgetLimitedNote` for a period named as in `GET /api/budget` (`month` when unknown).
    public static func budgetLimitedNote(period: String = "month") -> String {
        "Answer shortened: \(periodPhrase(period))'s token budget is used up"
    }

    /// `false` at 0 remaining: the app disables Send.
    public var canSend: Bool { remaining > 0 }

    /// `true` when less than 20 % of `limit` remains.
    public var isWarning: Bool {
        guard limit > 0 else { return remaining <= 0 }
        return Double(remaining) < Double(limit) * Self.warningFraction
    }

    /// The pill: `~2,400 tokens remaining this month`; the count is rounded down to three
    /// significant digits (`conformance/budget.json`) and grouped with `,` (fixed en-US style);
    /// `No tokens remaining this month` at 0.
    public var pillText: String {
        let span = Self.periodPhrase(period)
        if remaining <= 0 { return "No tokens remaining \(span)" }
        let n = Self.approximate(remaining)
        return "~\(Self.grouped(n)) \(n == 1 ? "token" : "tokens") remaining \(span)"
    }

    /// Rounds down to three significant digits (19,522 → 19,500; 499,312 → 499,000; 987
    /// stays 987): never more than 1 % below the real count.
    public static func approximate(_ n: Int) -> Int {
        guard n >= 1_000 else { return n }
        var unit = 1
        while n / unit >= 1_000 { unit *= 10 }
        return n / unit * unit
    }

    /// `2400` → `2,400` (groups of three, comma; en-US, independent of the device locale).
    public static func grouped(_ n: Int) -> String {
        let digits = String(n.magnitude)
        var out = ""
        for (i, c) in digits.enumerated() {
            if i > 0 && (digits.count - i) % 3 == 0 { out.append(",") }
            out.append(c)
        }
        return n < 0 ? "-" + out : out
    }

    /// `this month` for `month`/`monthly`/`YYYY-MM`, `today` for `day`/`daily`/
    /// `YYYY-MM-DD`, `this week` for `week`/`weekly`, else `this <period>`.
    static func periodPhrase(_ p: String) -> String {
        let l = p.lowercased()
        let digitsAndDashes = !l.isEmpty && l.allSatisfy { $0.isASCII && ($0.isNumber || $0 == "-") }
        if l == "month" || l == "monthly" || (digitsAndDashes && l.count == 7) { return "this month" }
        if l == "day" || l == "daily" || (digitsAndDashes && l.count == 10) { return "today" }
        if l == "week" || l == "weekly" || l.contains("-w") { return "this week" }
        return l.isEmpty ? "this month" : "this \(l)"
    }
}

/// The budget body was not `{"tier","limit","used","reserved","remaining","period"}`
/// (at least a numeric `limit`).
public struct BudgetDecodingError: Error, Equatable {}
