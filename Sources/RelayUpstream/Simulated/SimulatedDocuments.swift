import Foundation

/// The original sample documents the simulated upstream streams back, token by
/// token, instead of calling a real model.
///
/// The texts themselves live in `SimulatedDocumentEnglish.swift` and
/// `SimulatedDocumentArabic.swift`. Both are original drafts written for this
/// project; they are fixtures, not legal advice.
public enum SimulatedDocuments {
    /// The model name that selects the English document (also the default).
    public static let englishModel = "simulated"
    /// The model name that selects the Arabic document.
    public static let arabicModel = "simulated-ar"
    /// A model name reserved for benchmarks; it maps to no document here.
    public static let benchModel = "simulated-bench"
    /// A model name reserved for benchmarks: the part-heavy bench answer
    /// (`BenchPartsAnswer`); it maps to no document here either.
    public static let benchPartsModel = "simulated-bench-parts"

    /// The document the simulated upstream streams for a request's `model`.
    ///
    /// - Parameter model: the request's `model` field; `nil` when absent.
    /// - Returns: `englishNDA` for `nil` or `"simulated"`, `arabicLegal` for
    ///   `"simulated-ar"`, and `nil` for anything else, including the reserved
    ///   `"simulated-bench"` and `"simulated-bench-parts"` (whose events a benchmark
    ///   generator supplies).
    ///   Matching is exact (case-sensitive).
    public static func document(forModel model: String?) -> String? {
        switch model {
        case nil, englishModel?: return englishNDA
        case arabicModel?: return arabicLegal
        default: return nil
        }
    }
}
