import RelayCore

/// One Redis command written in the Redis protocol as its arguments are added ("Redis
/// serialization protocol specification", RESP: `*<argc>\r\n`, then `$<len>\r\n<bytes>\r\n`
/// per argument), into one byte buffer that is reused from command to command.
///
/// The append path sends a few commands per event (`XADD`, `PUBLISH`, and per
/// group of events two `SETRANGE`s, the offsets' binary, and `PEXPIRE`s).
/// Built as `[String]`, each would cost an array, a retain and release per argument, and a
/// `String` per integer argument (`"<seq>-0"`, offsets, the live payload
/// `"<seq> <json>"`). Here integers are written as ASCII digits in place and strings are
/// copied once, straight into the bytes that `RedisConnection` hands to hiredis
/// (`redisAppendFormattedCommand`).
///
/// Usage: `start(argumentCount:)`, then exactly that many `add…` calls, then
/// `RedisCommandChannel.send(_:view:)`. The bytes stay valid until the next `start`.
/// Not thread-safe: one per loop thread (each owner keeps its own).
public final class RESPCommand {
    // Loop-thread confined and no access spans a call out: the run-time exclusivity
    // check (`swift_beginAccess`, per property access) would guard nothing here.
    @exclusivity(unchecked) private var storage: UnsafeMutablePointer<UInt8>
    /// The buffer's size, bytes (grows by doubling; back to `initialCapacity` at the next
    /// `start` once past `retainLimit`).
    @exclusivity(unchecked) public private(set) var capacity: Int
    /// The size the buffer starts with and returns to, bytes.
    private let initialCapacity: Int
    /// Bytes written so far.
    @exclusivity(unchecked) public private(set) var count = 0
    /// Arguments announced by `start` (the `*<argc>` header).
    @exclusivity(unchecked) public private(set) var argumentCount = 0
    /// Arguments added since `start`.
    @exclusivity(unchecked) public private(set) var added = 0

    /// The largest buffer kept from one command to the next, bytes (64 KiB, well above
    /// the append path's usual commands: a delta's `XADD`, a group's `SETRANGE`s). A
    /// buffer grown past it by one huge command (a 1 MiB delta, or a `SETRANGE` of 32 of
    /// them) is given back at the next `start`, instead of staying allocated for the life
    /// of the worker.
    public static let retainLimit = 64 * 1024

    /// - Parameter capacity: initial buffer size, bytes (grows by doubling as needed).
    public init(capacity: Int = 1024) {
        self.capacity = max(64, capacity)
        initialCapacity = self.capacity
        storage = .allocate(capacity: self.capacity)
    }

    deinit { storage.deallocate() }

    /// `true` when every announced argument was added.
    public var isComplete: Bool { added == argumentCount }

