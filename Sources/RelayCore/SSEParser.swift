import Foundation

/// Errors thrown by `SSEParser.feed`.
public enum SSEParserError: Error, Equatable {
    /// A line (bytes between two line terminators, terminator excluded, after the stream's
    /// leading BOM is stripped) grew beyond `limit` bytes. Thrown as soon as the buffered
    /// partial line exceeds the limit, without waiting for its end, so memory stays bounded
    /// against an endless line. `limit` is the parser's `maxLineBytes`.
    case lineTooLong(limit: Int)
}

/// An incremental, byte-oriented `text/event-stream` parser following the WHATWG HTML Living
/// Standard §9.2.5 ("Parsing an event stream") and §9.2.6 ("Interpreting an event stream").
///
/// Feed it the response body in chunks of any size, split anywhere (inside a CRLF pair, inside
/// a multi-byte UTF-8 character, inside the leading BOM): the items returned over all `feed`
/// calls are identical to those of feeding the whole body at once. Call `finish()` at end of
/// stream.
///
/// How the spec maps onto this type:
/// * One leading UTF-8 BOM (`EF BB BF`) is stripped, only at stream start, only one (§9.2.5,
///   "UTF-8 decode").
/// * Lines end in CRLF, LF or CR (§9.2.5). A CR is acted on immediately (CR-only streams do not
///   stall); an LF that directly follows it, even in the next chunk, is skipped.
/// * Every line is decoded from UTF-8 with U+FFFD replacement (one per maximal invalid subpart,
///   as the spec's UTF-8 decode does). Decoding per line equals decoding the whole stream since
///   CR and LF are ASCII and always end an invalid subpart.
/// * Blank line: dispatch (§9.2.6). `:` first: comment, returned as `.comment` (the spec ignores
///   it; callers use it for keep-alive detection). Otherwise field/value split at the first
///   colon, one leading U+0020 of the value removed; no colon: whole line is the field name,
///   value empty. Fields `event`, `data`, `id`, `retry` are processed, others ignored; names are
///   case-sensitive.
///
/// Memory: one partial-line byte buffer (at most `maxLineBytes`), the current block's data
/// bytes and event type bytes. Input is scanned 8 bytes at a time for CR/LF and each byte is
/// scanned once, so a long line arriving in many small chunks costs linear time.
public struct SSEParser: Sendable {
    /// One parsed item, in stream order.
    public enum Item: Sendable, Equatable {
        /// A dispatched event (§9.2.6 "dispatch the event").
        case event(SSEMessage)
        /// A comment line: the text after the leading `:`, with one leading U+0020 removed
        /// (`": ping"` → `"ping"`). Comments never change the parser's state.
        case comment(String)
    }

    /// Creates a parser for one stream.
    /// - Parameter maxLineBytes: the longest accepted line in bytes (terminator excluded);
    ///   a longer line makes `feed` throw `SSEParserError.lineTooLong(limit: maxLineBytes)`.
    ///   Default 1 MiB. Must be ≥ 0.
    public init(maxLineBytes: Int = 1 << 20) {
        precondition(maxLineBytes >= 0, "maxLineBytes must be >= 0")
        self.maxLineBytes = maxLineBytes
    }

    /// The longest accepted line in bytes, terminator excluded (see `init(maxLineBytes:)`).
    public let maxLineBytes: Int

    /// The stream's last event ID string (§9.2.6 dispatch step 1): updated from the last
    /// accepted `id` field each time a blank line is processed, whether or not an event is
    /// dispatched (so `id: 5` + blank line with no data still sets it to `"5"`). An `id` field
    /// of a block that is not yet ended by a blank line is not reflected here, and is dropped
    /// by `finish()`. Persists across events and across `finish()`; send it as
    /// `Last-Event-ID` on reconnection (empty means: send no header).
    public private(set) var lastEventId: String = ""

