import Foundation

/// Latency histogram: 10 µs buckets up to 10 s, one overflow bucket.
struct LatencyHistogram {
    static let bucketMicros: UInt64 = 10
    static let buckets = 1_000_000
    private var counts = [UInt32](repeating: 0, count: LatencyHistogram.buckets + 1)
    private(set) var total = 0
    private(set) var maxMicros: UInt64 = 0

    mutating func record(_ micros: UInt64) {
        let i = min(Int(micros / LatencyHistogram.bucketMicros), LatencyHistogram.buckets)
        counts[i] &+= 1
        total += 1
        if micros > maxMicros { maxMicros = micros }
    }

    /// The q-quantile (0…1) in milliseconds (upper edge of its bucket), or nil when empty.
    func quantileMs(_ q: Double) -> Double? {
        guard total > 0 else { return nil }
        let rank = max(1, Int((Double(total) * q).rounded(.up)))
        var seen = 0
        for (i, c) in counts.enumerated() where c > 0 {
            seen += Int(c)
            if seen >= rank {
                if i == LatencyHistogram.buckets { return Double(maxMicros) / 1000 }
                return min(Double(maxMicros), Double(UInt64(i + 1) * LatencyHistogram.bucketMicros)) / 1000
            }
        }
        return Double(maxMicros) / 1000
    }
}

/// CPU time and RSS of processes, from /proc (Linux).
enum Proc {
    static let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))

    /// CPU time of `pid` in user space (`utime`) and in the kernel (`stime`), seconds
    /// (proc(5), `/proc/<pid>/stat` fields 14 and 15); nil when gone.
    static func cpuTimes(_ pid: Int32) -> CPUTimes? {
        guard let s = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = s.lastIndex(of: ")") else { return nil }
        let f = s[s.index(after: close)...].split(separator: " ")
        // after ")": state(0) ppid(1) … utime(11) stime(12)
        guard f.count > 12, let u = Double(f[11]), let st = Double(f[12]) else { return nil }
        return CPUTimes(user: u / ticksPerSecond, kernel: st / ticksPerSecond)
    }

    /// utime + stime of `pid`, seconds; nil when gone.
    static func cpuSeconds(_ pid: Int32) -> Double? { cpuTimes(pid)?.total }

    /// Resident set size of `pid`, bytes.
    static func rssBytes(_ pid: Int32) -> Int? {
        guard let s = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in s.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            let parts = line.split(separator: " ", omittingEmptySubsequences: true)
            if parts.count >= 2, let kb = Int(parts[1]) { return kb * 1024 }
        }
        return nil
    }

    /// Sum over `pids`, seconds; nil when any of them is gone (a figure over the
    /// survivors alone would be wrong, and negative against an earlier reading).
    static func cpuSeconds(_ pids: [Int32]) -> Double? { cpuTimes(pids)?.total }
    static func cpuTimes(_ pids: [Int32]) -> CPUTimes? {
        var sum = CPUTimes(user: 0, kernel: 0)
        for p in pids {
            guard let t = cpuTimes(p) else { return nil }
            sum = CPUTimes(user: sum.user + t.user, kernel: sum.kernel + t.kernel)
        }
        return sum
    }
    /// Sum over `pids`, bytes; nil when any of them is gone.
    static func rssBytes(_ pids: [Int32]) -> Int? {
        var sum = 0
        for p in pids {
            guard let r = rssBytes(p) else { return nil }
            sum += r
        }
        return sum
    }

    /// Whether one of `pids` holds the listening TCP socket of `port` (`/proc/net/tcp`
    /// and `tcp6`: state `0A`, LISTEN; the socket's inode among `/proc/<pid>/fd`'s
    /// `socket:[inode]` links); nil when no listener on `port` is found to check against.
    static func listening(pids: [Int32], port: Int) -> Bool? {
        let hexPort = String(format: ":%04X", port)
        var inodes = Set<String>()
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            guard let s = try? String(contentsOfFile: table, encoding: .utf8) else { continue }
            for line in s.split(separator: "\n").dropFirst() {
                let f = line.split(separator: " ", omittingEmptySubsequences: true)
                // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
                guard f.count > 9, f[1].hasSuffix(hexPort), f[3] == "0A" else { continue }
                inodes.insert(String(f[9]))
            }
        }
        guard !inodes.isEmpty else { return nil }
        for pid in pids {
            let dir = "/proc/\(pid)/fd"
            guard let fds = try? FileManager.default.contentsOfDirectory(atPath: dir) else { continue }
            for fd in fds {
                guard let link = try? FileManager.default.destinationOfSymbolicLink(atPath: dir + "/" + fd),
                      link.hasPrefix("socket:[") else { continue }
                if inodes.contains(String(link.dropFirst(8).dropLast())) { return true }
            }
        }
        return false
    }

    /// The pids of `pids` with no process (`/proc/<pid>/stat` unreadable).
    static func missing(_ pids: [Int32]) -> [Int32] { pids.filter { cpuTimes($0) == nil } }

    /// Kernel slab memory (SReclaimable + SUnreclaim), bytes, system-wide.
    static func slabBytes() -> Int {
        guard let s = try? String(contentsOfFile: "/proc/meminfo", encoding: .utf8) else { return 0 }
        var total = 0
        for line in s.split(separator: "\n") where line.hasPrefix("Slab:") {
            let parts = line.split(separator: " ", omittingEmptySubsequences: true)
            if parts.count >= 2, let kb = Int(parts[1]) { total = kb * 1024 }
        }
        return total
    }

    /// TCP socket buffer memory in use (`/proc/net/sockstat` "TCP: … mem <pages>"), bytes.
    static func tcpBufferBytes() -> Int {
        guard let s = try? String(contentsOfFile: "/proc/net/sockstat", encoding: .utf8) else { return 0 }
        for line in s.split(separator: "\n") where line.hasPrefix("TCP:") {
            let parts = line.split(separator: " ")
            if let i = parts.firstIndex(of: "mem"), i + 1 < parts.count, let pages = Int(parts[i + 1]) {
                return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
            }
        }
        return 0
    }
}

