import RelayEventStore

extension TextCheckpoint.Offset {
    /// The offset whose stored `offsets` value (`word`, docs/DATA_MODEL.md §4) is exactly
    /// `word`: its low 31 bits the end offset, its top bit the part mark (`StoredPiece.word`).
    /// The byte-exact tests write every 32-bit pattern through it.
    init(seq: UInt64, word: UInt32) {
        self.init(seq: seq, end: Int(word & 0x7FFF_FFFF), isPart: word & 0x8000_0000 != 0)
    }
}
