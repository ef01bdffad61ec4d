// The input layout of the targets that take options (sse_parser, request_head, request_framer):
// byte 0 = option flags, byte 1 = where to split the payload, the rest = the payload.

struct FuzzInput {
    /// Option bits chosen by the fuzzer.
    let flags: UInt8
    /// The bytes under test.
    let payload: ArraySlice<UInt8>
    /// A split point in `0...payload.count`.
    let cut: Int

    init?(_ data: UnsafePointer<UInt8>, _ size: Int) {
        guard size >= 2 else { return nil }
        flags = data[0]
        payload = Array(UnsafeBufferPointer(start: data + 2, count: size - 2))[...]
        cut = Int(data[1]) % (payload.count + 1)
    }
}