    /// The command's RESP bytes (valid until the next `start` or `add…`).
    public var bytes: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(start: storage, count: count) }

    /// Begins a command of `argumentCount` (≥ 1) arguments, dropping the previous one.
    public func start(argumentCount n: Int) {
        count = 0
        added = 0
        argumentCount = n
        if capacity > RESPCommand.retainLimit && capacity > initialCapacity { shrink() }
        reserve(1 + 20 + 2)
        header(UInt8(ascii: "*"), n)
    }

    /// Adds a string argument (its UTF-8 bytes, binary-safe).
    public func add(_ s: String) {
        if let done = s.utf8.withContiguousStorageIfAvailable({ add(bytes: $0) }) { return done }
        var native = s   // not contiguous UTF-8 (a bridged string): made native first
        native.withUTF8 { add(bytes: $0) }
    }

    /// Adds a constant argument (a command name, a keyword).
    public func add(constant s: StaticString) {
        add(bytes: UnsafeBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
    }

    /// Adds a run of arguments written once (`RESPArguments`): one copy.
    public func add(_ run: RESPArguments) {
        run.bytes.withUnsafeBufferPointer { src in
            reserve(src.count)
            copy(src)
        }
        added += run.count
    }

    /// Adds a non-negative integer as decimal digits (Redis parses integer arguments
    /// from their decimal text).
    public func add(_ v: UInt64) {
        add(prefix: nil, v, suffix: nil)
    }

    /// Adds an integer as decimal digits, with a leading `-` when negative (written as
    /// given, so a command that must not take one is refused by Redis, not silently
    /// changed).
    public func add(_ v: Int) {
        add(prefix: v < 0 ? UInt8(ascii: "-") : nil, UInt64(v.magnitude), suffix: nil)
    }

    /// Adds a stream entry ID `<seq>-0` (the explicit IDs of the event log, `XADD`).
    public func add(entryID seq: UInt64) {
        add(prefix: nil, seq, suffix: UInt8(ascii: "0"))
    }

    /// Adds `<seq> <text>` as one argument (the live channel's message, `LivePayload`).
    public func add(seq: UInt64, space text: String) {
        var t = text
        t.withUTF8 { src in
            let digits = ASCIIDecimal.digits(seq)
            let length = digits + 1 + src.count
            reserve(1 + 20 + 2 + length + 2)
            header(UInt8(ascii: "$"), length)
            ASCIIDecimal.write(seq, digits: digits, to: UnsafeMutableRawPointer(storage + count))
            storage[count + digits] = 0x20
            count += digits + 1
            copy(src)
            crlf()
        }
        added += 1
    }

    /// Adds raw bytes as one argument. Pass valid UTF-8: a channel that routes or resends
    /// by argument (`ClusterClient`, through `arguments()`) carries arguments as strings,
    /// and would replace other bytes with U+FFFD.
    public func add(bytes src: UnsafeBufferPointer<UInt8>) {
        reserve(1 + 20 + 2 + src.count + 2)
        header(UInt8(ascii: "$"), src.count)
        copy(src)
        crlf()
        added += 1
    }

    /// `[prefix]<v>[-suffix]` as one argument: `suffix` is written after a dash.
    private func add(prefix: UInt8?, _ v: UInt64, suffix: UInt8?) {
        let digits = ASCIIDecimal.digits(v)
        let length = (prefix == nil ? 0 : 1) + digits + (suffix == nil ? 0 : 2)
        reserve(1 + 20 + 2 + length + 2)
        header(UInt8(ascii: "$"), length)
        if let prefix {
            storage[count] = prefix
            count += 1
        }
        ASCIIDecimal.write(v, digits: digits, to: UnsafeMutableRawPointer(storage + count))
        count += digits
        if let suffix {
            storage[count] = UInt8(ascii: "-")
            storage[count + 1] = suffix
            count += 2
        }
        crlf()
        added += 1
    }

    /// The command's RESP bytes as an array of its own (outlives the next `start`): for a
    /// channel that keeps a command to resend it (`ClusterClient` on `MOVED`/`ASK`).
    public var encoded: [UInt8] { Array(bytes) }

    /// The arguments back as strings (UTF-8 decoded: a binary argument, such as the
    /// offsets' `SETRANGE`, is not kept exactly; resend `encoded`), for routing by key
    /// and for tests. The bytes are this type's own output.
    public func arguments() -> [String] {
        var out: [String] = []
        out.reserveCapacity(argumentCount)
        var at = 0
        func number() -> Int {
            var n = 0
            while storage[at] != 13 {
                n = n * 10 + Int(storage[at] &- 0x30)
                at += 1
            }
            at += 2
            return n
        }
        guard count > 0 else { return [] }
        at = 1
        let n = number()
        for _ in 0..<n where at < count {
            at += 1   // `$`
            let len = number()
            out.append(String(decoding: UnsafeBufferPointer(start: storage + at, count: len), as: UTF8.self))
            at += len + 2
        }
        return out
    }

    /// `<marker><n>\r\n` (a RESP array or bulk string header); room was reserved.
    @inline(__always)
    private func header(_ marker: UInt8, _ n: Int) {
        let p = storage + count
        p[0] = marker
        let digits = ASCIIDecimal.digits(UInt64(n))
        ASCIIDecimal.write(UInt64(n), digits: digits, to: UnsafeMutableRawPointer(p + 1))
        p[1 + digits] = 13
        p[2 + digits] = 10
        count += 3 + digits
    }

    @inline(__always)
    private func copy(_ src: UnsafeBufferPointer<UInt8>) {
        if let s = src.baseAddress, src.count > 0 { (storage + count).update(from: s, count: src.count) }
        count += src.count
    }

    @inline(__always)
    private func crlf() {
        let p = storage + count
        p[0] = 13
        p[1] = 10
        count += 2
    }

    /// Makes room for `more` bytes, plus one for the NUL `withTerminatedBytes` puts
    /// after the command (hiredis takes it as a `const char *` with its length).
    @inline(__always)
    private func reserve(_ more: Int) {
        if count + more + 1 > capacity { grow(count + more + 1) }
    }

    /// Gives a buffer grown past `retainLimit` back (nothing is written: called by `start`).
    private func shrink() {
        storage.deallocate()
        capacity = initialCapacity
        storage = .allocate(capacity: capacity)
    }

    private func grow(_ needed: Int) {
        var c = capacity * 2
        while c < needed { c *= 2 }
        let bigger = UnsafeMutablePointer<UInt8>.allocate(capacity: c)
        bigger.initialize(from: storage, count: count)
        storage.deallocate()
        storage = bigger
        capacity = c
    }

    /// Writes a NUL after the command (not counted) and runs `body` with the command as a
    /// C string of `count` bytes (`redisAppendFormattedCommand`).
    func withTerminatedBytes<R>(_ body: (UnsafePointer<CChar>, Int) -> R) -> R {
        storage[count] = 0
        return storage.withMemoryRebound(to: CChar.self, capacity: count + 1) { body($0, count) }
    }
}
