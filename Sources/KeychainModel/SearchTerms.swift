import Foundation

/// The words an item is found by, each indexed on its own: the value of
/// ``AttributeName/searchTerms``.
///
/// A filter on `trms` matches the items whose terms include every term of the filter, found
/// through one keyed hash per term (as other attributes are found through one per value), so
/// a search needs no decryption to narrow the items, and a locked keychain can answer it. The
/// Secret Service keeps each of a D-Bus item's attributes as one term.
///
/// ```swift
/// let terms = SearchTerms(["xdg:schema\u{0}org.example.Token", "app\u{0}mail"])
/// item.attributes[.searchTerms] = .data(terms.encoded)
/// let query = ItemQuery(class: .genericPassword, attributes: [.searchTerms: .data(SearchTerms(["app\u{0}mail"]).encoded)])
/// ```
public struct SearchTerms: Hashable, Sendable {
    /// The terms.
    public var terms: Set<String>

    /// Terms from a sequence (duplicates count once).
    public init(_ terms: some Sequence<String>) {
        self.terms = Set(terms)
    }

    /// The terms in byte order: the order of the encoded form.
    public var sorted: [String] {
        terms.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }

    /// The stored form: each term in byte order, as its UTF-8 length (32-bit big-endian) and
    /// bytes. Equal sets of terms have equal encodings.
    public var encoded: Data {
        var data = Data()
        for term in sorted {
            let count = UInt32(term.utf8.count)
            Swift.withUnsafeBytes(of: count.bigEndian) { data.append(contentsOf: $0) }
            data.append(contentsOf: term.utf8)
        }
        return data
    }

    /// Reads the stored form; `nil` when it is malformed (a length beyond the end, a term that
    /// is not UTF-8).
    public init?(encoded: Data) {
        var terms = Set<String>()
        var index = encoded.startIndex
        while index < encoded.endIndex {
            guard encoded.endIndex - index >= 4 else { return nil }
            let count = encoded[index..<index + 4].reduce(0) { $0 << 8 | Int($1) }
            index += 4
            guard encoded.endIndex - index >= count,
                let term = String(validating: encoded[index..<index + count], as: UTF8.self)
            else { return nil }
            terms.insert(term)
            index += count
        }
        self.terms = terms
    }
}
