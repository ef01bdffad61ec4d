import Foundation

/// Where the relay finds Redis: `redis://host:port[/db]`, `unix:///path[?db=N]`, or a
/// Redis Cluster, `redis+cluster://host:port[,host:port…]` (seed nodes; the slot map is
/// read from them with `CLUSTER SLOTS`).
public enum RedisEndpoint: Sendable, Equatable, CustomStringConvertible {
    case tcp(host: String, port: Int, db: Int)
    case unix(path: String, db: Int)
    /// Redis Cluster seed nodes (at least one), each `(host, port)` as given.
    case cluster(seeds: [ClusterSeed])

    /// One seed node of `redis+cluster://`.
    public struct ClusterSeed: Sendable, Equatable, CustomStringConvertible {
        public var host: String
        public var port: Int
        public init(host: String, port: Int) {
            self.host = host
            self.port = port
        }
        public var description: String { "\(host):\(port)" }
    }

    /// Where docs/REDIS.md documents the TLS sidecar for managed Redis (hiredis 0.14 has no TLS).
    public static let tlsRecipe = "docs/REDIS.md \"Managed Redis with TLS\" (stunnel4 sidecar)"

    /// Parses a `REDIS_URL`.
    /// - Throws: `ConfigError` for another scheme, a missing host or path, a port outside
    ///   1…65535 or a database index that is not a small non-negative integer.
    public static func parse(_ url: String) throws -> RedisEndpoint {
        if url.hasPrefix("rediss://") || url.hasPrefix("rediss+cluster://") {
            throw ConfigError("REDIS_URL: TLS (rediss://) is not supported by this build's hiredis 0.14; run a TLS sidecar and point REDIS_URL at it, see \(tlsRecipe)")
        }
        if url.hasPrefix("redis+cluster://") {
            var seeds: [ClusterSeed] = []
            for part in url.dropFirst("redis+cluster://".count).split(separator: ",", omittingEmptySubsequences: false) {
                guard let colon = part.lastIndex(of: ":"), let p = Int(part[part.index(after: colon)...]),
                      (1...65535).contains(p), colon > part.startIndex else {
                    throw ConfigError("REDIS_URL: redis+cluster:// needs host:port seeds separated by commas, got \(url)")
                }
                seeds.append(ClusterSeed(host: String(part[..<colon]), port: p))
            }
            return .cluster(seeds: seeds)
        }
        if url.hasPrefix("unix://") {
            var rest = String(url.dropFirst("unix://".count))
            var db = 0
            if let q = rest.firstIndex(of: "?") {
                let query = rest[rest.index(after: q)...]
                rest = String(rest[..<q])
                for part in query.split(separator: "&") where part.hasPrefix("db=") {
                    guard let d = Int(part.dropFirst(3)), d >= 0, d < 1024 else { throw ConfigError("REDIS_URL: bad db in \(url)") }
                    db = d
                }
            }
            guard rest.hasPrefix("/"), rest.count > 1 else { throw ConfigError("REDIS_URL: unix:// needs an absolute socket path, got \(url)") }
            return .unix(path: rest, db: db)
        }
        guard url.hasPrefix("redis://") else { throw ConfigError("REDIS_URL must start with redis://, redis+cluster:// or unix://, got \(url)") }
        var rest = Substring(url.dropFirst("redis://".count))
        if let at = rest.lastIndex(of: "@") { rest = rest[rest.index(after: at)...] } // credentials unsupported: ignored host part
        var db = 0
        if let slash = rest.firstIndex(of: "/") {
            let d = rest[rest.index(after: slash)...]
            if !d.isEmpty {
                guard let v = Int(d), v >= 0, v < 1024 else { throw ConfigError("REDIS_URL: bad db in \(url)") }
                db = v
            }
            rest = rest[..<slash]
        }
        var host = String(rest)
        var port = 6379
        if let colon = rest.lastIndex(of: ":") {
            host = String(rest[..<colon])
            guard let p = Int(rest[rest.index(after: colon)...]), (1...65535).contains(p) else {
                throw ConfigError("REDIS_URL: bad port in \(url)")
            }
            port = p
        }
        guard !host.isEmpty else { throw ConfigError("REDIS_URL: missing host in \(url)") }
        return .tcp(host: host, port: port, db: db)
    }

    public var description: String {
        switch self {
        case .tcp(let h, let p, let db): return "redis://\(h):\(p)/\(db)"
        case .unix(let path, let db): return db == 0 ? "unix://\(path)" : "unix://\(path)?db=\(db)"
        case .cluster(let seeds): return "redis+cluster://" + seeds.map(\.description).joined(separator: ",")
        }
    }
}
