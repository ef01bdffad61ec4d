import Foundation
import Synchronization

/// Structured logs on stderr, one line per record (docs/OPERATIONS.md "Logs"): JSON
/// (`{"ts":"2026-11-30T23:59:14.123Z","level":"info","msg":…,…}`) or human-readable text,
/// rendered by `LogFormatter`.
///
/// Settings come from the environment: `RELAY_LOG_LEVEL` (`debug`, `info` (default),
/// `warn`, `error`) and `RELAY_LOG_FORMAT` (`json`, `text`, or `auto` (default): text when
/// stderr is a terminal, JSON otherwise). `configure` validates them at startup; before
/// that, the first line reads them leniently (defaults for unknown values).
///
/// Never pass message content, deltas, tokens or raw session ids as fields (logs carry
/// ids, counts and short hashes only).
public enum Log {
    /// A `RELAY_LOG_LEVEL` or `RELAY_LOG_FORMAT` value that is not one of the allowed ones.
    public struct SettingError: Error, CustomStringConvertible {
        public let description: String
    }

    /// The active level and line shape.
    public struct Settings: Sendable {
        /// Lines below this level are dropped.
        public var level: LogLevel
        /// How lines are rendered.
        public var formatter: LogFormatter

        public init(level: LogLevel, formatter: LogFormatter) {
            self.level = level
            self.formatter = formatter
        }

        /// Reads `RELAY_LOG_LEVEL` and `RELAY_LOG_FORMAT` from `environment`.
        /// - Parameter standardErrorIsTerminal: picks text over JSON for `auto`.
        /// - Throws: `SettingError` naming the variable and the allowed values.
        public init(environment: [String: String], standardErrorIsTerminal: Bool) throws {
            let rawLevel = environment["RELAY_LOG_LEVEL"].flatMap { $0.isEmpty ? nil : $0 } ?? "info"
            guard let level = LogLevel(name: rawLevel) else {
                throw SettingError(description: "RELAY_LOG_LEVEL=\(rawLevel): expected debug, info, warn or error")
            }
            let rawFormat = (environment["RELAY_LOG_FORMAT"].flatMap { $0.isEmpty ? nil : $0 } ?? "auto").lowercased()
            let format: LogFormat
            switch rawFormat {
            case "auto": format = standardErrorIsTerminal ? .text : .json
            default:
                guard let f = LogFormat(rawValue: rawFormat) else {
                    throw SettingError(description: "RELAY_LOG_FORMAT=\(rawFormat): expected json, text or auto")
                }
                format = f
            }
            self.level = level
            formatter = LogFormatter(format: format)
        }
    }

    private static let settings = Mutex<Settings>(lenientSettings())

    /// The settings before `configure`: unknown values fall back to the defaults.
    private static func lenientSettings() -> Settings {
        let env = ProcessInfo.processInfo.environment
        let format = LogFormat(rawValue: (env["RELAY_LOG_FORMAT"] ?? "").lowercased()) ?? (isatty(2) == 1 ? .text : .json)
        return Settings(level: LogLevel(name: env["RELAY_LOG_LEVEL"] ?? "") ?? .info, formatter: LogFormatter(format: format))
    }

    /// Applies `RELAY_LOG_LEVEL` / `RELAY_LOG_FORMAT` from `environment` (process start).
    /// - Throws: `SettingError` for an unknown value; the settings are left unchanged.
    public static func configure(environment: [String: String], standardErrorIsTerminal: Bool = isatty(2) == 1) throws {
        let s = try Settings(environment: environment, standardErrorIsTerminal: standardErrorIsTerminal)
        settings.withLock { $0 = s }
    }

    /// Detail for debugging a deployment (off unless `RELAY_LOG_LEVEL=debug`).
    public static func debug(_ msg: String, _ fields: [String: Any] = [:]) { write(.debug, msg, fields) }
    /// Writes one log line. `fields` values must be strings, numbers or booleans.
    public static func info(_ msg: String, _ fields: [String: Any] = [:]) { write(.info, msg, fields) }
    /// A warning line (recoverable trouble: Redis down, upstream errors).
    public static func warn(_ msg: String, _ fields: [String: Any] = [:]) { write(.warn, msg, fields) }
    /// An error line (a request or stream failed).
    public static func error(_ msg: String, _ fields: [String: Any] = [:]) { write(.error, msg, fields) }

    static func write(_ level: LogLevel, _ msg: String, _ fields: [String: Any]) {
        let s = settings.withLock { $0 }
        guard level >= s.level else { return }
        var data = Array(s.formatter.line(time: Date(), level: level, message: msg, fields: fields).utf8)
        data.append(0x0A)
        // One write(2) per line: lines from several threads never interleave (< PIPE_BUF
        // for typical lines; longer ones still arrive whole on regular files).
        data.withUnsafeBytes { p in _ = Foundation.write(2, p.baseAddress, p.count) }
    }
}

extension Log {
    /// A short, non-reversible tag of an identifier for logs (FNV-1a 64, 8 hex
    /// digits): enough to correlate lines, never the session id itself.
    static func shortHash(_ s: String) -> String {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in s.utf8 {
            h ^= UInt64(b)
            h = h &* 0x100_0000_01b3
        }
        let hex = String(h >> 32, radix: 16)
        return String(repeating: "0", count: 8 - hex.count) + hex
    }
}
