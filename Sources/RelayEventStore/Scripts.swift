import RelayRedis

/// The Lua scripts of the event store (Redis `EVAL`/`EVALSHA` doc), each run atomically on
/// the one slot of its keys. Each script is a file, `Sources/RelayEventStore/Lua/<name>.lua`,
/// embedded in the module at build time (SwiftPM `.embedInCode`, `PackageResources`) and
/// declared here as `Scripts.<name>`: a `LuaScript` whose type parameter is its reply,
/// decoded in one place (`ScriptReply`). The file's header names its KEYS and ARGV in order
/// (with units) and every reply shape (`LuaSource`); the Swift side keeps a short doc.
/// By role, in their own files: the stream's life (`Scripts+Streams`), ownership
/// (`Scripts+Ownership`), instances and sessions (`Scripts+Sessions`), and the completion
/// webhooks' outbox (`Scripts+Outbox`).
public enum Scripts {
    /// The largest stream entry ID: `XSETID` to it fences a stream after its terminal
    /// event, so any later `XADD` (a lapsed owner's pipelined appends) is refused with
    /// "The stream has exhausted the last possible ID" (Redis `XSETID`, `XADD` docs). The
    /// scripts that fence write it literally (`appendFinal`, `expireLease`, `takeover`,
    /// `appendFenced`).
    public static let fenceID = "18446744073709551615-18446744073709551615"

    /// The event log's scripts, loaded on every (re)connection (`EventLog.connected`); the
    /// lease expiry is the variant `sharded` picks (`expireLeaseSharded` on a Redis Cluster).
    public static func eventLog(sharded: Bool) -> [LuaSource] {
        [create.source, appendFinal.source, appendStatus.source, open.source, catchUp.source,
         (sharded ? expireLeaseSharded : expireLease).source, admit.source, requestCancel.source,
         takeover.source, appendFenced.source, releaseLease.source, refreshLease.source,
         heartbeat.source, removeLapsedInstance.source]
    }

    /// The completion webhooks' outbox scripts (`CompletionWebhookOutbox`), loaded by a
    /// worker that sends webhooks.
    public static let outbox: [LuaSource] = [outboxEnqueue.source, outboxClaim.source, outboxSettle.source, outboxSubject.source]

    /// Every script of this module, each once (one per file in `Lua/`).
    public static var all: [LuaSource] { eventLog(sharded: false) + [expireLeaseSharded.source] + outbox }
}