/// CPU time, seconds: in user space and in the kernel (system calls, and on loopback
/// the receiving socket's TCP work, which runs in the sender's context).
struct CPUTimes {
    var user: Double
    var kernel: Double
    var total: Double { user + kernel }
}

/// CPU usage of a process set between `start()` and `percent()`, % of one core.
struct CPUWindow {
    let pids: [Int32]
    private var t0 = 0.0
    private var c0: CPUTimes?
    init(_ pids: [Int32]) { self.pids = pids }
    mutating func start() {
        t0 = Date().timeIntervalSince1970
        c0 = Proc.cpuTimes(pids)
    }
    /// Total (user + kernel) since `start()`, % of one core; nil without pids.
    func percent() -> Double? { split()?.total }
    /// User and kernel shares since `start()`, each in % of one core; nil without pids
    /// or when a process is gone (at the start or now).
    func split() -> CPUTimes? {
        guard !pids.isEmpty, let c0 else { return nil }
        let dt = Date().timeIntervalSince1970 - t0
        guard dt > 0, let c = Proc.cpuTimes(pids) else { return nil }
        return CPUTimes(user: (c.user - c0.user) / dt * 100, kernel: (c.kernel - c0.kernel) / dt * 100)
    }
}

/// CPU time per unit of work, µs: `cpuPercent` (% of one core, i.e. 10,000 µs of CPU
/// per second at 1 %) spread over `perSecond` units (events, deliveries) per second.
/// `nil` when either is missing or no work was done. The bench's targets are stated this
/// way: relay CPU per delivered event, Redis CPU per appended event.
func cpuMicrosPerUnit(cpuPercent: Double?, perSecond: Double) -> Double? {
    guard let cpuPercent, cpuPercent.isFinite, perSecond > 0 else { return nil }
    return cpuPercent * 10_000 / perSecond
}

/// Counters shared by all subscribers of a run.
final class RunStats {
    var latency = LatencyHistogram()
    /// Stamped events received (deltas, and the stamped parts of the part-heavy answer;
    /// all, including replays).
    var received = 0
    /// Events received whose arrival fell in the measurement window: stamped ones (a
    /// merged delta counts each delta it carries) and unstamped parts (a tool call's framing).
    var receivedInWindow = 0
    /// SSE `delta` events received (all): fewer than `received` when the relay merged
    /// deltas for a backed-up client (adaptive coalescing); nchan sends one per publish.
    var deltaEvents = 0
    /// Deltas that arrived inside an SSE event carrying more than one (merged deltas).
    var mergedDeltas = 0
    /// SSE part events received (all): stamped pieces and a tool call's framing.
    var partEvents = 0
    var duplicates = 0
    /// Real loss: deltas skipped in what a subscriber received (a jump in `n`).
    var lost = 0
    /// Deltas of a stream's tail not yet received when the run stopped waiting (a
    /// subscriber that joined late, or was still replaying): the deadline's, not loss.
    var late = 0
    var outOfOrder = 0
    var errorEvents = 0
    var heartbeats = 0
    var connectFailures = 0
    var httpErrors: [Int: Int] = [:]
    var closedEarly = 0
    var unfinished = 0
    var completed = 0
    /// Latency is recorded only for events produced at or after this time (µs).
    var measureFromMicros: UInt64 = .max
    /// Arrivals counted in `receivedInWindow` between these (µs).
    var windowStart: UInt64 = .max
    var windowEnd: UInt64 = .max
}

/// Formats optional numbers for output.
func fmt(_ v: Double?, _ digits: Int = 1) -> String {
    guard let v, v.isFinite else { return "n/a" }
    return String(format: "%.\(digits)f", v)
}

/// This process's CPU time (user + system), seconds.
func selfCPUSeconds() -> Double {
    var ru = rusage()
    getrusage(RUSAGE_SELF.rawValue, &ru)
    return Double(ru.ru_utime.tv_sec) + Double(ru.ru_utime.tv_usec) / 1e6 + Double(ru.ru_stime.tv_sec) + Double(ru.ru_stime.tv_usec) / 1e6
}
