import Foundation
import RelayTestKit

/// A real Redis Cluster for integration tests: `primaries` primaries and as many
/// replicas (`redis-cli --cluster create … --cluster-replicas 1 --cluster-yes`), each a
/// `redis-server` on a free 127.0.0.1 port with an explicit `cluster-port`, no
/// persistence, `cluster-node-timeout` 1000 ms (failover within a few seconds) and
/// `cluster-require-full-coverage no` (a failed shard does not stop the others).
/// Every process dies with the test process (`setpriv --pdeathsig`); `stop()` kills
/// them and removes the directory.
public final class RedisCluster: @unchecked Sendable {
    /// One node: its port and process.
    public final class Node: @unchecked Sendable {
        public let port: Int
        let busPort: Int
        var process: Process?
        init(port: Int, busPort: Int) {
            self.port = port
            self.busPort = busPort
        }
        /// `true` while its process runs.
        public var isRunning: Bool { process?.isRunning == true }
    }

    public let directory: URL
    public private(set) var nodes: [Node] = []

    /// `REDIS_URL` for a relay: `redis+cluster://127.0.0.1:<p1>,…` (every node as a seed).
    public var url: String { "redis+cluster://" + nodes.map { "127.0.0.1:\($0.port)" }.joined(separator: ",") }

    /// Starts `2 × primaries` servers, creates the cluster and waits (15 s at most) until
    /// every node reports `cluster_state:ok` and knows every other node.
    public init(primaries: Int = 3) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("relay-test-cluster-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var used = Set<Int>()
        func port() throws -> Int {
            while true {
                let p = try FreePort.find()
                if used.insert(p).inserted { return p }
            }
        }
        for _ in 0..<(2 * primaries) { nodes.append(Node(port: try port(), busPort: try port())) }
        do {
            for i in nodes.indices {
                // A free port can be taken between the probe and the bind (another process
                // started meanwhile): a node that exits at once gets fresh ports, twice at most.
                var attempt = 1
                while true {
                    do {
                        try start(nodes[i])
                        break
                    } catch {
                        guard attempt < 3, nodes[i].process?.isRunning != true else { throw error }
                        attempt += 1
                        nodes[i] = Node(port: try port(), busPort: try port())
                    }
                }
            }
            _ = try tool("redis-cli", ["--cluster", "create"] + nodes.map { "127.0.0.1:\($0.port)" }
                         + ["--cluster-replicas", "1", "--cluster-yes"])
            try waitHealthy(timeout: 15)
        } catch {
            stop()
            throw error
        }
    }

    private func start(_ n: Node) throws {
        n.process = try ChildProcess.spawn("redis-server", [
                       "--port", String(n.port), "--bind", "127.0.0.1", "--cluster-enabled", "yes",
                       "--cluster-port", String(n.busPort), "--cluster-config-file", "nodes-\(n.port).conf",
                       "--cluster-node-timeout", "1000", "--cluster-require-full-coverage", "no",
                       "--cluster-replica-validity-factor", "0",
                       "--save", "", "--appendonly", "no", "--dir", directory.path, "--loglevel", "warning"])
        guard pollUntil(timeout: 5, { (try? cli(n.port, ["PING"])) == "PONG" }) else {
            throw TestFailure("redis-server :\(n.port) (cluster) did not start")
        }
    }

    /// Waits until every running node says `cluster_state:ok`, every slot is served and
    /// every node sees the same primaries for every slot.
    public func waitHealthy(timeout: Double) throws {
        var last = ""
        let healthy = pollUntil(timeout: timeout, every: 0.05) {
            let running = nodes.filter(\.isRunning)
            let states = running.map { (try? cli($0.port, ["CLUSTER", "INFO"])) ?? "" }
            let maps = running.map { n in (try? primaries(askingPort: n.port)) ?? [:] }
            last = states.first ?? ""
            return states.allSatisfy({ $0.contains("cluster_state:ok") && $0.contains("cluster_slots_assigned:16384") })
                && maps.first.map { first in !first.isEmpty && maps.allSatisfy({ $0 == first }) } == true
        }
        if !healthy { throw TestFailure("Redis Cluster not healthy after \(timeout) s: \(last)") }
    }

