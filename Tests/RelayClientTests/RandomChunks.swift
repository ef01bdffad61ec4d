import RelayTestKit

/// Splits `text` into random chunks at Unicode scalar boundaries (so a chunk may end
/// inside a grapheme cluster, as a network delta can).
func randomChunks(_ text: String, using rng: inout SplitMix64, maxLength: Int = 7) -> [String] {
    let scalars = Array(text.unicodeScalars)
    var out: [String] = []
    var i = 0
    while i < scalars.count {
        let n = Int.random(in: 1...maxLength, using: &rng)
        let j = min(scalars.count, i + n)
        out.append(String(String.UnicodeScalarView(scalars[i..<j])))
        i = j
    }
    return out
}
