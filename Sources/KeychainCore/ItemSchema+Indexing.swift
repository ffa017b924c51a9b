import Foundation

/// How an index layout finds a class's items by attribute: through the primary-key index,
/// whose tags begin with 8 bytes of the tags of up to two primary-key attributes, and
/// through tag rows.
struct KeyIndexing: Sendable {
    /// The primary-key attributes whose tags' first bytes begin every primary-key tag, in
    /// order: none, one or two. A filter on the first, or on both, is a range of the index.
    let prefixSpecs: [AttributeSpec]
    /// The indexed attributes that have tag rows.
    let tagRowAttributes: [AttributeName: AttributeSpec]

    /// The second prefix attribute when it has no tag rows: a filter on it without the first
    /// scans the primary-key index for its 8 bytes.
    var scannedSecondSpec: AttributeSpec? {
        guard prefixSpecs.count == 2, tagRowAttributes[prefixSpecs[1].name] == nil else { return nil }
        return prefixSpecs[1]
    }

    /// How the ``IndexLayout/primaryKeyPrefix`` layout (`first`) and the
    /// ``IndexLayout/lookupKeys`` layout (`lookup`) index a class.
    private struct Layouts: Sendable {
        let first: KeyIndexing
        let lookup: KeyIndexing

        init(_ schema: ItemSchema) {
            let indexed = schema.indexedAttributes
            let primaryKey = schema.primaryKey
            let leading = Array(
                primaryKey.prefix(2).prefix { indexed[$0] != nil }.compactMap { schema.attributes[$0] })
            first = KeyIndexing(prefixSpecs: leading, tagRowAttributes: indexed.filter { $0.key != primaryKey[0] })
            lookup =
                schema.lookupKeys.map { names in
                    KeyIndexing(
                        prefixSpecs: names.compactMap { schema.attributes[$0] },
                        tagRowAttributes: indexed.filter { !names.contains($0.key) })
                } ?? first
        }
    }

    private static let genericPassword = Layouts(.of(.genericPassword))
    private static let internetPassword = Layouts(.of(.internetPassword))
    private static let certificate = Layouts(.of(.certificate))
    private static let key = Layouts(.of(.key))
    private static let identity = Layouts(.of(.identity))

    /// How the layouts that lead with primary-key attributes index `itemClass`.
    private static func layouts(_ itemClass: ItemClass) -> Layouts {
        switch itemClass {
        case .genericPassword: genericPassword
        case .internetPassword: internetPassword
        case .certificate: certificate
        case .key: key
        default: identity
        }
    }

    /// How `layout` indexes the attributes of `schema`'s class.
    static func of(_ schema: ItemSchema, _ layout: IndexLayout) -> KeyIndexing {
        switch layout {
        case .tagged: KeyIndexing(prefixSpecs: [], tagRowAttributes: schema.indexedAttributes)
        case .primaryKeyPrefix: layouts(schema.itemClass).first
        case .lookupKeys: layouts(schema.itemClass).lookup
        }
    }
}

extension ItemSchema {
    /// How `layout` indexes the class's attributes.
    func indexing(_ layout: IndexLayout) -> KeyIndexing { KeyIndexing.of(self, layout) }

    /// The attributes that have tag rows in a layout.
    func tagRowAttributes(_ layout: IndexLayout) -> [AttributeName: AttributeSpec] {
        indexing(layout).tagRowAttributes
    }
}
