import Foundation

/// The machine's CPU time stolen by the hypervisor over a measurement window: time its
/// virtual CPUs were runnable but the host ran something else (proc(5), `/proc/stat`,
/// the `cpu` line's eighth value, `steal`, in clock ticks summed over every CPU).
///
/// On a shared virtual machine this is the sitting's noise made visible: while a vCPU
/// is descheduled every thread on it (relay, Redis, the load generator) stalls at once,
/// which shows up as latency tails, and the caches it comes back to are cold, which
/// shows up as CPU per event. Reported next to each step so that two runs can be
/// compared for what the machine gave them.
struct StolenTimeWindow {
    private var start: (steal: UInt64, total: UInt64)?

    /// The `cpu` line of `/proc/stat`: steal and the sum of every state, ticks; nil when
    /// unreadable (not Linux, or a kernel without the `steal` column).
    static func read() -> (steal: UInt64, total: UInt64)? {
        guard let s = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
              let line = s.split(separator: "\n").first(where: { $0.hasPrefix("cpu ") }) else { return nil }
        // cpu user nice system idle iowait irq softirq steal guest guest_nice; guest time
        // is already counted in user and nice, so only the first eight make the total.
        let v = line.split(separator: " ").dropFirst().prefix(8).compactMap { UInt64($0) }
        guard v.count == 8 else { return nil }
        return (v[7], v.reduce(0, +))
    }

    mutating func begin() { start = StolenTimeWindow.read() }

    /// Stolen time since `begin()`, % of the machine's CPU time (all cores: 25 % on two
    /// cores is half a core's worth); nil when unreadable or no time passed.
    func percent() -> Double? {
        guard let a = start, let b = StolenTimeWindow.read(), b.total > a.total, b.steal >= a.steal else { return nil }
        return Double(b.steal - a.steal) / Double(b.total - a.total) * 100
    }
}
