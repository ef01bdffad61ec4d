import Foundation

/// A function the model may call, declared in a request's `tools` (docs/PROTOCOL.md §3.1) as
/// OpenAI's Chat Completions API declares one (API reference, "Create chat completion" →
/// `tools`): `{"type":"function","function":{"name","description"?,"parameters"?,"strict"?}}`.
public struct ChatTool: Sendable, Equatable {
    /// The function's name: `ChatTool.nameRule`, unique within the request.
    public var name: String
    /// What the function does, for the model; `nil` when not sent.
    public var description: String?
    /// The JSON Schema of the arguments, always a JSON object, with its members in the client's
    /// order (OpenAI's structured outputs generate the properties in that order); `nil` when
    /// not sent.
    public var parameters: JSONValue?
    /// OpenAI's strict schema adherence; `nil` when not sent.
    public var strict: Bool?

    /// A tool as `ChatTool.parseList` reads one; `parameters`, when given, is a JSON object.
    public init(name: String, description: String? = nil, parameters: JSONValue? = nil, strict: Bool? = nil) {
        self.name = name
        self.description = description
        self.parameters = parameters
        self.strict = strict
    }

    /// Most tools a request declares (OpenAI's limit).
    public static let maxTools = 128
    /// Most bytes the declared tools take as compact JSON (`jsonText` of each, joined by
    /// commas inside `[` `]`): 256 KiB.
    public static let maxJSONBytes = 262_144
    /// What a function name must be, in tools and in tool calls (OpenAI's rule for
    /// `function.name`, which Anthropic's tool names also keep).
    public static let nameRule = "1 to 64 characters of A-Z a-z 0-9 _ -"

    /// Whether `name` keeps `nameRule`.
    public static func isValidName(_ name: String) -> Bool {
        (1...64).contains(name.utf8.count)
            && name.utf8.allSatisfy { $0 == 0x5F || $0 == 0x2D || (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) }
    }

    /// The tool as compact JSON in OpenAI's shape, members in the order documented above and
    /// only those sent: what an OpenAI-compatible upstream gets, and what the request stores.
    public var jsonText: String {
        var out = "{\"type\":\"function\",\"function\":{\"name\":" + JSONText.quoted(name)
        if let description { out += ",\"description\":" + JSONText.quoted(description) }
        if let parameters { out += ",\"parameters\":" + parameters.compactJSON }
        if let strict { out += ",\"strict\":" + (strict ? "true" : "false") }
        return out + "}}"
    }

    /// `tools` as compact JSON: `[` the tools' `jsonText` joined by commas `]`.
    public static func jsonText(_ tools: [ChatTool]) -> String {
        "[" + tools.map(\.jsonText).joined(separator: ",") + "]"
    }

    /// Reads a request's `tools` (docs/PROTOCOL.md §3.1); `nil` (absent or `null`) and `[]` are
    /// no tools.
    /// - Throws: `APIError` 400 `invalid_request` naming the tool's index and the rule it
    ///   breaks: not an array or more than `maxTools`; an item that is not
    ///   `{"type":"function","function":{…}}`; an unknown field in `function`; a name that
    ///   breaks `nameRule` or repeats an earlier tool's; a `description` that is not a string,
    ///   `parameters` that are not a JSON object, a `strict` that is not a boolean; more than
    ///   `maxJSONBytes` in all.
    public static func parseList(_ value: JSONValue?) throws -> [ChatTool] {
        guard let value, !value.isNull else { return [] }
        guard case .array(let items) = value else {
            throw APIError.invalidRequest("\"tools\" must be an array of at most \(maxTools) tools")
        }
        guard items.count <= maxTools else {
            throw APIError.invalidRequest("\"tools\" has \(items.count) tools, at most \(maxTools)")
        }
        var tools: [ChatTool] = []
        var seen: [String: Int] = [:]
        for (i, item) in items.enumerated() {
            let at = "tools[\(i)]"
            guard let keys = item.memberNames, Set(keys) == ["type", "function"], keys.count == 2,
                  item["type"]?.stringValue == "function", let function = item["function"], let fields = function.memberNames else {
                throw APIError.invalidRequest("\(at) must be {\"type\": \"function\", \"function\": {\"name\": string, …}}")
            }
            if let unknown = fields.first(where: { !["name", "description", "parameters", "strict"].contains($0) }) {
                throw APIError.invalidRequest("\(at).function has an unknown field \"\(unknown)\" (known: name, description, parameters, strict)")
            }
            guard let name = function["name"]?.stringValue, isValidName(name) else {
                throw APIError.invalidRequest("\(at).function.name must be \(nameRule)")
            }
            if let first = seen[name] {
                throw APIError.invalidRequest("\(at).function.name \"\(name)\" repeats tools[\(first)]'s: tool names must be unique")
            }
            seen[name] = i
            var tool = ChatTool(name: name)
            if let d = function["description"], !d.isNull {
                guard let s = d.stringValue else { throw APIError.invalidRequest("\(at).function.description must be a string") }
                tool.description = s
            }
            if let p = function["parameters"], !p.isNull {
                guard p.memberNames != nil else {
                    throw APIError.invalidRequest("\(at).function.parameters must be a JSON object (a JSON Schema)")
                }
                tool.parameters = p
            }
            if let s = function["strict"], !s.isNull {
                guard case .bool(let b) = s else { throw APIError.invalidRequest("\(at).function.strict must be true or false") }
                tool.strict = b
            }
            tools.append(tool)
        }
        let bytes = jsonText(tools).utf8.count
        guard bytes <= maxJSONBytes else {
            throw APIError.invalidRequest("\"tools\" takes \(bytes) bytes of JSON, at most \(maxJSONBytes)")
        }
        return tools
    }
}

