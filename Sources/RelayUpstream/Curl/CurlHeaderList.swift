import CCurl

/// A libcurl header list (`struct curl_slist *`), freed in `deinit`.
///
/// libcurl keeps only the pointer given to `CURLOPT_HTTPHEADER`, so the list must outlive
/// the transfer that uses it: `UpstreamTransfer` owns its list.
final class CurlHeaderList {
    private(set) var pointer: UnsafeMutablePointer<curl_slist>?

    /// Builds the list from `"Name: value"` lines (`"Name:"` removes a header libcurl would
    /// add, such as `Expect:`).
    /// - Throws: `CurlError.cannotCreate` when libcurl cannot allocate a node.
    init(_ lines: [String]) throws(CurlError) {
        for line in lines {
            guard let next = curl_slist_append(pointer, line) else {
                throw .cannotCreate("curl header list")
            }
            pointer = next
        }
    }

    deinit {
        curl_slist_free_all(pointer)
    }
}
