// libFuzzer target: RelayCore.ChatRequest.parse (the POST body decoder).
// Invariants: never crashes; an accepted body has 1–1000 messages with known roles (tool
// messages included), and its `jsonBody` parses back to the same request (round trip; tools
// included, their schemas' member order kept).
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzChatRequest(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let body = Data(bytes: data, count: size)
    guard let req = try? ChatRequest.parse(body) else { return 0 }
    guard (1...1000).contains(req.messages.count),
          req.messages.allSatisfy({ ["system", "user", "assistant", "tool"].contains($0.role) }) else {
        fatalError("accepted an invalid request")
    }
    guard let again = try? ChatRequest.parse(req.jsonBody), again == req else {
        fatalError("jsonBody does not parse back to the same request")
    }
    return 0
}
