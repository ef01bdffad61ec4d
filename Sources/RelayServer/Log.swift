import Foundation

/// Structured logs: one JSON object per line on stderr (`{"ts":…,"level":…,"msg":…,…}`).
/// Never pass message content, deltas or tokens as fields (issue 3: logs carry ids,
/// counts and short hashes only).
public enum Log {
    /// Writes one log line. `fields` values must be strings, numbers or booleans.
    public static func info(_ msg: String, _ fields: [String: Any] = [:]) { write("info", msg, fields) }
    /// A warning line (recoverable trouble: Redis down, upstream errors).
    public static func warn(_ msg: String, _ fields: [String: Any] = [:]) { write("warn", msg, fields) }
    /// An error line (a request or stream failed).
    public static func error(_ msg: String, _ fields: [String: Any] = [:]) { write("error", msg, fields) }

    static func write(_ level: String, _ msg: String, _ fields: [String: Any]) {
        var obj = fields
        obj["ts"] = Date().timeIntervalSince1970
        obj["level"] = level
        obj["msg"] = msg
        guard var data = try? JSONSerialization.data(withJSONObject: obj, options: [.sortedKeys]) else { return }
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