    /// The last valid `retry` field value: the stream's reconnection time in milliseconds
    /// (§9.2.6, applied as soon as the line is processed, no blank line needed). `nil` until the
    /// stream sends one. Only values made of one or more ASCII digits that fit in `Int` are
    /// accepted; anything else (`""`, `" 10"`, `"10x"`, `"-1"`, overflow) is ignored.
    public private(set) var retry: Int?

    // MARK: state

    /// Bytes of the current line received so far when it spans chunks; empty otherwise.
    private var lineBuffer: [UInt8] = []
    /// The previous chunk ended with a CR: skip an LF at the start of the next one.
    private var pendingCR = false
    /// How many bytes of the leading BOM have been matched (0...3), while `bomDone` is false.
    private var bomMatched = 0
    /// The stream's first bytes have been checked for a BOM.
    private var bomDone = false
    /// §9.2.6 data buffer, as UTF-8 bytes (each `data` value followed by LF).
    private var dataBuffer: [UInt8] = []
    /// §9.2.6 event type buffer, as UTF-8 bytes.
    private var eventTypeBuffer: [UInt8] = []
    /// §9.2.6 last event ID buffer (committed to `lastEventId` at each blank line).
    private var lastEventIdBuffer: String = ""
    /// Set once `feed` has thrown; cleared by `finish()`.
    private var failure: SSEParserError?

    /// Buffers above this capacity are released instead of reused once drained.
    private static let retainedCapacity = 64 * 1024

    // MARK: feeding

    /// Parses the next chunk of the stream and returns the items it completes, in order.
    ///
    /// - Parameter bytes: raw UTF-8 bytes of the response body, any length (empty is a no-op).
    /// - Returns: comments and dispatched events whose terminating line ended in this chunk.
    /// - Throws: `SSEParserError.lineTooLong` when a line exceeds `maxLineBytes`. The stream is
    ///   then unusable: items completed earlier in the same call are not returned, and
    ///   `lastEventId` and `retry` are rolled back to their values before this call, so a
    ///   reconnection with `lastEventId` gets those events again (nothing is skipped). Every
    ///   later `feed` throws the same error until `finish()`.
    public mutating func feed(_ bytes: UnsafeRawBufferPointer) throws -> [Item] {
        if let failure { throw failure }
        guard let base = bytes.baseAddress, bytes.count > 0 else { return [] }
        let input = UnsafeBufferPointer(start: base.assumingMemoryBound(to: UInt8.self), count: bytes.count)
        let savedId = lastEventId
        let savedRetry = retry
        var out: [Item] = []
        do {
            try scan(input, into: &out)
        } catch {
            lastEventId = savedId
            retry = savedRetry
            failure = error
            lineBuffer = []
            dataBuffer = []
            eventTypeBuffer = []
            throw error
        }
        return out
    }

    /// Parses the next chunk given as a byte array. Same contract as `feed(_: UnsafeRawBufferPointer)`.
    public mutating func feed(_ bytes: [UInt8]) throws -> [Item] {
        try bytes.withUnsafeBytes { try feed($0) }
    }

    /// Parses the next chunk given as `Data`. Same contract as `feed(_: UnsafeRawBufferPointer)`.
    public mutating func feed(_ data: Data) throws -> [Item] {
        try data.withUnsafeBytes { try feed($0) }
    }

    /// Parses the next chunk given as text, fed as its UTF-8 bytes (a leading `"\u{FEFF}"` at
    /// stream start is the BOM and is stripped). Same contract as
    /// `feed(_: UnsafeRawBufferPointer)`.
    public mutating func feed(_ text: String) throws -> [Item] {
        var text = text
        return try text.withUTF8 { try feed(UnsafeRawBufferPointer($0)) }
    }

