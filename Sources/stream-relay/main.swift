import Foundation

/// `stream-relay <command>`: serve (default), chat, mint-token, revoke.
let usage = """
usage: stream-relay [serve] [options]     run a relay instance (see serve --help)
       stream-relay mint-token …          sign a development JWT
       stream-relay revoke SESSION_ID     revoke a session everywhere (talks to Redis)
       stream-relay chat …                terminal chat client (see chat --help)
       stream-relay docs errors|config    print a README table generated from the code
"""

var args = Array(CommandLine.arguments.dropFirst())
let command = args.first.flatMap { $0.hasPrefix("-") ? nil : $0 } ?? "serve"
if args.first == command { args.removeFirst() }

let code: Int32
switch command {
case "serve": code = ServeCommand.run(arguments: args)
case "mint-token": code = MintTokenCommand.run(arguments: args)
case "revoke": code = RevokeCommand.run(arguments: args)
case "chat": code = await ChatCommand.run(arguments: args)
case "docs": code = DocsCommand.run(arguments: args)
case "help": print(usage); code = 0
default:
    printError("stream-relay: unknown command \(command)\n\(usage)\n")
    code = 2
}
exit(code)
