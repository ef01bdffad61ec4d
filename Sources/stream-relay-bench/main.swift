import Foundation

// stream-relay-bench: a native SSE load generator (libevent bufferevents, one loop)
// for StreamRelay and, side by side, nginx + nchan on the same Redis.
exit(Bench.main(Array(CommandLine.arguments.dropFirst())))
