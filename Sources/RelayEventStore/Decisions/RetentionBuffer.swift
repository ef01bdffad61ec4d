/// What a generation keeps in memory to write its `RetainedAnswer` with the final event
/// (docs/DATA_MODEL.md §14): the text so far and each delta's length, up to a cap.
///
/// The cap is `RELAY_ANSWER_RETENTION_MAX_BYTES` over the record's body, its text and
/// encoded lengths (`RetainedAnswer.bodyBytes`); once an answer passes it the buffer lets go of what it
/// held (`isOverCap`) and the answer is not retained. Pure: no I/O, no clock.
public struct RetentionBuffer: Sendable, Equatable {
    /// Most text and length bytes kept (the record's body).
    public let maxBytes: Int
    /// The text so far, UTF-8 (empty once over the cap).
    public private(set) var text: [UInt8] = []
    /// Each delta's byte length, seq 1 first (empty once over the cap).
    public private(set) var deltaLengths: [Int] = []
    /// The answer grew past `maxBytes`: nothing is kept from now on.
    public private(set) var isOverCap = false
    /// LEB128 bytes the lengths take (`RetainedAnswer.lengthBytes(of:)`).
    private var lengthBytes = 0

    /// The record body's size so far, bytes (`RetainedAnswer.bodyBytes`).
    public var bodyBytes: Int { RetainedAnswer.bodyBytes(textBytes: text.count, lengthBytes: lengthBytes) }

    /// - Parameter maxBytes: the cap, bytes (> 0).
    public init(maxBytes: Int) {
        self.maxBytes = maxBytes
    }

    /// Starts from an answer so far that another writer stored (a generation continuing a
    /// stream it did not start): `text` and each of its deltas' lengths, seq 1 first.
    /// Over the cap at once when they pass it.
    public mutating func seed(text: [UInt8], deltaLengths: [Int]) {
        guard !isOverCap else { return }
        let k = deltaLengths.reduce(0) { $0 + RetainedAnswer.lengthBytes(of: $1) }
        guard RetainedAnswer.bodyBytes(textBytes: self.text.count + text.count, lengthBytes: lengthBytes + k) <= maxBytes else {
            isOverCap = true
            self.text = []
            self.deltaLengths = []
            lengthBytes = 0
            return
        }
        self.text += text
        self.deltaLengths += deltaLengths
        lengthBytes += k
    }

    /// Adds the text of delta number `deltaLengths.count + 1`.
    public mutating func add(delta content: String) {
        guard !isOverCap else { return }
        let n = content.utf8.count
        let k = RetainedAnswer.lengthBytes(of: n)
        guard RetainedAnswer.bodyBytes(textBytes: text.count + n, lengthBytes: lengthBytes + k) <= maxBytes else {
            isOverCap = true
            text = []
            deltaLengths = []
            lengthBytes = 0
            return
        }
        text += content.utf8
        deltaLengths.append(n)
        lengthBytes += k
    }
}
