import Foundation
import RelayCore
import RelayLoop

/// Bench-only upstream (`"model": "simulated-bench"`, `SimulatedDocuments.benchModel`):
/// every delta carries the producer's send time and its index, so a load generator can
/// measure append→client latency and count lost or duplicated events without knowing
/// the relay's seq numbering:
///
///     content = "t=<unix µs>;n=<k>;" padded with "x" to `BenchUpstream.tokenBytes`
///
/// `t` (CLOCK_REALTIME) is the token's due time by the generation's schedule (its start
/// plus k / rate), or the time it is emitted if that is earlier (a tick emits at least
/// one token): a stall of the relay's loop that delays the tick counts in the measured
/// latency, as a stall of nchan counts in nchan's. `k` counts deltas from 1. Emits `max_tokens` deltas (default
/// 1,000) at the configured rate, then `done`, paced by `SimulatedUpstream`.
public enum BenchUpstream {
    /// Content size of each delta, bytes (a realistic small token plus the timestamp).
    public static let tokenBytes = 32

    /// A `SimulatedUpstream` emitting `max_tokens` (default 1,000) stamped deltas at
    /// `tokensPerSecond`, then `done` with `finish_reason: "length"`.
    public static func make(maxTokens: Int?, tokensPerSecond: Double, loop: EventLoop) -> Upstream {
        SimulatedUpstream(count: maxTokens ?? 1_000, finishReason: "length", promptTokens: 4,
                          tokensPerSecond: tokensPerSecond, loop: loop) { i, due in
            content(micros: min(SimulatedUpstream.wallMicros(), due), k: i + 1)
        }
    }

    /// The content of delta `k` (≥ 0) sent at `micros` (unix µs): `t=<micros>;n=<k>;`
    /// padded with `x` to `tokenBytes`. Written digit by digit into the string's own
    /// storage: this runs once per bench event, and interpolation cost a few allocations.
    public static func content(micros: UInt64, k: Int) -> String {
        let kk = UInt64(max(0, k))
        let dm = ASCIIDecimal.digits(micros)
        let dk = ASCIIDecimal.digits(kk)
        let length = 2 + dm + 3 + dk + 1
        let total = max(length, tokenBytes)
        return String(unsafeUninitializedCapacity: total) { out in
            let p = out.baseAddress!
            p[0] = UInt8(ascii: "t")
            p[1] = UInt8(ascii: "=")
            ASCIIDecimal.write(micros, digits: dm, to: UnsafeMutableRawPointer(p + 2))
            var at = 2 + dm
            p[at] = UInt8(ascii: ";")
            p[at + 1] = UInt8(ascii: "n")
            p[at + 2] = UInt8(ascii: "=")
            ASCIIDecimal.write(kk, digits: dk, to: UnsafeMutableRawPointer(p + at + 3))
            at += 3 + dk
            p[at] = UInt8(ascii: ";")
            if total > length { (p + length).initialize(repeating: UInt8(ascii: "x"), count: total - length) }
            return total
        }
    }
}

/// The part-heavy bench answer (`"model": "simulated-bench-parts"`,
/// `SimulatedDocuments.benchPartsModel`): as many events as `simulated-bench` at the same
/// rate, but the mix an agent backend streams — mostly `reasoning` and `tool_call_delta`
/// parts, a tool call's `tool_call_start`/`tool_call_end` framing every
/// `cycle.count` events, and some text `delta`s — so the relay's cost per event can be
/// compared between parts and text (docs/BENCHMARKS.md, "Parts: cost per event").
///
/// One cycle of 40 events, repeated (`cycle`): 10 `reasoning`, `tool_call_start`,
/// 24 `tool_call_delta`, `tool_call_end`, 4 `delta` — 38 stamped events and 2 framing
/// events. Every reasoning piece, argument piece and delta carries the stamp
/// `BenchUpstream.content(micros:k:)` (32 bytes, `t=<unix µs>;n=<k>;xx…`) as its text;
/// `k` counts the stamped events from 1, so the load generator's latency and loss
/// accounting reads parts as it reads deltas. The stamped events are exactly the
/// answer's completion tokens (`AnswerPart.countsAsToken`).
///
/// Call `c` (from 1, one per cycle) is `call_<c>` `search_documents`; its arguments are
/// the JSON `{"query":"<its stamps concatenated>"}`, cut so that each piece is one stamp
/// (the first piece also carries `{"query":"`, the last `"}`), and `tool_call_end`'s
/// `input` is that object, parsed. A framing event carries no stamp (no `t=`), and the
/// ids and names contain no `t=` either.
public struct BenchPartsAnswer {
    /// What an event of the cycle is.
    public enum Slot: Sendable, Equatable {
        /// A `reasoning` part carrying a stamp.
        case reasoning
        /// A tool call's `tool_call_start` (no stamp).
        case toolCallStart
        /// A `tool_call_delta` whose arguments piece carries a stamp.
        case toolCallDelta
        /// The call's `tool_call_end` with its parsed `input` (no stamp of its own).
        case toolCallEnd
        /// A text `delta` carrying a stamp.
        case delta

