import Foundation

/// The operator's system prompts (`RELAY_SYSTEM_PROMPTS`, docs/PROTOCOL.md §3.1): a prompt the
/// relay puts first in every request, by model, else by budget tier, else a default, so the
/// app's backend — not the client — owns the instructions. Pure: `parse` reads the JSON text;
/// reading a `file:///path` value is the caller's (`FileURLSetting`).
///
/// Specification: one JSON object
/// `{"default"?: str, "models"?: {model: str, …}, "tiers"?: {tier: str, …}}`; each prompt 1…65,536
/// bytes. No other key.
public struct SystemPromptPolicy: Sendable, Equatable {
    /// The prompt of any request without a model's or a tier's.
    public var defaultPrompt: String?
    /// Prompts by model name (the resolved model: `RELAY_MODELS`' default when the request names none).
    public var byModel: [String: String]
    /// Prompts by budget tier (the effective tier).
    public var byTier: [String: String]

    /// No prompt: requests go upstream as sent.
    public init(defaultPrompt: String? = nil, byModel: [String: String] = [:], byTier: [String: String] = [:]) {
        self.defaultPrompt = defaultPrompt
        self.byModel = byModel
        self.byTier = byTier
    }

    /// Whether no prompt is set.
    public var isEmpty: Bool { defaultPrompt == nil && byModel.isEmpty && byTier.isEmpty }

    /// The prompt for a request of `model` (nil: the upstream's default) by a caller of `tier`:
    /// the model's, else the tier's, else the default; `nil` when none applies.
    public func prompt(model: String?, tier: String) -> String? {
        if let model, let p = byModel[model] { return p }
        return byTier[tier] ?? defaultPrompt
    }

    /// Why a specification was refused.
    public struct ParseError: Error, Sendable, Equatable, CustomStringConvertible {
        public let message: String
        public var description: String { message }
    }

    /// Reads the JSON specification.
    /// - Throws: `ParseError` naming the variable and the problem (not JSON, an unknown key, a
    ///   prompt that is not a string of 1…65,536 bytes).
    public static func parse(_ text: String) throws -> SystemPromptPolicy {
        func fail(_ m: String) -> ParseError { ParseError(message: "RELAY_SYSTEM_PROMPTS: \(m)") }
        guard let obj = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
            throw fail("not a JSON object {\"default\", \"models\", \"tiers\"}")
        }
        if let k = obj.keys.sorted().first(where: { !["default", "models", "tiers"].contains($0) }) {
            throw fail("unknown key \"\(k)\" (known: default, models, tiers)")
        }
        func prompt(_ v: Any?, _ where_: String) throws -> String? {
            guard let v else { return nil }
            guard let s = v as? String, (1...65_536).contains(s.utf8.count) else {
                throw fail("\(where_) must be a string of 1 to 65536 bytes")
            }
            return s
        }
        func map(_ key: String) throws -> [String: String] {
            guard let v = obj[key] else { return [:] }
            guard let m = v as? [String: Any] else { throw fail("\"\(key)\" must be an object of prompts by name") }
            var out: [String: String] = [:]
            for (name, p) in m { out[name] = try prompt(p, "\(key).\(name)") }
            return out
        }
        return SystemPromptPolicy(defaultPrompt: try prompt(obj["default"], "default"), byModel: try map("models"),
                                  byTier: try map("tiers"))
    }
}
