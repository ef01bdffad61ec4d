import Foundation

/// Reading the options (`load`), their `--help` text, and the one home of the value checks
/// every option shares (`int`, `bool`, `duration`: each names the variable when it refuses).
extension RelayConfig {
    /// The variables an empty value leaves unset: the upstream's, which `docker compose`
    /// passes as `${VAR:-}` when `.env` leaves them out (the simulated upstream needs none).
    /// Any other variable set empty is read as given, and refused where empty means nothing
    /// (an empty `RELAY_ENCRYPTION_KEYS` must not quietly store plaintext).
    public static let emptyMeansUnset: Set<String> = ["UPSTREAM_URL", "UPSTREAM_API_KEY", "UPSTREAM_MODEL"]

    /// Builds a configuration from `environment` then `arguments` (`--flag value` or
    /// `--flag=value`; flags win).
    /// - Throws: `ConfigError` naming the variable for a bad value or an unknown flag.
    public static func load(environment: [String: String], arguments: [String], defaultWorkers: Int) throws -> RelayConfig {
        var c = RelayConfig()
        c.workers = max(1, defaultWorkers)
        for o in options {
            guard let v = environment[o.env], !(v.isEmpty && emptyMeansUnset.contains(o.env)) else { continue }
            try o.apply(&c, v)
        }
        var i = 0
        while i < arguments.count {
            let a = arguments[i]
            var name = a
            var value: String?
            if let eq = a.firstIndex(of: "=") {
                name = String(a[..<eq])
                value = String(a[a.index(after: eq)...])
            }
            guard let o = options.first(where: { $0.flag == name }) else { throw ConfigError("unknown option \(a) (see --help)") }
            if value == nil {
                i += 1
                guard i < arguments.count else { throw ConfigError("\(name) needs a value") }
                value = arguments[i]
            }
            try o.apply(&c, value!)
            i += 1
        }
        return c
    }

    /// The `--help` text of the options.
    ///
    /// The operator's options, then the logging settings (environment only, read by the
    /// log at startup), in two columns aligned to the longest left column.
    public static var helpText: String {
        columns(options.filter { !$0.testOnly }.map { ("\($0.flag) / \($0.env)", $0.help) })
            + "\n\nLogging (environment only):\n"
            + columns(loggingSettings)
    }

    /// The log's settings, read from the environment at startup: variable, meaning.
    public static let loggingSettings: [(String, String)] = [
        ("RELAY_LOG_LEVEL", "lowest level written: debug, info, warn, error (default info)"),
        ("RELAY_LOG_FORMAT", "json, text, or auto: text when stderr is a terminal, JSON otherwise (default auto)"),
    ]

    /// The test-only options (`Option.testOnly`), for `stream-relay help serve --test-options`.
    public static var testOptionsHelpText: String {
        columns(options.filter(\.testOnly).map { ("\($0.flag) / \($0.env)", $0.help) })
    }

    /// The column every description starts in, characters.
    public static let helpIndent = 8
    /// The width help text is wrapped to, characters (a word longer than the line stays whole).
    public static let helpWidth = 80

    /// Each row as its name on a line of its own (two spaces in), then its description on the
    /// lines below, all starting at `helpIndent` and wrapped at word boundaries to `helpWidth`,
    /// so the columns line up and fit an 80-column terminal whatever the names' lengths.
    static func columns(_ rows: [(String, String)]) -> String {
        rows.map { name, help in
            (["  " + name] + wrap(help, indent: helpIndent, width: helpWidth)).joined(separator: "\n")
        }.joined(separator: "\n")
    }

    /// `text` as lines of at most `width` characters, each prefixed by `indent` spaces.
    public static func wrap(_ text: String, indent: Int, width: Int) -> [String] {
        let pad = String(repeating: " ", count: indent)
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ", omittingEmptySubsequences: true) {
            if !line.isEmpty && indent + line.count + 1 + word.count > width {
                lines.append(pad + line)
                line = ""
            }
            line += line.isEmpty ? String(word) : " " + word
        }
        if !line.isEmpty { lines.append(pad + line) }
        return lines
    }

    static func int(_ v: String, _ name: String, _ range: ClosedRange<Int>) throws -> Int {
        guard let n = Int(v), range.contains(n) else {
            throw ConfigError("\(name) must be an integer from \(range.lowerBound) to \(range.upperBound), got \"\(v)\"")
        }
        return n
    }

    static func bool(_ v: String, _ name: String) throws -> Bool {
        switch v.lowercased() {
        case "1", "true", "on", "yes": return true
        case "0", "false", "off", "no": return false
        default: throw ConfigError("\(name) must be on or off, got \"\(v)\"")
        }
    }

    /// Parses `300`, `300s`, `5m`, `1500ms`, `1h` into milliseconds.
    public static func duration(_ v: String, _ name: String, _ range: ClosedRange<Int>) throws -> Int {
        let units: [(String, Double)] = [("ms", 1), ("s", 1000), ("m", 60_000), ("h", 3_600_000)]
        var number = Substring(v)
        var scale = 1000.0
        for (suffix, s) in units where v.hasSuffix(suffix) {
            number = v.dropLast(suffix.count)
            scale = s
            break
        }
        guard let d = Double(number), d.isFinite, d >= 0 else {
            throw ConfigError("\(name) must be a duration such as 15, 15s, 500ms or 5m, got \"\(v)\"")
        }
        let ms = Int((d * scale).rounded())
        guard range.contains(ms) else {
            throw ConfigError("\(name) must be between \(range.lowerBound) ms and \(range.upperBound) ms, got \"\(v)\"")
        }
        return ms
    }
}

extension String {
    func trimmingCharacters(in set: String) -> String {
        var s = Substring(self)
        while let f = s.first, set.contains(f) { s.removeFirst() }
        while let l = s.last, set.contains(l) { s.removeLast() }
        return String(s)
    }
}