    /// Ends the stream (§9.2.5: "Once the end of the file is reached, any pending data must be
    /// discarded").
    ///
    /// Discards the unterminated last line, the pending data and event type buffers, and the
    /// pending last event ID buffer: an `id` of a block not yet ended by a blank line never
    /// reaches `lastEventId`, because per §9.2.6 only dispatch (a blank line) copies the buffer
    /// into the last event ID string. `lastEventId` and `retry` are kept.
    ///
    /// The parser is then reset for a next stream (a reconnection): BOM stripping is re-armed, a
    /// previous `lineTooLong` failure is cleared, and the last event ID buffer starts from
    /// `lastEventId` (so an event of the new stream without `id` keeps the resumed ID, as
    /// EventSource's last event ID string does).
    ///
    /// - Returns: always `[]`: per spec nothing is dispatched at end of stream (a line ended by
    ///   a final CR was already processed by `feed`). The result exists for API symmetry.
    @discardableResult
    public mutating func finish() -> [Item] {
        lineBuffer = []
        pendingCR = false
        bomMatched = 0
        bomDone = false
        dataBuffer = []
        eventTypeBuffer = []
        lastEventIdBuffer = lastEventId
        failure = nil
        return []
    }

    // MARK: scanning

    private static let lf: UInt8 = 0x0A
    private static let cr: UInt8 = 0x0D
    private static let colon: UInt8 = 0x3A
    private static let space: UInt8 = 0x20

    @inline(__always)
    private static func bomByte(_ k: Int) -> UInt8 {
        k == 0 ? 0xEF : (k == 1 ? 0xBB : 0xBF)
    }

    private mutating func scan(_ input: UnsafeBufferPointer<UInt8>, into out: inout [Item]) throws(SSEParserError) {
        let n = input.count
        var i = 0

        if !bomDone {
            while i < n, bomMatched < 3, input[i] == Self.bomByte(bomMatched) {
                bomMatched += 1
                i += 1
            }
            if bomMatched == 3 {
                bomDone = true
            } else if i < n {
                // Not a BOM: the matched prefix (EF or EF BB) is ordinary line content.
                for k in 0..<bomMatched { lineBuffer.append(Self.bomByte(k)) }
                bomDone = true
            } else {
                return  // still a possible BOM prefix; wait for more bytes
            }
        }

        if pendingCR, i < n {
            pendingCR = false
            if input[i] == Self.lf { i += 1 }
        }

        while i < n {
            let j = Self.firstLineBreak(input, from: i, to: n)
            if j == n {
                if lineBuffer.count + (n - i) > maxLineBytes { throw .lineTooLong(limit: maxLineBytes) }
                lineBuffer.append(contentsOf: UnsafeBufferPointer(rebasing: input[i..<n]))
                return
            }
            if lineBuffer.isEmpty {
                if j - i > maxLineBytes { throw .lineTooLong(limit: maxLineBytes) }
                processLine(UnsafeBufferPointer(rebasing: input[i..<j]), into: &out)
            } else {
                if lineBuffer.count + (j - i) > maxLineBytes { throw .lineTooLong(limit: maxLineBytes) }
                var line: [UInt8] = []
                swap(&line, &lineBuffer)
                line.append(contentsOf: UnsafeBufferPointer(rebasing: input[i..<j]))
                line.withUnsafeBufferPointer { processLine($0, into: &out) }
                line.removeAll(keepingCapacity: line.capacity <= Self.retainedCapacity)
                swap(&line, &lineBuffer)
            }
            if input[j] == Self.cr {
                if j + 1 < n {
                    i = input[j + 1] == Self.lf ? j + 2 : j + 1
                } else {
                    pendingCR = true
                    i = j + 1
                }
            } else {
                i = j + 1
            }
        }
    }

