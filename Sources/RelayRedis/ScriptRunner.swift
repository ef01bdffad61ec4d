/// Runs Lua scripts on a `commands` connection with `EVALSHA`, falling back to `EVAL`
/// (which also caches the script) when the SHA is not yet known or Redis answers
/// `NOSCRIPT` (after a restart or `SCRIPT FLUSH`; Redis `EVALSHA` doc).
/// SHAs are learnt with `SCRIPT LOAD` on every (re)connection.
public final class ScriptRunner {
    private let connection: any RedisCommandChannel
    /// SHAs of scripts given as text, by their text.
    private var shas: [String: String] = [:]
    /// SHAs of the relay's scripts, by their `LuaSource.identity` (cheap to hash).
    private var sourceShas: [ObjectIdentifier: String] = [:]

    public init(connection: any RedisCommandChannel) {
        self.connection = connection
    }

    /// Loads `scripts` (`SCRIPT LOAD`) and remembers their SHA1s. Call on connect.
    public func load(_ scripts: [LuaSource]) {
        for s in scripts {
            let key = ObjectIdentifier(s.identity)
            connection.send(["SCRIPT", "LOAD", s.text]) { [weak self] r in
                if let sha = r.string, r.errorMessage == nil { self?.sourceShas[key] = sha }
            }
        }
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
        run(script, sha: { $0.shas[script] }, forget: { $0.forget(script) }, keys: keys, args: args,
            retryNoScript: retryNoScript, reply: reply)
    }

    /// `run` of `text`, its SHA looked up by `sha` and dropped by `forget` after a `NOSCRIPT`.
    private func run(_ text: String, sha: @escaping (ScriptRunner) -> String?, forget: @escaping (ScriptRunner) -> Void,
                     keys: [String], args: [String], retryNoScript: Bool, reply: @escaping (RedisReply) -> Void) {
        var argv: [String]
        if let sha = sha(self) {
            argv = ["EVALSHA", sha]
        } else {
            argv = ["EVAL", text]
        }
        argv.reserveCapacity(3 + keys.count + args.count)
        argv.append(String(keys.count))
        argv.append(contentsOf: keys)
        argv.append(contentsOf: args)
        connection.send(argv) { [weak self] r in
            if let e = r.errorMessage, RedisErrorCode(message: e) == .noScript, let self {
                forget(self)
                if retryNoScript {
                    self.run(text, sha: sha, forget: forget, keys: keys, args: args, retryNoScript: false, reply: reply)
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
        let key = ObjectIdentifier(script.source.identity)
        run(script.text, sha: { $0.sourceShas[key] }, forget: { $0.sourceShas[key] = nil }, keys: keys, args: args,
            retryNoScript: retryNoScript) { r in
            if let f = r.failure { return done(.failure(f)) }
            do throws(RedisFailure) {
                done(.success(try Reply(reply: r)))
            } catch {
                done(.failure(error))
            }
        }
    }
}
