/// The address of one Redis Cluster node, as it appears in `CLUSTER SLOTS` /
/// `CLUSTER SHARDS` replies and in `MOVED` / `ASK` redirects (`host:port`).
public struct ClusterNode: Sendable, Hashable, CustomStringConvertible {
    /// Host name or IP address (IPv6 without brackets).
    public var host: String
    /// TCP port.
    public var port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Parses `host:port` (the last `:` separates the port, so a bare IPv6 address
    /// works). `nil` for a missing or out-of-range port, or a host of `""` / `"?"`
    /// (Redis' placeholder when a node's endpoint is unknown).
    public init?(_ text: Substring) {
        guard let colon = text.lastIndex(of: ":"), let p = Int(text[text.index(after: colon)...]),
              (1...65535).contains(p) else { return nil }
        var h = String(text[..<colon])
        if h.hasPrefix("["), h.hasSuffix("]") { h = String(h.dropFirst().dropLast()) }
        guard !h.isEmpty, h != "?" else { return nil }
        host = h
        port = p
    }

    public var description: String { "\(host):\(port)" }
}