    /// Index of the first CR or LF in `p[from..<to]`, or `to`. Checks 8 bytes per step
    /// (SWAR zero-byte test on `word ^ 0x0A…` and `word ^ 0x0D…`), then finishes bytewise.
    @inline(__always)
    private static func firstLineBreak(_ p: UnsafeBufferPointer<UInt8>, from: Int, to end: Int) -> Int {
        var i = from
        let raw = UnsafeRawPointer(p.baseAddress!)
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        let lfs: UInt64 = 0x0A0A_0A0A_0A0A_0A0A
        let crs: UInt64 = 0x0D0D_0D0D_0D0D_0D0D
        while i &+ 8 <= end {
            let w = raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            let a = w ^ lfs
            let b = w ^ crs
            if ((a &- ones) & ~a & highs) | ((b &- ones) & ~b & highs) != 0 { break }
            i &+= 8
        }
        while i < end {
            let c = p[i]
            if c == lf || c == cr { return i }
            i &+= 1
        }
        return end
    }

    // MARK: interpreting (§9.2.6)

    /// Processes one complete line (terminator excluded).
    private mutating func processLine(_ line: UnsafeBufferPointer<UInt8>, into out: inout [Item]) {
        let n = line.count
        if n == 0 {
            dispatch(into: &out)
            return
        }
        if line[0] == Self.colon {
            var s = 1
            if s < n, line[s] == Self.space { s += 1 }
            out.append(.comment(String(decoding: UnsafeBufferPointer(rebasing: line[s..<n]), as: UTF8.self)))
            return
        }
        var c = 0
        while c < n, line[c] != Self.colon { c += 1 }
        var v = c < n ? c + 1 : n
        if v < n, line[v] == Self.space { v += 1 }
        let value = UnsafeBufferPointer(rebasing: line[v..<n])

        switch c {
        case 4 where line[0] == 0x64 && line[1] == 0x61 && line[2] == 0x74 && line[3] == 0x61:  // data
            dataBuffer.append(contentsOf: value)
            dataBuffer.append(Self.lf)
        case 5 where line[0] == 0x65 && line[1] == 0x76 && line[2] == 0x65 && line[3] == 0x6E && line[4] == 0x74:  // event
            eventTypeBuffer.removeAll(keepingCapacity: true)
            eventTypeBuffer.append(contentsOf: value)
        case 2 where line[0] == 0x69 && line[1] == 0x64:  // id
            if !value.contains(0) {
                lastEventIdBuffer = String(decoding: value, as: UTF8.self)
            }
        case 5 where line[0] == 0x72 && line[1] == 0x65 && line[2] == 0x74 && line[3] == 0x72 && line[4] == 0x79:  // retry
            if let ms = Self.parseDigits(value) { retry = ms }
        default:
            break  // unknown field: ignored
        }
    }

    /// Base-10 value of a non-empty all-ASCII-digit string that fits in `Int`, else `nil`.
    private static func parseDigits(_ value: UnsafeBufferPointer<UInt8>) -> Int? {
        if value.isEmpty { return nil }
        var result = 0
        for b in value {
            guard b >= 0x30, b <= 0x39 else { return nil }
            let (m, o1) = result.multipliedReportingOverflow(by: 10)
            let (s, o2) = m.addingReportingOverflow(Int(b &- 0x30))
            if o1 || o2 { return nil }
            result = s
        }
        return result
    }

    /// §9.2.6 "dispatch the event".
    private mutating func dispatch(into out: inout [Item]) {
        lastEventId = lastEventIdBuffer  // step 1, even when nothing is dispatched
        if dataBuffer.isEmpty {  // step 2
            eventTypeBuffer.removeAll(keepingCapacity: true)
            return
        }
        dataBuffer.removeLast()  // step 3: the buffer always ends with the LF of its last `data`
        let data = String(decoding: dataBuffer, as: UTF8.self)
        let type = eventTypeBuffer.isEmpty ? "message" : String(decoding: eventTypeBuffer, as: UTF8.self)
        out.append(.event(SSEMessage(type: type, data: data, lastEventId: lastEventId)))
        dataBuffer.removeAll(keepingCapacity: dataBuffer.capacity <= Self.retainedCapacity)  // step 7
        eventTypeBuffer.removeAll(keepingCapacity: true)
    }
}
