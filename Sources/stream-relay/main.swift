import Foundation

/// `stream-relay <command>`: serve (default), chat, mint-token, revoke, version, help
/// (see `CommandTable`).
exit(await CommandTable.main(Array(CommandLine.arguments.dropFirst())))
