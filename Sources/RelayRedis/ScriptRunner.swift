/// Runs Lua scripts on a `commands` connection with `EVALSHA`, falling back to `EVAL`
/// (which also caches the script) when the SHA is not yet known or Redis answers
/// `NOSCRIPT` (after a restart or `SCRIPT FLUSH`; Redis `EVALSHA` doc).
/// SHAs are learnt with `SCRIPT LOAD` on every (re)connection.
public final class ScriptRunner {
    private let connection: any RedisCommandChannel
    private var shas: [String: String] = [:]

    public init(connection: any RedisCommandChannel) {
        self.connection = connection
    }

    /// Loads `scripts` (`SCRIPT LOAD`) and remembers their SHA1s. Call on connect.
    public func load(_ scripts: [LuaSource]) {
        load(scripts.map(\.text))
    }

    /// Loads scripts given as text (`SCRIPT LOAD`) and remembers their SHA1s.
    public func load(_ scripts: [String]) {
        for s in scripts {
            connection.send(["SCRIPT", "LOAD", s]) { [weak self] r in
                if let sha = r.string, r.errorMessage == nil { self?.shas[s] = sha }
            }
        }
    }

    /// Forgets the SHA of `script` (after a `NOSCRIPT`), so the next call sends `EVAL`.
    public func forget(_ script: String) { shas[script] = nil }

    /// Runs `script` with `keys` and `args`. `reply` gets the script's reply; a
    /// `NOSCRIPT` is retried once with `EVAL` when `retryNoScript` (leave it off where
    /// the caller must keep a pipeline in order and resends itself).
    public func run(_ script: String, keys: [String], args: [String], retryNoScript: Bool = true,
                    reply: @escaping (RedisReply) -> Void) {
        var argv: [String]
        if let sha = shas[script] {
            argv = ["EVALSHA", sha]
        } else {
            argv = ["EVAL", script]
        }
        argv.reserveCapacity(3 + keys.count + args.count)
        argv.append(String(keys.count))
        argv.append(contentsOf: keys)
        argv.append(contentsOf: args)
        connection.send(argv) { [weak self] r in
            if let e = r.errorMessage, RedisErrorCode(message: e) == .noScript {
                self?.forget(script)
                if retryNoScript, let self {
                    self.run(script, keys: keys, args: args, retryNoScript: false, reply: reply)
                    return
                }
            }
            reply(r)
        }
    }

    /// Runs `script` with `keys` and `args` (as `run(_:keys:args:retryNoScript:reply:)`)
    /// and decodes its reply, in one place: `script`'s `Reply(reply:)`. `done` gets an
    /// error reply or a local failure as it is (`RedisFailure`, typed by its first word:
    /// the scripts' own `NOSTREAM`, `FINISHED`, `OUTOFORDER`), a reply of no known shape
    /// as `.unexpectedReply`.
    public func run<Reply>(_ script: LuaScript<Reply>, keys: [String], args: [String], retryNoScript: Bool = true,
                           done: @escaping (Result<Reply, RedisFailure>) -> Void) {
        run(script.text, keys: keys, args: args, retryNoScript: retryNoScript) { r in
            if let f = r.failure { return done(.failure(f)) }
            do throws(RedisFailure) {
                done(.success(try Reply(reply: r)))
            } catch {
                done(.failure(error))
            }
        }
    }
}