        /// Whether the event carries a stamp (and is a completion token).
        public var isStamped: Bool { self != .toolCallStart && self != .toolCallEnd }
    }

    /// Reasoning pieces, argument pieces and text deltas per cycle.
    public static let reasoningPieces = 10, argumentPieces = 24, textPieces = 4

    /// The events of one cycle, in order (40).
    public static let cycle: [Slot] = Array(repeating: .reasoning, count: reasoningPieces) + [.toolCallStart]
        + Array(repeating: .toolCallDelta, count: argumentPieces) + [.toolCallEnd] + Array(repeating: .delta, count: textPieces)

    /// Stamped events among the first `i` events of a cycle, for `i` in `0...cycle.count`.
    private static let stampedBefore: [Int] = cycle.reduce(into: [0]) { out, s in out.append(out.last! + (s.isStamped ? 1 : 0)) }

    /// The tool every call names.
    public static let toolName = "search_documents"
    /// The arguments' JSON around the stamps: `{"query":"` … `"}`.
    static let argumentsHead = "{\"query\":\"", argumentsTail = "\"}"

    /// Stamped events (= completion tokens) among the answer's first `events` events.
    public static func stamps(inFirst events: Int) -> Int {
        let n = max(0, events)
        return n / cycle.count * stampedBefore[cycle.count] + stampedBefore[n % cycle.count]
    }

    /// The stamps of the call open so far, concatenated (its `input`'s `query`), as UTF-8
    /// bytes: appended with one copy per piece and widened to the UTF-16 units `JSONString`
    /// holds once per call (the stamps are ASCII), so that the bench answer's own cost stays
    /// small beside the relay's.
    private var query: [UInt8] = []
    /// The name of the input's one member.
    private static let queryName = JSONString("query")
    /// The current cycle's call number and id (`call_<c>`), made once per cycle.
    private var callNumber = 0
    private var callID = ""

    public init() {}

    /// Event `i` (from 0) of the answer, its stamp (if any) sent at `micros` (unix µs).
    /// Call in order, from 0, once per event: a call's `tool_call_end` is built from the
    /// stamps of the argument pieces made before it.
    public mutating func event(_ i: Int, micros: UInt64) -> StreamEvent {
        let at = i % Self.cycle.count
        let call = i / Self.cycle.count + 1
        if call != callNumber {
            callNumber = call
            callID = "call_\(call)"
        }
        let id = callID
        let slot = Self.cycle[at]
        let stamp = slot.isStamped ? BenchUpstream.content(micros: micros, k: Self.stamps(inFirst: i) + 1) : ""
        switch slot {
        case .reasoning:
            return .part(.reasoning(stamp))
        case .toolCallStart:
            query.removeAll(keepingCapacity: true)
            return .part(.toolCallStart(id: id, name: Self.toolName))
        case .toolCallDelta:
            query.append(contentsOf: stamp.utf8)
            var piece = stamp
            if at == 0 || Self.cycle[at - 1] != .toolCallDelta { piece = Self.argumentsHead + piece }
            if at + 1 == Self.cycle.count || Self.cycle[at + 1] != .toolCallDelta { piece += Self.argumentsTail }
            return .part(.toolCallDelta(id: id, arguments: piece))
        case .toolCallEnd:
            let input = JSONValue.object([JSONMember(name: Self.queryName, value: .string(JSONString(units: query.map { UInt16($0) })))])
            query.removeAll(keepingCapacity: true)
            return .part(.toolCallEnd(id: id, name: Self.toolName, input: input))
        case .delta:
            return .delta(stamp)
        }
    }

    /// A `SimulatedUpstream` emitting the answer's first `maxTokens` events (default 1,000;
    /// `max_tokens` counts events here, not tokens, so both bench answers have as many) at
    /// `tokensPerSecond` events/s, stamped like `BenchUpstream.make`'s deltas, then `done`
    /// with `finish_reason: "length"` and the stamped events as `completion_tokens`.
    public static func make(maxTokens: Int?, tokensPerSecond: Double, loop: EventLoop) -> Upstream {
        var answer = BenchPartsAnswer()
        return SimulatedUpstream(count: maxTokens ?? 1_000, finishReason: "length", promptTokens: 4,
                                 tokensPerSecond: tokensPerSecond, loop: loop, tokensIn: { stamps(inFirst: $0) }) { i, due in
            answer.event(i, micros: min(SimulatedUpstream.wallMicros(), due))
        }
    }
}
