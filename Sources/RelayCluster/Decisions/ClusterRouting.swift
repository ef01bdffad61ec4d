/// Where a cluster client sends a command (Redis command docs, "key specs"): by the
/// slot of its first key, to every primary (script cache management), or to any node.
public enum ClusterRouting: Sendable, Equatable {
    /// The command's keys are in one slot, this one's.
    case slot(Int)
    /// `SCRIPT LOAD` / `SCRIPT FLUSH`: every primary (each node has its own script cache).
    case allPrimaries
    /// No key (`PING`, `PUBLISH` — propagated cluster-wide by the cluster bus).
    case anyNode

    /// Routing for the argument vector of one command. `EVAL`/`EVALSHA`/`FCALL`: the
    /// first key after `numkeys` (a script with no key goes to any node). Key-less
    /// commands the relay sends are listed; every other command's key is `args[1]`.
    public static func of(_ args: [String]) -> ClusterRouting {
        guard let name = args.first?.uppercased() else { return .anyNode }
        switch name {
        case "EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL":
            guard args.count > 3, let n = Int(args[2]), n > 0 else { return .anyNode }
            return .slot(HashSlot.of(args[3]))
        case "SCRIPT":
            return .allPrimaries
        case "PING", "PUBLISH", "INFO", "CLUSTER", "TIME", "ECHO":
            return .anyNode
        default:
            return args.count > 1 ? .slot(HashSlot.of(args[1])) : .anyNode
        }
    }
}
