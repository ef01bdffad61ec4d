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

    /// `bytes`: the file's UTF-8 bytes (`PackageResources.<name>_lua`).
    public init(file: String, bytes: [UInt8]) {
        self.file = file
        text = String(decoding: bytes, as: UTF8.self)
    }

    public var description: String { file }
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
