import Foundation
import RelayCore

/// Severity of a log line, lowest first. `RELAY_LOG_LEVEL` drops lines below it.
public enum LogLevel: Int, Comparable, CaseIterable, Sendable {
    /// Per-connection detail (Redis connects, configuration); off by default.
    case debug
    /// Lifecycle and one line per finished stream (the default level).
    case info
    /// Recoverable trouble: Redis connection lost, slow consumer cut, drain timeout.
    case warn
    /// A request or stream failed in a way the relay did not expect.
    case error

    /// The name used in `RELAY_LOG_LEVEL` and in the `level` field.
    public var name: String {
        switch self {
        case .debug: return "debug"
        case .info: return "info"
        case .warn: return "warn"
        case .error: return "error"
        }
    }

    /// Parses `debug`, `info`, `warn` (or `warning`), `error`, case-insensitively.
    public init?(name: String) {
        switch name.lowercased() {
        case "debug": self = .debug
        case "info": self = .info
        case "warn", "warning": self = .warn
        case "error": self = .error
        default: return nil
        }
    }

    public static func < (a: LogLevel, b: LogLevel) -> Bool { a.rawValue < b.rawValue }
}

/// The shape of a log line (`RELAY_LOG_FORMAT`).
public enum LogFormat: String, Sendable {
    /// One JSON object per line: `{"ts","level","msg",…fields in key order}`.
    case json
    /// `2026-11-30T23:59:14.123Z INFO  listening port=8080 redis=unix:///tmp/r.sock`.
    case text
}

/// Renders one log record as one line (without the trailing newline). Pure: the time is
/// passed in, so tests inject it.
///
/// Stable field names (docs/OPERATIONS.md "Logs"): `ts` is RFC 3339 UTC with milliseconds
/// (`2026-11-30T23:59:14.123Z`, RFC 3339 §5.6), `level` is `debug`/`info`/`warn`/`error`,
/// `msg` is a fixed phrase; the call's fields follow in key order. Strings are JSON
/// strings with `/` not escaped (RFC 8259 §7 does not require it). A field named `ts`,
/// `level` or `msg` is dropped rather than allowed to shadow the record's own.
public struct LogFormatter: Sendable {
    /// JSON or text.
    public var format: LogFormat

    public init(format: LogFormat) {
        self.format = format
    }

    /// The field names every line has, in this order.
    public static let reservedKeys = ["ts", "level", "msg"]

    /// One line for `message` at `level`, logged at `time`. `fields` values should be
    /// strings, integers, floating-point numbers or booleans; anything else is written
    /// as its description, as a string.
    public func line(time: Date, level: LogLevel, message: String, fields: [String: Any]) -> String {
        let ts = LogFormatter.timestamp(time)
        let keys = fields.keys.filter { !LogFormatter.reservedKeys.contains($0) }.sorted()
        var out = ""
        switch format {
        case .json:
            out = "{\"ts\":\"\(ts)\",\"level\":\"\(level.name)\",\"msg\":"
            out += JSONText.quoted(message)
            for k in keys {
                out += "," + JSONText.quoted(k) + ":" + LogFormatter.jsonValue(fields[k]!)
            }
            out += "}"
        case .text:
            let tag = level.name.uppercased()
            out = ts + " " + tag + String(repeating: " ", count: 6 - tag.count) + message
            for k in keys {
                out += " " + k + "=" + LogFormatter.textValue(fields[k]!)
            }
        }
        return out
    }

    /// RFC 3339 UTC with milliseconds, e.g. `2026-11-30T23:59:14.123Z` (rounded to the
    /// nearest millisecond). Dates before 1970 or after 9999 are clamped.
    public static func timestamp(_ date: Date) -> String {
        let totalMs = max(0, min(253_402_300_799_999, Int64((date.timeIntervalSince1970 * 1000).rounded())))
        let ms = Int(totalMs % 1000)
        let secs = totalMs / 1000
        let days = secs / 86_400
        let rem = Int(secs % 86_400)
        let (y, m, d) = civilDate(daysSinceEpoch: days)
        return pad(y, 4) + "-" + pad(m, 2) + "-" + pad(d, 2) + "T" + pad(rem / 3600, 2) + ":" + pad(rem / 60 % 60, 2)
            + ":" + pad(rem % 60, 2) + "." + pad(ms, 3) + "Z"
    }

    /// Proleptic Gregorian (year, month, day) of a day count since 1970-01-01
    /// (Howard Hinnant's `civil_from_days`), negative counts included.
    static func civilDate(daysSinceEpoch: Int64) -> (Int, Int, Int) {
        let z = daysSinceEpoch + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        let y = yoe + era * 400 + (m <= 2 ? 1 : 0)
        return (Int(y), Int(m), Int(d))
    }

    private static func pad(_ n: Int, _ width: Int) -> String {
        let s = String(n)
        return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
    }

    static func jsonValue(_ v: Any) -> String {
        switch v {
        case let b as Bool: return b ? "true" : "false"
        case let i as Int: return String(i)
        case let i as Int64: return String(i)
        case let i as UInt64: return String(i)
        case let i as Int32: return String(i)
        case let d as Double: return d.isFinite ? "\(d)" : JSONText.quoted("\(d)")
        case let s as String: return JSONText.quoted(s)
        default: return JSONText.quoted("\(v)")
        }
    }

    /// Bare when the value is simple (`port=8080`, `redis=unix:///tmp/r.sock`), else a
    /// JSON string (`reason="connection refused"`), so a line splits unambiguously on spaces.
    static func textValue(_ v: Any) -> String {
        guard let s = v as? String else { return jsonValue(v) }
        let bare = !s.isEmpty && !s.unicodeScalars.contains { $0.value <= 0x20 || $0 == "\"" || $0 == "=" || $0.value == 0x7F }
        return bare ? s : JSONText.quoted(s)
    }
}
