import Foundation

/// The sampling settings a client may set on `POST /api/chat/stream` (docs/PROTOCOL.md §3.1),
/// named and ranged as OpenAI's Chat Completions API names them, forwarded to the upstreams
/// that take them (docs/UPSTREAMS.md). The relay's operator chooses which a client may send
/// (`RELAY_CLIENT_PARAMETERS`); each is `nil` when not sent.
public struct SamplingParameters: Sendable, Equatable {
    /// `temperature`, 0…2.
    public var temperature: Double?
    /// `top_p` (nucleus sampling), 0…1.
    public var topP: Double?
    /// `stop`: up to 4 sequences of 1…200 bytes each (a string is one sequence).
    public var stop: [String]?
    /// `seed`: an integer of magnitude at most 2^53 (exact in a JSON number).
    public var seed: Int?
    /// `presence_penalty`, −2…2.
    public var presencePenalty: Double?
    /// `frequency_penalty`, −2…2.
    public var frequencyPenalty: Double?

    public init(temperature: Double? = nil, topP: Double? = nil, stop: [String]? = nil, seed: Int? = nil,
                presencePenalty: Double? = nil, frequencyPenalty: Double? = nil) {
        self.temperature = temperature
        self.topP = topP
        self.stop = stop
        self.seed = seed
        self.presencePenalty = presencePenalty
        self.frequencyPenalty = frequencyPenalty
    }

    /// Every field's JSON name, in the order documented.
    public static let names = ["temperature", "top_p", "stop", "seed", "presence_penalty", "frequency_penalty"]

    /// The JSON names of the fields that are set, in `names` order.
    public var setNames: [String] {
        var out: [String] = []
        if temperature != nil { out.append("temperature") }
        if topP != nil { out.append("top_p") }
        if stop != nil { out.append("stop") }
        if seed != nil { out.append("seed") }
        if presencePenalty != nil { out.append("presence_penalty") }
        if frequencyPenalty != nil { out.append("frequency_penalty") }
        return out
    }

    /// The set fields as JSON values by name (`stop` always as an array).
    public var jsonObject: [String: Any] {
        var o: [String: Any] = [:]
        if let temperature { o["temperature"] = temperature }
        if let topP { o["top_p"] = topP }
        if let stop { o["stop"] = stop }
        if let seed { o["seed"] = seed }
        if let presencePenalty { o["presence_penalty"] = presencePenalty }
        if let frequencyPenalty { o["frequency_penalty"] = frequencyPenalty }
        return o
    }

    /// Reads the sampling fields of a request object (JSON `null` is "not set").
    /// - Throws: `APIError` 400 `invalid_request` naming the field and its range.
    public static func parse(_ obj: [String: Any]) throws -> SamplingParameters {
        var p = SamplingParameters()
        p.temperature = try number(obj, "temperature", 0...2)
        p.topP = try number(obj, "top_p", 0...1)
        p.presencePenalty = try number(obj, "presence_penalty", -2...2)
        p.frequencyPenalty = try number(obj, "frequency_penalty", -2...2)
        if let v = obj["seed"], !(v is NSNull) {
            let limit = Double(1 << 53)
            // Checked on the integer as parsed, not its Double: 2^53 + 1 would round to 2^53.
            guard let n = v as? NSNumber, !ChatRequest.isBoolean(n), n.doubleValue == n.doubleValue.rounded(),
                  abs(n.doubleValue) <= limit, let exact = Int64(exactly: n.doubleValue), n.int64Value == exact else {
                throw APIError.invalidRequest("\"seed\" must be an integer of magnitude at most 2^53")
            }
            p.seed = Int(n.int64Value)
        }
        if let v = obj["stop"], !(v is NSNull) {
            let list: [Any] = (v as? String).map { [$0] } ?? (v as? [Any]) ?? [0]
            let strings = list.compactMap { $0 as? String }
            guard strings.count == list.count, (1...4).contains(strings.count),
                  strings.allSatisfy({ (1...200).contains($0.utf8.count) }) else {
                throw APIError.invalidRequest("\"stop\" must be a string or an array of 1 to 4 strings, each 1 to 200 bytes")
            }
            p.stop = strings
        }
        return p
    }

    private static func number(_ obj: [String: Any], _ name: String, _ range: ClosedRange<Double>) throws -> Double? {
        guard let v = obj[name], !(v is NSNull) else { return nil }
        guard let n = v as? NSNumber, !ChatRequest.isBoolean(n), n.doubleValue.isFinite, range.contains(n.doubleValue) else {
            throw APIError.invalidRequest("\"\(name)\" must be a number from \(format(range.lowerBound)) to \(format(range.upperBound))")
        }
        return n.doubleValue
    }

    private static func format(_ d: Double) -> String { d == d.rounded() ? String(Int(d)) : String(d) }
}