    /// The primaries (port, slot ranges) as node `askingPort` sees them (`CLUSTER SHARDS`
    /// would do too; `CLUSTER NODES` lines are simpler to read here).
    public func primaries(askingPort: Int) throws -> [Int: [ClosedRange<Int>]] {
        var out: [Int: [ClosedRange<Int>]] = [:]
        for line in try cli(askingPort, ["CLUSTER", "NODES"]).split(separator: "\n") {
            let f = line.split(separator: " ")
            guard f.count >= 8, f[2].contains("master"), !f[2].contains("fail"),
                  let addr = f[1].split(separator: "@").first, let port = Int(addr.split(separator: ":").last ?? "") else { continue }
            var ranges: [ClosedRange<Int>] = []
            for s in f.dropFirst(8) where !s.hasPrefix("[") {
                let b = s.split(separator: "-").compactMap { Int($0) }
                if b.count == 2 { ranges.append(b[0]...b[1]) } else if b.count == 1 { ranges.append(b[0]...b[0]) }
            }
            if !ranges.isEmpty { out[port] = ranges }
        }
        return out
    }

    /// The port of the primary serving `slot` (asked of any running node).
    public func primaryPort(forSlot slot: Int) throws -> Int {
        guard let asking = nodes.first(where: \.isRunning) else { throw TestFailure("no running node") }
        for (port, ranges) in try primaries(askingPort: asking.port) where ranges.contains(where: { $0.contains(slot) }) { return port }
        throw TestFailure("no primary serves slot \(slot)")
    }

    /// The ports of the replicas of the primary on `port` (`CLUSTER NODES`, asked of it).
    public func replicaPorts(of port: Int) throws -> [Int] {
        let id = try nodeID(port: port)
        return try cli(port, ["CLUSTER", "NODES"]).split(separator: "\n").compactMap { line -> Int? in
            let f = line.split(separator: " ")
            guard f.count >= 4, f[2].contains("slave"), f[3] == id,
                  let addr = f[1].split(separator: "@").first else { return nil }
            return Int(addr.split(separator: ":").last ?? "")
        }
    }

    /// The node id of the node on `port` (`CLUSTER MYID`).
    public func nodeID(port: Int) throws -> String { try cli(port, ["CLUSTER", "MYID"]) }

    /// SIGKILLs the node on `port` (a crashed primary).
    public func kill(port: Int) {
        guard let n = nodes.first(where: { $0.port == port }), let p = n.process, p.isRunning else { return }
        Foundation.kill(p.processIdentifier, SIGKILL)
        p.waitUntilExit()
        n.process = nil
    }

    /// Moves `slot` from its primary to the primary on `to` by hand (Redis Cluster spec,
    /// "Live reconfiguration": `SETSLOT IMPORTING` / `MIGRATING`, `MIGRATE` of each key,
    /// `SETSLOT NODE` everywhere), pausing `pauseMs` between keys so that writers run
    /// into the migration (`ASK` / `TRYAGAIN`). Returns the number of keys moved.
    @discardableResult
    public func migrate(slot: Int, to: Int, pauseMs: UInt32 = 0) throws -> Int {
        let from = try primaryPort(forSlot: slot)
        guard from != to else { return 0 }
        let fromID = try nodeID(port: from), toID = try nodeID(port: to)
        _ = try cli(to, ["CLUSTER", "SETSLOT", String(slot), "IMPORTING", fromID])
        _ = try cli(from, ["CLUSTER", "SETSLOT", String(slot), "MIGRATING", toID])
        var moved = 0
        while true {
            let keys = try cli(from, ["CLUSTER", "GETKEYSINSLOT", String(slot), "1"]).split(separator: "\n").map(String.init)
            guard let k = keys.first, !k.isEmpty else { break }
            let r = try cli(from, ["MIGRATE", "127.0.0.1", String(to), "", "0", "5000", "REPLACE", "KEYS", k])
            guard r == "OK" || r == "NOKEY" else { throw TestFailure("MIGRATE \(k): \(r)") }
            moved += 1
            if pauseMs > 0 { usleep(pauseMs * 1000) }   // pacing on purpose: a slow migration, key by key
        }
        for n in nodes where n.isRunning {
            _ = try? cli(n.port, ["CLUSTER", "SETSLOT", String(slot), "NODE", toID])
        }
        return moved
    }

    /// Kills every node and removes the directory.
    public func stop() {
        for n in nodes { kill(port: n.port) }
        try? FileManager.default.removeItem(at: directory)
    }

    deinit { stop() }

    /// `redis-cli -p <port> --raw <args>`, output trimmed.
    @discardableResult
    public func cli(_ port: Int, _ args: [String]) throws -> String {
        try tool("redis-cli", ["-h", "127.0.0.1", "-p", String(port), "--raw"] + args)
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private func tool(_ name: String, _ args: [String]) throws -> String {
        let r = try ToolProcess.run(TestPaths.which(name), args)
        guard r.status == 0 else { throw TestFailure("\(name) \(args.prefix(4).joined(separator: " ")) failed: \(r.output)") }
        return r.stdout
    }
}
