/// Which upstream models each budget tier may use (`RELAY_MODELS`; docs/PROTOCOL.md §9), and
/// which one a request gets when it names none. Pure.
///
/// Specification: `tier=model[|model…][,tier=…]`, e.g.
/// `free=gpt-4o-mini,pro=gpt-4o-mini|gpt-4o`; the first model of a tier is its default.
/// A tier not listed gets the default tier's list (``BudgetPolicy/defaultTier``), or
/// — when that is not listed either — only `fallbackModel`. An empty specification
/// allows only `fallbackModel` (`UPSTREAM_MODEL`) to every tier; with no fallback
/// either (the simulated upstream's default) the upstream's own models apply.
public struct ModelPolicy: Sendable, Equatable {
    /// Allowed models by tier, the default first.
    public let models: [String: [String]]
    /// `UPSTREAM_MODEL`, used when a tier has no list.
    public let fallbackModel: String?

    /// - Throws: ``BudgetPolicyError`` (variable `RELAY_MODELS`) for an item that is not
    ///   `tier=model[|model…]`, an empty or over-long model name, or a tier listed twice.
    public init(specification: String, fallbackModel: String?, variable: String = "RELAY_MODELS") throws {
        var models: [String: [String]] = [:]
        for (i, raw) in specification.split(separator: ",").enumerated() {
            let item = raw.trimmingCharacters(in: " \t")
            if item.isEmpty { continue }
            let kv = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard kv.count == 2, !kv[0].isEmpty else {
                throw BudgetPolicyError(variable: variable, "item \(i + 1) \"\(item)\" is not tier=model[|model…]")
            }
            let tier = String(kv[0]).trimmingCharacters(in: " \t")
            let list = kv[1].split(separator: "|", omittingEmptySubsequences: false).map { String($0).trimmingCharacters(in: " \t") }
            guard list.allSatisfy({ !$0.isEmpty && $0.utf8.count <= 200 }) else {
                throw BudgetPolicyError(variable: variable, "item \(i + 1): tier \"\(tier)\" has an empty or over-long model name")
            }
            guard models[tier] == nil else { throw BudgetPolicyError(variable: variable, "tier \"\(tier)\" is listed twice") }
            models[tier] = list
        }
        self.models = models
        self.fallbackModel = (fallbackModel?.isEmpty ?? true) ? nil : fallbackModel
    }

    /// The models `tier` may use; `nil` means no relay-side list (the upstream's own
    /// models apply: only the simulated upstream with no `UPSTREAM_MODEL`). A list that
    /// holds the simulated upstream's `simulated` also holds its agent answer,
    /// `simulated-tools` (docs/UPSTREAMS.md), after the listed models.
    public func allowed(tier: String, defaultTier: String) -> [String]? {
        guard let l = models[tier] ?? models[defaultTier] ?? fallbackModel.map({ [$0] }) else { return nil }
        if l.contains(ModelPolicy.simulated) && !l.contains(ModelPolicy.simulatedTools) { return l + [ModelPolicy.simulatedTools] }
        return l
    }

    /// The simulated upstream's default model and its agent answer, allowed together.
    static let simulated = "simulated"
    static let simulatedTools = "simulated-tools"

    /// The model a request of `tier` gets: the requested one when allowed, the tier's
    /// default when none was requested; `nil` when there is no list (upstream decides).
    /// - Throws: ``ModelNotAllowed`` when `requested` is not in the tier's list.
    public func resolve(requested: String?, tier: String, defaultTier: String) throws -> String? {
        guard let list = allowed(tier: tier, defaultTier: defaultTier) else { return requested }
        guard let requested else { return list.first }
        guard list.contains(requested) else { throw ModelNotAllowed(model: requested, tier: tier, allowed: list) }
        return requested
    }
}

/// A request named a model its tier may not use (`400 model_not_allowed`).
public struct ModelNotAllowed: Error, Sendable, Equatable, CustomStringConvertible {
    /// The model requested.
    public var model: String
    /// The caller's effective tier.
    public var tier: String
    /// The models the tier may use.
    public var allowed: [String]
    public var description: String {
        "model \"\(model)\" is not available to the \(tier) tier (allowed: \(allowed.joined(separator: ", ")))"
    }
}

extension StringProtocol {
    fileprivate func trimmingCharacters(in set: String) -> String {
        var s = Substring(self)
        while let f = s.first, set.contains(f) { s.removeFirst() }
        while let l = s.last, set.contains(l) { s.removeLast() }
        return String(s)
    }
}
