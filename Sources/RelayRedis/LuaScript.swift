/// The text of one of the relay's Lua scripts, as embedded at build time from
/// `Sources/<Module>/Lua/<name>.lua` (SwiftPM `.embedInCode`: the module's
/// `PackageResources.<name>_lua`, `[UInt8]`).
///
/// Each file starts with a header of `--` comment lines, ended by the first line that is
/// not one (docs/DATA_MODEL.md §10):
/// * line 1: `-- <name>.lua: <what it does>`;
/// * `-- KEYS[n] <name>: …` for each key in order, or `-- KEYS: none`;
/// * `-- ARGV[n] <name>: …` for each argument in order (units: ms, unix ms, bytes, tokens),
///   `-- ARGV[n…] …` for a variable tail, or `-- ARGV: none`;
/// * `-- Reply …` for each shape it returns (every element; nil cases included), and
///   `-- Error <KIND> …` for each error reply it makes (`RedisErrorCode`, by the first word).
/// An entry may go on over lines that start with `--` and more spaces.
public struct LuaSource: Sendable, Hashable, CustomStringConvertible {
    /// The file's name, `<name>.lua`.
    public let file: String
    /// The script's text, header included (what `EVAL` / `SCRIPT LOAD` get).
    public let text: String
    /// What `ScriptRunner` finds the script's SHA by: an identity, not the text, whose hash
    /// (the text is not ASCII, so Unicode-normalized) cost ~700 instructions per delivered
    /// event at the lease refreshes' rate (docs/BENCHMARKS.md, `scripts/relay-cost.sh`).
    let identity = Identity()

    /// See `identity`.
    final class Identity: Sendable {}

    /// `bytes`: the file's UTF-8 bytes (`PackageResources.<name>_lua`).
    public init(file: String, bytes: [UInt8]) {
        self.file = file
        text = String(decoding: bytes, as: UTF8.self)
    }

    public var description: String { file }

    public static func == (a: LuaSource, b: LuaSource) -> Bool { a.file == b.file && a.text == b.text }
    public func hash(into h: inout Hasher) {
        h.combine(file)
        h.combine(text)
    }
}

/// A script's reply, decoded in one place (its type's `init(reply:)`) into named fields.
public protocol ScriptReply: Sendable {
    /// Decodes a reply that is not an error (`ScriptRunner` hands error replies and local
    /// failures on as they are: `RedisFailure`, typed by `RedisErrorCode`).
    /// - Throws: `RedisFailure` with code `.unexpectedReply` when the reply does not have
    ///   any shape the script's header names.
    init(reply: RedisReply) throws(RedisFailure)
}

/// One Lua script and the type its reply decodes into (`ScriptRunner.run(_:keys:args:done:)`).
public struct LuaScript<Reply: ScriptReply>: Sendable {
    /// The script's file and text.
    public let source: LuaSource

    /// `bytes`: the file's UTF-8 bytes (`PackageResources.<name>_lua`).
    public init(file: String, bytes: [UInt8]) {
        source = LuaSource(file: file, bytes: bytes)
    }

    /// The script's text (what `EVAL` gets).
    public var text: String { source.text }
}

extension RedisFailure {
    /// A script's reply that has none of the shapes its header names (`ScriptReply`):
    /// `script`, the file; `reply`, what came back (for logs).
    public static func unexpectedReply(_ script: String, _ reply: RedisReply) -> RedisFailure {
        RedisFailure(code: .unexpectedReply, message: "unexpected reply of \(script): \(reply)")
    }
}

extension RedisReply {
    /// The bytes of a bulk reply, else `nil`.
    public var bytes: [UInt8]? {
        if case .bulk(let b) = self { return b }
        return nil
    }
}

/// The elements of a script's array reply, read by the position its header gives them
/// (counted from 1, as Lua and the header count), for a `ScriptReply` init: the one place
/// a reply's positions are named. Every accessor throws `.unexpectedReply` for an element
/// that is missing or of another type.
public struct ScriptReplyArray {
    /// The elements, in order.
    public let elements: [RedisReply]
    private let file: String
    private let reply: RedisReply

    /// - Parameters:
    ///   - file: the script's file (for the failure's message).
    ///   - counts: the element counts the header names (`nil`: any).
    /// - Throws: `.unexpectedReply` unless `reply` is an array of one of `counts` elements.
    public init(_ reply: RedisReply, of file: String, counts: Set<Int>? = nil) throws(RedisFailure) {
        guard let a = reply.array, counts.map({ $0.contains(a.count) }) ?? true else {
            throw .unexpectedReply(file, reply)
        }
        elements = a
        self.file = file
        self.reply = reply
    }

    /// How many elements the reply has.
    public var count: Int { elements.count }

    /// The failure for this reply: none of the shapes its script's header names.
    public var unexpected: RedisFailure { .unexpectedReply(file, reply) }

    /// Element `n` (from 1) as it is.
    public func element(_ n: Int) throws(RedisFailure) -> RedisReply {
        guard n >= 1, n <= elements.count else { throw unexpected }
        return elements[n - 1]
    }

    /// Element `n` (from 1): an integer, or a bulk string holding a decimal integer.
    public func int(_ n: Int) throws(RedisFailure) -> Int64 {
        guard let v = try element(n).int else { throw unexpected }
        return v
    }

    /// Element `n` (from 1): a bulk or status string, as UTF-8 text.
    public func string(_ n: Int) throws(RedisFailure) -> String {
        guard let v = try element(n).string else { throw unexpected }
        return v
    }

    /// Element `n` (from 1): a string, or `nil` for a null (a Lua `false`: a field `HMGET`
    /// found missing).
    public func optionalString(_ n: Int) throws(RedisFailure) -> String? {
        let e = try element(n)
        if e == .null { return nil }
        guard let v = e.string else { throw unexpected }
        return v
    }

    /// Element `n` (from 1): a bulk string's bytes.
    public func bytes(_ n: Int) throws(RedisFailure) -> [UInt8] {
        guard let v = try element(n).bytes else { throw unexpected }
        return v
    }
}

extension RedisReply {
    /// A script's `1`/`0` reply as `true`/`false`.
    /// - Throws: `.unexpectedReply` (naming `file`) for anything else.
    public func flag(of file: String) throws(RedisFailure) -> Bool {
        switch int {
        case 1: return true
        case 0: return false
        default: throw .unexpectedReply(file, self)
        }
    }
}