/// Whether and which tool the model must call: a request's `tool_choice` (docs/PROTOCOL.md
/// §3.1), as OpenAI's Chat Completions API names the choices.
public enum ToolChoice: Sendable, Equatable {
    /// `"auto"`: the model decides (the upstream's default with tools).
    case auto
    /// `"none"`: no tool call; text only.
    case none
    /// `"required"`: at least one tool call.
    case required
    /// `{"type":"function","function":{"name":…}}`: a call of this tool.
    case function(String)

    /// The choice as its JSON value.
    public var jsonObject: Any {
        switch self {
        case .auto: return "auto"
        case .none: return "none"
        case .required: return "required"
        case .function(let name): return ["type": "function", "function": ["name": name]]
        }
    }

    /// Reads `tool_choice` (absent or `null`: `nil`) against the request's `tools`.
    /// - Throws: `APIError` 400 `invalid_request` for another shape, a choice without
    ///   `tools`, or a function that is not one of them.
    public static func parse(_ v: Any?, tools: [ChatTool]) throws -> ToolChoice? {
        guard let v, !(v is NSNull) else { return nil }
        let choice: ToolChoice
        switch v as? String {
        case "auto": choice = .auto
        case "none": choice = .none
        case "required": choice = .required
        default:
            guard let o = v as? [String: Any], Set(o.keys) == ["type", "function"], o["type"] as? String == "function",
                  let f = o["function"] as? [String: Any], Set(f.keys) == ["name"], let name = f["name"] as? String else {
                throw APIError.invalidRequest(#""tool_choice" must be "auto", "none", "required" or {"type": "function", "function": {"name": string}}"#)
            }
            choice = .function(name)
        }
        guard !tools.isEmpty else { throw APIError.invalidRequest(#""tool_choice" needs "tools""#) }
        if case .function(let name) = choice, !tools.contains(where: { $0.name == name }) {
            throw APIError.invalidRequest("\"tool_choice\" names \"\(name)\", which is not one of \"tools\"")
        }
        return choice
    }
}

/// A call an assistant message of the conversation made (its `tool_calls[]`, OpenAI's
/// `{"id","type":"function","function":{"name","arguments"}}`), answered by a later `tool`
/// message with the same `id` (docs/PROTOCOL.md §3.1).
public struct ChatToolCall: Sendable, Equatable {
    /// The call's id: 1 to `maxIDBytes` bytes, unique within the request.
    public var id: String
    /// The function called (`ChatTool.nameRule`).
    public var name: String
    /// The arguments as the model wrote them: JSON text, passed on as a string (upstreams
    /// that take them as a value parse them: docs/UPSTREAMS.md).
    public var arguments: String

    /// A call as an assistant message's `tool_calls` item carries it.
    public init(id: String, name: String, arguments: String) {
        self.id = id
        self.name = name
        self.arguments = arguments
    }

    /// Most bytes of a call id (in `tool_calls[].id` and `tool_call_id`).
    public static let maxIDBytes = 256
    /// Most calls one assistant message holds.
    public static let maxCallsPerMessage = 128

    /// The call as its JSON value.
    public var jsonObject: [String: Any] {
        ["id": id, "type": "function", "function": ["name": name, "arguments": arguments]]
    }

    /// Whether `id` is 1 to `maxIDBytes` bytes.
    static func isValidID(_ id: String) -> Bool { (1...maxIDBytes).contains(id.utf8.count) }

    /// Reads message `i`'s `tool_calls` (absent, `null` or `[]`: none).
    /// - Throws: `APIError` 400 `invalid_request` naming the call and the rule it breaks.
    static func parseList(_ v: Any?, message i: Int) throws -> [ChatToolCall] {
        guard let v, !(v is NSNull) else { return [] }
        guard let list = v as? [Any], list.count <= maxCallsPerMessage else {
            throw APIError.invalidRequest("messages[\(i)].tool_calls must be an array of at most \(maxCallsPerMessage) calls")
        }
        return try list.enumerated().map { j, item in
            let at = "messages[\(i)].tool_calls[\(j)]"
            guard let o = item as? [String: Any], Set(o.keys) == ["id", "type", "function"], o["type"] as? String == "function",
                  let id = o["id"] as? String, let f = o["function"] as? [String: Any], Set(f.keys) == ["name", "arguments"],
                  let name = f["name"] as? String else {
                throw APIError.invalidRequest("\(at) must be {\"id\": string, \"type\": \"function\", \"function\": {\"name\": string, \"arguments\": string}}")
            }
            guard isValidID(id) else { throw APIError.invalidRequest("\(at).id must be 1 to \(maxIDBytes) bytes") }
            guard ChatTool.isValidName(name) else { throw APIError.invalidRequest("\(at).function.name must be \(ChatTool.nameRule)") }
            guard let arguments = f["arguments"] as? String else {
                throw APIError.invalidRequest("\(at).function.arguments must be a string (the arguments as JSON text)")
            }
            return ChatToolCall(id: id, name: name, arguments: arguments)
        }
    }
}

extension JSONValue {
    /// The member names in document order when this is an object; `nil` otherwise.
    var memberNames: [String]? {
        guard case .object(let members) = self else { return nil }
        return members.map(\.name.text)
    }
}
