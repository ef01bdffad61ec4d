import RelayRedis

/// The registry of live relay workers and the generations each owns (docs/DATA_MODEL.md
/// §6.2), read by the orphan sweep so a stream whose owner died is taken over even when
/// no instance has a reader of it:
///
/// * `relay:instances`: sorted set, member = a worker's heartbeat name (unique per
///   process start and worker, `heartbeatName`), score = its heartbeat's expiry, unix ms.
///   One `ZADD` (in `Scripts.heartbeat`) per worker per heartbeat period.
/// * `relay:owned:{<name>}`: set of the scoped request ids whose generation the worker
///   runs (`SADD` when it starts or takes one over, `SREM` when it ends: two commands per
///   stream lifetime). Each key has its own hash tag (Redis Cluster: one slot each).
///
/// Every command goes over the worker's own connection. Loop thread only.
public final class InstanceRegistry {
    /// `relay:instances`.
    public static let instancesKey = "relay:instances"
    /// `relay:owned:{<name>}`: the stream ids heartbeat name `name` owns.
    public static func ownedKey(_ name: String) -> String { "relay:owned:{\(name)}" }

    /// A worker's heartbeat name: `<instance>#<worker>@<startMs>-<nonce>` — the process
    /// start time (unix ms) and a random nonce (hex) make it unique even when a restarted
    /// process reuses the instance name (a container's hostname and pid 1) or two processes
    /// are given the same `RELAY_INSTANCE`, so a live process never passes for a dead one.
    public static func heartbeatName(instance: String, worker: Int, startMs: Int64, nonce: UInt32) -> String {
        "\(instance)#\(worker)@\(startMs)-\(String(nonce, radix: 16))"
    }

    private let connection: any RedisCommandChannel
    private let scripts: ScriptRunner
    /// This worker's heartbeat name.
    public let name: String
    /// `relay:owned:{name}`.
    public let ownedKey: String

    public init(connection: any RedisCommandChannel, scripts: ScriptRunner, name: String) {
        self.connection = connection
        self.scripts = scripts
        self.name = name
        self.ownedKey = InstanceRegistry.ownedKey(name)
    }

    /// Renews the heartbeat (`Scripts.heartbeat`: `ZADD relay:instances <expiryMs> <name>`,
    /// unix ms). `done` gets whether the heartbeat was missing or had lapsed by `nowMs`
    /// (never added; or this worker stalled and other instances' sweeps may have forgotten
    /// its streams or removed it: then the owned set is to be written again).
    public func heartbeat(expiryMs: Int64, nowMs: Int64, done: @escaping (Result<Bool, RedisFailure>) -> Void) {
        scripts.run(Scripts.heartbeat, keys: [InstanceRegistry.instancesKey], args: [name, String(expiryMs), String(nowMs)]) { r in
            done(r.map(\.wasMissingOrLapsed))
        }
    }

    /// Marks this worker's heartbeat lapsed at once (score 0), so the sweeps of the other
    /// instances take over what it still owns (a drain's hand-over).
    public func retire() {
        connection.send(["ZADD", InstanceRegistry.instancesKey, "0", name], nil)
    }

    /// Removes this worker's heartbeat and its owned set (a drain that finished everything).
    public func leave() {
        connection.send(["ZREM", InstanceRegistry.instancesKey, name], nil)
        connection.send(["DEL", ownedKey], nil)
    }

    /// Records that this worker runs the generation of `scopedID`.
    public func own(_ scopedIDs: [String]) {
        guard !scopedIDs.isEmpty else { return }
        connection.send(["SADD", ownedKey] + scopedIDs, nil)
    }

    /// Records that this worker no longer runs the generation of `scopedID`.
    public func disown(_ scopedID: String) {
        connection.send(["SREM", ownedKey, scopedID], nil)
    }

    /// Heartbeat names whose heartbeat lapsed by wall time `nowMs` (unix ms), at most `limit`:
    /// `ZRANGEBYSCORE relay:instances -inf <nowMs> LIMIT 0 <limit>`.
    public func lapsed(nowMs: Int64, limit: Int, done: @escaping (Result<[String], RedisFailure>) -> Void) {
        connection.send(["ZRANGEBYSCORE", InstanceRegistry.instancesKey, "-inf", String(nowMs), "LIMIT", "0", String(limit)]) { r in
            if let f = r.failure { return done(.failure(f)) }
            done(.success((r.array ?? []).compactMap(\.string)))
        }
    }

    /// Up to about `count` stream ids owned by heartbeat name `name` (one `SSCAN` from
    /// cursor 0: the ids handled are removed, so the next call sees the rest).
    public func owned(by name: String, count: Int, done: @escaping (Result<[String], RedisFailure>) -> Void) {
        connection.send(["SSCAN", InstanceRegistry.ownedKey(name), "0", "COUNT", String(count)]) { r in
            if let f = r.failure { return done(.failure(f)) }
            let a = r.array ?? []
            done(.success(a.count == 2 ? (a[1].array ?? []).compactMap(\.string) : []))
        }
    }

    /// Forgets `scopedIDs` from `name`'s owned set (they were taken over, ended, or are gone).
    public func forget(_ scopedIDs: [String], of name: String) {
        guard !scopedIDs.isEmpty else { return }
        connection.send(["SREM", InstanceRegistry.ownedKey(name)] + scopedIDs, nil)
    }

    /// Removes lapsed heartbeat `name` from `relay:instances` if its owned set is empty and
    /// its heartbeat is still lapsed at `nowMs` (`Scripts.removeLapsedInstance`; a worker
    /// that renewed it meanwhile stays). The set is read first (`SCARD`: its own slot on
    /// a cluster); a lapsed worker adds nothing to it, and one that comes back re-adds
    /// its generations when its `ZADD` finds itself removed (`heartbeat`).
    public func removeIfDrained(_ name: String, nowMs: Int64) {
        connection.send(["SCARD", InstanceRegistry.ownedKey(name)]) { [scripts] r in
            guard r.failure == nil, r.int == 0 else { return }
            scripts.run(Scripts.removeLapsedInstance, keys: [InstanceRegistry.instancesKey], args: [name, String(nowMs)]) { _ in }
        }
    }
}
