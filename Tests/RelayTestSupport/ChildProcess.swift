import Foundation

/// Long-running helper processes of the tests (servers, sidecars).
public enum ChildProcess {
    /// Starts `tool` (found on PATH) with `arguments`, output discarded, under `setpriv
    /// --pdeathsig KILL` so it dies with the test process even when that is killed.
    public static func spawn(_ tool: String, _ arguments: [String]) throws -> Process {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: TestPaths.which("setpriv"))
        p.arguments = ["--pdeathsig", "KILL", TestPaths.which(tool)] + arguments
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        return p
    }
}
