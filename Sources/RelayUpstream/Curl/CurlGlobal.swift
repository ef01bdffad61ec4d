import CCurl

/// libcurl's process-wide initialisation (`curl_global_init(CURL_GLOBAL_DEFAULT)`), done once.
///
/// `curl_global_init` is not thread-safe in libcurl 7.x, so it runs inside a Swift global
/// initialiser (which the runtime runs exactly once, thread-safely). Every `CurlMulti` and
/// `UpstreamTransfer` calls `ensure()` before touching libcurl; the process never calls
/// `curl_global_cleanup` (handles may live until exit).
enum CurlGlobal {
    private static let result: CURLcode = curl_global_init(Int(CURL_GLOBAL_DEFAULT))

    /// Initialises libcurl if not done yet.
    /// - Throws: `CurlError.globalInit` when `curl_global_init` failed.
    static func ensure() throws(CurlError) {
        guard result == CURLE_OK else { throw .globalInit(String(cString: curl_easy_strerror(result))) }
    }
}

/// Errors creating libcurl resources.
public enum CurlError: Error, Equatable, CustomStringConvertible {
    /// `curl_global_init` failed (message from `curl_easy_strerror`).
    case globalInit(String)
    /// `curl_multi_init` or `curl_easy_init` returned NULL (out of memory).
    case cannotCreate(String)
    /// A `curl_easy_setopt` was refused, e.g. a protocol this libcurl was built without.
    case setopt(option: String, message: String)

    public var description: String {
        switch self {
        case .globalInit(let m): return "curl_global_init failed: \(m)"
        case .cannotCreate(let what): return "cannot create \(what)"
        case .setopt(let o, let m): return "curl_easy_setopt(\(o)) failed: \(m)"
        }
    }
}
