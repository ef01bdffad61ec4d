import Foundation
#if canImport(Glibc)
import Glibc
#endif
import RelayTestKit

/// Runs a program to completion with `posix_spawn` and `waitpid` — not
/// `Foundation.Process`, whose exit detection on Linux can miss a child's exit:
/// `waitUntilExit()` can hang for a `redis-cli` that has exited (a zombie) until another
/// child of the test process (a relay) is killed. swift-corelibs-foundation tracks exits
/// through a socket the child inherits and SIGCHLD; its GitHub issue #4795 shows one way
/// that misses (the socket inherited by another process). `waitpid` on the child's own
/// pid depends on neither.
///
/// stdin, stdout and stderr are files (no pipe to deadlock on, nothing inherited: the
/// descriptors are opened `O_CLOEXEC` and only their `dup2` copies reach the child).
public enum Spawn {
    /// The finished run: exit status (128 + signal when killed by one), stdout, stderr.
    public struct Result {
        public var status: Int32
        public var stdout: Data
        public var stderr: Data
    }

    /// Runs `executable` (an absolute path) with `arguments`, `environment`, `input` on
    /// stdin, in `directory` (the current one when nil).
    /// - Throws: `TestFailure` when it cannot start, or runs longer than `timeout`
    ///   seconds (it is then killed with SIGKILL and reaped).
    public static func run(_ executable: String, _ arguments: [String], environment: [String: String],
                           input: Data = Data(), directory: String? = nil, timeout: Double = 30) throws -> Result {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("spawn-\(UUID().uuidString.prefix(12))").path
        let inPath = base + ".in", outPath = base + ".out", errPath = base + ".err"
        _ = FileManager.default.createFile(atPath: inPath, contents: input)
        defer { for p in [inPath, outPath, errPath] { unlink(p) } }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, inPath, O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, errPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        // In `directory`: through `env --chdir` (coreutils), as glibc's
        // `posix_spawn_file_actions_addchdir_np` is not visible from Swift.
        let command = directory.map { ["/usr/bin/env", "--chdir=\($0)", executable] } ?? [executable]
        let argv = (command + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for p in argv + envp { free(p) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, command[0], &actions, nil, argv, envp)
        guard rc == 0 else { throw TestFailure("\(executable): posix_spawn failed: \(String(cString: strerror(rc)))") }

        var status: Int32 = 0
        func reaped() throws -> Bool {
            let r = waitpid(pid, &status, WNOHANG)
            if r < 0 && errno != EINTR { throw TestFailure("\(executable): waitpid failed: \(String(cString: strerror(errno)))") }
            return r == pid
        }
        let timedOut = try !pollUntil(timeout: timeout, every: 0.002, reaped)
        if timedOut {
            kill(pid, SIGKILL)
            guard try pollUntil(timeout: 10, every: 0.001, reaped) else {
                throw TestFailure("\(executable) did not die of SIGKILL within 10 s")
            }
        }
        if timedOut {
            throw TestFailure("\(executable) \(arguments.prefix(6).joined(separator: " ")) did not finish in \(timeout) s")
        }
        // wait(2) status: exited when the low 7 bits are 0 (code in bits 8–15), else the signal.
        let code = status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
        return Result(status: code,
                      stdout: FileManager.default.contents(atPath: outPath) ?? Data(),
                      stderr: FileManager.default.contents(atPath: errPath) ?? Data())
    }
}
