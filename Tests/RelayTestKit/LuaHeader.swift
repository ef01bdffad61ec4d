import Foundation

/// The header of one of the relay's Lua scripts, parsed by the convention every
/// `Sources/<Module>/Lua/<name>.lua` follows (`RelayRedis.LuaSource`, docs/DATA_MODEL.md §10):
///
///     -- <name>.lua: <what it does>
///     -- <free description lines…>
///     -- KEYS[1] <name>: <what>            (or `-- KEYS: none`)
///     -- ARGV[1] <name>: <what, unit>      (or `-- ARGV: none`; `-- ARGV[n…] …` a variable tail)
///     -- Reply <shape>: <when>             (one per reply shape)
///     -- Error <KIND> …: <when>            (one per error reply the script makes)
///     --     <an entry goes on over lines of `--` and two or more spaces>
///     <one empty line, then the body>
///
/// Once the first KEYS, ARGV, Reply or Error entry starts, every header line is an entry or
/// goes on with one.
public struct LuaHeader: Equatable {
    /// The file named on line 1.
    public var file: String
    /// The names of KEYS[1…n], in order.
    public var keys: [String] = []
    /// The names of ARGV[1…n], in order.
    public var argv: [String] = []
    /// Whether a variable tail of ARGV follows (`ARGV[n…]`).
    public var variadicArgv = false
    /// Each `Reply` entry's first line, after `Reply `.
    public var replies: [String] = []
    /// The error kind (first word) of each `Error` entry.
    public var errors: [String] = []
    /// The script after the header and its empty line.
    public var body: String = ""

    /// A header that does not follow the convention.
    public struct Malformed: Error, CustomStringConvertible {
        public let description: String
    }

    /// Parses `text`, a whole `.lua` file.
    /// - Throws: `Malformed`, saying which rule the header breaks.
    public static func parse(_ text: String) throws -> LuaHeader {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let headerLines = lines.prefix { $0.hasPrefix("--") }
        func fail(_ why: String) -> Malformed { Malformed(description: why) }
        guard let first = headerLines.first, first.hasPrefix("-- "), let colon = first.firstIndex(of: ":") else {
            throw fail("line 1 is not `-- <name>.lua: <what it does>`")
        }
        var header = LuaHeader(file: String(first[first.index(first.startIndex, offsetBy: 3)..<colon]))
        guard header.file.hasSuffix(".lua") else { throw fail("line 1 names \(header.file), not a .lua file") }
        var keysNone = false, argvNone = false, inEntries = false
        for line in headerLines.dropFirst() {
            let rest = String(line.dropFirst(2))
            if let (kind, n, variadic, name) = indexedEntry(rest) {
                inEntries = true
                if kind == "KEYS" {
                    guard !variadic, !keysNone, n == header.keys.count + 1 else { throw fail("KEYS[\(n)] is out of order: \(line)") }
                    header.keys.append(name)
                } else {
                    guard !argvNone, !header.variadicArgv, n == header.argv.count + 1 else { throw fail("ARGV[\(n)] is out of order: \(line)") }
                    if variadic { header.variadicArgv = true } else { header.argv.append(name) }
                }
            } else if rest.hasPrefix(" KEYS[") || rest.hasPrefix(" ARGV[") {
                throw fail("not a `KEYS[n] <name>: …` / `ARGV[n] <name>: …` entry: \(line)")
            } else if rest == " KEYS: none" {
                guard header.keys.isEmpty else { throw fail("KEYS: none after KEYS entries") }
                keysNone = true
                inEntries = true
            } else if rest == " ARGV: none" {
                guard header.argv.isEmpty, !header.variadicArgv else { throw fail("ARGV: none after ARGV entries") }
                argvNone = true
                inEntries = true
            } else if rest.hasPrefix(" Reply ") {
                inEntries = true
                header.replies.append(String(rest.dropFirst(7)))
            } else if rest.hasPrefix(" Error ") {
                inEntries = true
                let kind = rest.dropFirst(7).prefix { !$0.isWhitespace && $0 != ":" }
                guard !kind.isEmpty else { throw fail("an Error entry names no kind: \(line)") }
                header.errors.append(String(kind))
            } else if inEntries && !rest.hasPrefix("  ") {
                throw fail("a line among the entries is neither an entry nor goes on with one: \(line)")
            }
        }
        guard keysNone || !header.keys.isEmpty else { throw fail("no KEYS entry (`-- KEYS[1] …` or `-- KEYS: none`)") }
        guard argvNone || !header.argv.isEmpty || header.variadicArgv else {
            throw fail("no ARGV entry (`-- ARGV[1] …` or `-- ARGV: none`)")
        }
        guard !header.replies.isEmpty else { throw fail("no Reply entry") }
        guard lines.count > headerLines.count + 1, lines[headerLines.count].isEmpty else {
            throw fail("the header is not followed by one empty line and the body")
        }
        header.body = lines[(headerLines.count + 1)...].joined(separator: "\n")
        guard header.body.contains(where: { !$0.isWhitespace }) else { throw fail("the body is empty") }
        return header
    }

