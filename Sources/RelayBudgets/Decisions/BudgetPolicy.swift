import RelayConfiguration

/// Token budgets per tier (`RELAY_BUDGETS`), in tokens per calendar month (UTC).
public struct BudgetPolicy: Sendable, Equatable {
    /// The specification used when `RELAY_BUDGETS` is unset.
    public static let defaultSpecification = RelayConfig.defaultBudgets
    /// The default tier used when `RELAY_DEFAULT_TIER` (or equivalent) is unset.
    public static let defaultTierName = RelayConfig.defaultTierName

    /// Tokens per month by tier name.
    public let limits: [String: Int]
    /// Tier for tokens without a `tier` claim or with a tier not in `limits`.
    public let defaultTier: String

    /// - Throws: ``BudgetPolicyError`` when `limits` is empty, a limit is negative, or
    ///   `defaultTier` is not one of the tiers.
    public init(limits: [String: Int], defaultTier: String) throws {
        guard !limits.isEmpty else { throw BudgetPolicyError(variable: "RELAY_BUDGETS", "no tiers defined") }
        if let (name, _) = limits.first(where: { $0.value < 0 }) {
            throw BudgetPolicyError(variable: "RELAY_BUDGETS", "tier \"\(name)\" has a negative limit")
        }
        guard limits[defaultTier] != nil else {
            throw BudgetPolicyError(variable: "RELAY_BUDGETS",
                                    "default tier \"\(defaultTier)\" is not defined (tiers: \(limits.keys.sorted().joined(separator: ", ")))")
        }
        self.limits = limits
        self.defaultTier = defaultTier
    }

    /// Parses `name=tokens[,name=tokens…]`, e.g. `free=20000,pro=500000`.
    /// Names are 1–64 of `[A-Za-z0-9_.-]`; tokens a decimal integer 0...10^15; SP/HTAB
    /// around items are ignored; a trailing comma is allowed; duplicates are not.
    /// - Parameter variable: the setting's name used in error messages.
    /// - Throws: ``BudgetPolicyError`` naming `variable` and the faulty item.
    public static func parse(_ specification: String, defaultTier: String = BudgetPolicy.defaultTierName,
                             variable: String = "RELAY_BUDGETS") throws -> BudgetPolicy {
        var limits: [String: Int] = [:]
        let items = specification.split(separator: ",", omittingEmptySubsequences: false)
        for (i, raw) in items.enumerated() {
            let item = raw.trimmingSPHT()
            if item.isEmpty {
                if i == items.count - 1 && i > 0 { continue }
                throw BudgetPolicyError(variable: variable, "item \(i + 1) is empty; expected name=tokens")
            }
            let kv = item.split(separator: "=", omittingEmptySubsequences: false)
            guard kv.count == 2 else {
                throw BudgetPolicyError(variable: variable, "item \(i + 1) \"\(item)\" is not name=tokens")
            }
            let name = kv[0].trimmingSPHT(), value = kv[1].trimmingSPHT()
            guard (1...64).contains(name.utf8.count), name.utf8.allSatisfy(isNameByte) else {
                throw BudgetPolicyError(variable: variable, "item \(i + 1): tier name \"\(name)\" must be 1-64 of [A-Za-z0-9_.-]")
            }
            guard !value.isEmpty, value.utf8.count <= 16, value.utf8.allSatisfy({ (48...57).contains($0) }),
                  let n = Int(value), n <= 1_000_000_000_000_000 else {
                throw BudgetPolicyError(variable: variable, "item \(i + 1): tokens \"\(value)\" for tier \"\(name)\" must be an integer 0...10^15")
            }
            guard limits[String(name)] == nil else {
                throw BudgetPolicyError(variable: variable, "tier \"\(name)\" is defined twice")
            }
            limits[String(name)] = n
        }
        return try BudgetPolicy(limits: limits, defaultTier: defaultTier)
    }

    /// The tier that applies to a token's `tier` claim: the claim when it names a configured
    /// tier, otherwise ``defaultTier``.
    public func effectiveTier(_ claimTier: String?) -> String {
        if let claimTier, limits[claimTier] != nil { return claimTier }
        return defaultTier
    }

    /// Tokens per month for a token's `tier` claim (nil or unknown → the default tier).
    public func limit(forTier tier: String?) -> Int {
        limits[effectiveTier(tier)] ?? 0
    }

    /// The budget period containing `now` (unix seconds): `YYYY-MM` in UTC, as used in the
    /// Redis key `relay:budget:{user}:{YYYY-MM}` (docs/DATA_MODEL.md §9). Proleptic Gregorian calendar.
    public static func period(now: Int64) -> String {
        let days = now >= 0 ? now / 86_400 : (now - 86_399) / 86_400
        let (y, m) = civilYearMonth(daysSinceEpoch: days)
        let year = String(y)
        let padded = y >= 0 && y < 1000 ? String(repeating: "0", count: 4 - year.count) + year : year
        return padded + (m < 10 ? "-0\(m)" : "-\(m)")
    }

    /// Year and month of a day count since 1970-01-01 (H. Hinnant's `civil_from_days`).
    static func civilYearMonth(daysSinceEpoch: Int64) -> (Int64, Int64) {
        let z = daysSinceEpoch + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let m = mp < 10 ? mp + 3 : mp - 9
        let y = yoe + era * 400 + (m <= 2 ? 1 : 0)
        return (y, m)
    }

    private static func isNameByte(_ c: UInt8) -> Bool {
        switch c {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "-"):
            return true
        default: return false
        }
    }
}

/// A bad budget setting; `message` names the variable, e.g.
/// `RELAY_BUDGETS: item 2 "pro" is not name=tokens`.
public struct BudgetPolicyError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The setting at fault, e.g. `RELAY_BUDGETS`.
    public var variable: String
    /// The full message, starting with the variable name.
    public var message: String
    /// `message` becomes `"<variable>: <detail>"`.
    public init(variable: String, _ detail: String) {
        self.variable = variable
        self.message = "\(variable): \(detail)"
    }
    public var description: String { message }
}

extension Substring {
    fileprivate func trimmingSPHT() -> Substring {
        var s = self
        while let f = s.first, f == " " || f == "\t" { s.removeFirst() }
        while let l = s.last, l == " " || l == "\t" { s.removeLast() }
        return s
    }
}
