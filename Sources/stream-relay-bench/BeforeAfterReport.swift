extension Report {
    /// The label of the results of the earlier build run beside this one
    /// (`scripts/bench.sh` with `RELAY_BEFORE_BIN`): kept out of the StreamRelay/nchan tables.
    static let beforeLabel = "before"

    /// Whether `r` is a result of the earlier build.
    static func isBefore(_ r: Row) -> Bool { (r["label"] as? String) == beforeLabel }

    /// The per-event costs compared between the two builds, with nchan beside: label, JSON
    /// key, digits.
    static let beforeAfterMetrics: [(label: String, key: String, digits: Int)] = [
        ("deliveries/s", "deliveries_per_s", 0),
        ("latency p99, ms", "p99_ms", 2),
        ("server CPU per delivered event, µs", "server_cpu_us_per_delivery", 2),
        ("Redis CPU per event, µs", "redis_cpu_us_per_event", 2),
        ("server RSS, MiB", "server_rss_bytes", 1),
        ("lost + duplicated events", "lost_or_duplicated", 0),
    ]

    /// "Before and after": for each step of `stream` and `fanout` that both builds ran in this
    /// run, the earlier build, this one, their ratio, and nchan. Empty when no earlier build ran.
    static func beforeAfter(_ rows: [Row], _ meta: Row) -> [String] {
        let before = rows.filter(isBefore)
        guard !before.isEmpty else { return [] }
        let name = meta["before"] as? String ?? "the earlier build"
        var md = ["### Before and after: `\(name)` → this build, nchan beside (same run)", "",
                  "Each step ran five times in a row on the same Redis: the earlier build, this build, nchan, this build, the earlier build (a run's position alone moved its CPU per event by ~20 %, so each build takes both); a build's figure is the mean of its runs. Costs per event are the server's and Redis's CPU time over the measured window divided by the events delivered (server) or appended (Redis); after/before below 1 is cheaper.", ""]
        func value(_ r: Row, _ key: String) -> Double? {
            if key == "lost_or_duplicated" { return (num(r, "lost") ?? 0) + (num(r, "duplicates") ?? 0) }
            if key == "server_rss_bytes" { return num(r, key).map { $0 / 1_048_576 } }
            return num(r, key)
        }
        /// The mean of `key` over `runs` (nil when none has it).
        func mean(_ runs: [Row], _ key: String) -> Double? {
            let v = runs.compactMap { value($0, key) }
            return v.isEmpty ? nil : v.reduce(0, +) / Double(v.count)
        }
        for (scenario, stepKey, title) in [("stream", "n", "stream, N ="), ("fanout", "per_stream", "fanout, subscribers per stream =")] {
            let earlier = before.filter { ($0["scenario"] as? String) == scenario }
            var steps: [Double] = []
            for r in earlier { if let s = num(r, stepKey), !steps.contains(s) { steps.append(s) } }
            for step in steps.sorted() {
                func runs(_ target: String, _ wantBefore: Bool) -> [Row] {
                    rows.filter { ($0["scenario"] as? String) == scenario && ($0["target"] as? String) == target
                        && isBefore($0) == wantBefore && num($0, stepKey) == step }
                }
                let b = runs("relay", true), a = runs("relay", false), n = runs("nchan", false)
                guard !a.isEmpty else { continue }
                md.append("**\(title) \(f(step, 0))** (runs: before \(b.count), after \(a.count), nchan \(n.count))")
                md.append("")
                md.append("| metric | before | after | after/before | nchan | after/nchan |")
                md.append("|---|---:|---:|---:|---:|---:|")
                for m in beforeAfterMetrics {
                    let vb = mean(b, m.key), va = mean(a, m.key), vn = mean(n, m.key)
                    md.append("| \(m.label) | \(f(vb, m.digits)) | \(f(va, m.digits)) | \(ratio(va, vb)) | \(f(vn, m.digits)) | \(ratio(va, vn)) |")
                }
                md.append("")
            }
        }
        return md
    }
}
