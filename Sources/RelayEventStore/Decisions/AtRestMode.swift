/// How one stream's values are stored at rest (docs/DATA_MODEL.md §15), fixed when the
/// stream is created and recorded in its meta hash (`atrest`: `sealed` or `plain`). Every
/// writer of the stream, a taker included, writes in this mode, so a stream never mixes
/// plaintext and sealed records; every reader reads by it.
///
/// The `plain` mark is the one documented exception to "with keys, plaintext is refused":
/// it says the stream was created by a relay without `RELAY_ENCRYPTION_KEYS` (a rolling
/// switch to encryption), and its values are read as plaintext until it expires
/// (`RELAY_BUFFER_TTL`). In a `sealed` stream a value without the sealed prefix is refused
/// like one under a wrong key (`stored_data_unreadable`).
///
/// Pure.
public enum AtRestMode: String, Sendable, Equatable {
    /// Every value is sealed (`SealedFormat`); plaintext is refused.
    case sealed
    /// Every value is plaintext: the stream was created without keys.
    case plain

    /// The meta field that records the mode.
    public static let metaField = "atrest"

    /// The mode of a stream whose meta says `field` (`nil`: a stream created before the
    /// mode was recorded: sealed when this relay has keys, since it wrote it so).
    public static func of(metaField field: String?, haveKeys: Bool) -> AtRestMode {
        switch field {
        case "sealed": return .sealed
        case "plain": return .plain
        default: return haveKeys ? .sealed : .plain
        }
    }

    /// The mode a relay creates streams in: `sealed` when it has keys.
    public static func forNewStreams(haveKeys: Bool) -> AtRestMode { haveKeys ? .sealed : .plain }

    /// What a reader does with one stored value of a stream in this mode.
    public enum Read: Sendable, Equatable {
        /// Open it with the keys (`AtRestCipher.open`).
        case open
        /// Use it as it is.
        case asIs
        /// Refuse it: plaintext inside a sealed stream (a writer other than the relay, or
        /// damage): `AtRestOpenError.Kind.unexpectedPlaintext`.
        case refuse
    }

    /// The read rule for a value whose first byte `looksSealed` (`SealedFormat.marker`).
    /// In a plain stream, values are plaintext whatever their first byte (an answer may
    /// start with `~`); in a sealed one, only sealed values are read.
    public func read(looksSealed: Bool) -> Read {
        switch self {
        case .plain: return .asIs
        case .sealed: return looksSealed ? .open : .refuse
        }
    }
}
