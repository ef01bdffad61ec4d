import Foundation

/// `stream-relay <command>`: serve (default), chat, mint-token, revoke, docs, version,
/// help (see `CommandTable`).
// Every command that talks to Redis writes with hiredis' write(2) (RedisConnection): a
// Redis that went away must show up as a write error, not kill the process.
signal(SIGPIPE, SIG_IGN)
exit(await CommandTable.main(Array(CommandLine.arguments.dropFirst())))
