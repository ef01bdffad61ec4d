import Foundation

/// `stream-relay <command>`: serve (default), chat, mint-token, revoke, docs, version,
/// help (see `CommandTable`).
exit(await CommandTable.main(Array(CommandLine.arguments.dropFirst())))