    /// `KEYS[n] name: …` or `ARGV[n] name: …` (`ARGV[n…] name: …` a variable tail), after `--`.
    private static func indexedEntry(_ rest: String) -> (kind: String, n: Int, variadic: Bool, name: String)? {
        for kind in ["KEYS", "ARGV"] {
            let open = " \(kind)["
            guard rest.hasPrefix(open), let close = rest.firstIndex(of: "]") else { continue }
            var index = rest[rest.index(rest.startIndex, offsetBy: open.count)..<close]
            let variadic = index.hasSuffix("…")
            if variadic { index = index.dropLast() }
            let after = rest[rest.index(after: close)...]
            guard let n = Int(index), n >= 1, after.hasPrefix(" "), let colon = after.firstIndex(of: ":") else { return nil }
            let name = after.dropFirst()[..<colon].trimmingCharacters(in: .whitespaces)
            guard !name.isEmpty, after[after.index(after: colon)...].hasPrefix(" ") else { return nil }
            return (kind, n, variadic, name)
        }
        return nil
    }

    /// The highest `KEYS[n]` and `ARGV[n]` the body's code names (comments left out): each
    /// must be declared in the header.
    public var referencedIndices: (keys: Int, argv: Int) {
        var keys = 0, argv = 0
        for line in body.split(separator: "\n") {
            let code = line.range(of: "--").map { line[..<$0.lowerBound] } ?? line[...]
            for (kind, apply) in [("KEYS[", { (n: Int) in keys = max(keys, n) }), ("ARGV[", { (n: Int) in argv = max(argv, n) })] {
                var rest = code[...]
                while let r = rest.range(of: kind) {
                    let digits = rest[r.upperBound...].prefix { $0.isNumber }
                    if let n = Int(digits), rest[r.upperBound...].dropFirst(digits.count).first == "]" { apply(n) }
                    rest = rest[r.upperBound...]
                }
            }
        }
        return (keys, argv)
    }

    /// The error kinds the body makes (`redis.error_reply('<KIND> …')`).
    public var errorKindsMade: Set<String> {
        var kinds: Set<String> = []
        var rest = body[...]
        while let r = rest.range(of: "redis.error_reply('") {
            let kind = rest[r.upperBound...].prefix { !$0.isWhitespace && $0 != "'" }
            kinds.insert(String(kind))
            rest = rest[r.upperBound...]
        }
        return kinds
    }
}

extension LuaHeader {
    /// What is wrong with script `file` (its text as embedded) by the header convention:
    /// the header does not parse, line 1 names another file, the body names a KEYS or ARGV
    /// index the header does not declare, or the body makes an error kind the header does
    /// not name (or the header names one, other than a Redis command's `ERR`, it never
    /// makes). Empty when nothing is.
    public static func problems(file: String, text: String) -> [String] {
        let h: LuaHeader
        do { h = try parse(text) } catch { return ["\(file): \(error)"] }
        var out: [String] = []
        if h.file != file { out.append("\(file): line 1 names \(h.file)") }
        let used = h.referencedIndices
        if used.keys > h.keys.count { out.append("\(file): the body names KEYS[\(used.keys)], the header \(h.keys.count) keys") }
        if used.argv > h.argv.count && !h.variadicArgv {
            out.append("\(file): the body names ARGV[\(used.argv)], the header \(h.argv.count) arguments")
        }
        let documented = Set(h.errors)
        for kind in h.errorKindsMade.subtracting(documented) { out.append("\(file): error \(kind) is made but not in the header") }
        for kind in documented.subtracting(h.errorKindsMade).subtracting(["ERR"]) {
            out.append("\(file): error \(kind) is in the header but never made")
        }
        return out
    }

    /// The `.lua` files in `folder`, by name.
    public static func files(in folder: URL) throws -> Set<String> {
        Set(try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".lua") })
    }

    /// `Sources/<module>/Lua` of this checkout, found from a test file's `#filePath`
    /// (`Tests/<target>/<file>.swift`).
    public static func folder(module: String, testFile: String) -> URL {
        URL(fileURLWithPath: testFile).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources").appendingPathComponent(module).appendingPathComponent("Lua")
    }
}
