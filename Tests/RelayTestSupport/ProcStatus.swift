import Foundation

/// Process facts from /proc (Linux, proc(5)).
public enum ProcStatus {
    /// `VmRSS` of `pid` from `/proc/<pid>/status`, KiB.
    /// - Throws: `TestFailure` when `/proc` is missing or the line unreadable: a memory
    ///   assertion must fail then, never pass on a 0 (docs/TESTING.md "It can fail where
    ///   it matters").
    public static func rssKiB(_ pid: Int32) throws -> Int {
        let path = "/proc/\(pid)/status"
        guard let s = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw TestFailure("cannot read \(path): memory cannot be measured")
        }
        guard let line = s.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
              let kib = line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.flatMap({ Int($0) }),
              kib > 0 else {
            throw TestFailure("no VmRSS in \(path)")
        }
        return kib
    }

    /// `VmRSS` of the test process itself, KiB.
    /// - Throws: `TestFailure` as `rssKiB(_:)`.
    public static func selfRssKiB() throws -> Int { try rssKiB(getpid()) }
}
