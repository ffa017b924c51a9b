import Crypto
import Foundation

/// AES-256-GCM sealing with padding and associated data, the only way bytes are encrypted.
///
/// Plaintexts are padded (ISO/IEC 7816-4: a 0x80 byte, then zeros) to a multiple of 32
/// bytes, so secrets of 1 and 31 bytes give ciphertexts of equal length. Nonces are 96 random
/// bits from the system's secure generator for every seal; a keychain stays many orders of
/// magnitude below the 2^32 seals per key that NIST SP 800-38D allows for random nonces.
enum Sealing {
    static let padBlock = 32

    static func seal(_ plaintext: some ContiguousBytes, key: SymmetricKey, context: some DataProtocol) throws -> Data {
        let bytes: [UInt8] = plaintext.withUnsafeBytes { bytes in
            var copy = [UInt8]()
            copy.reserveCapacity(paddedCount(bytes.count))
            copy.append(contentsOf: bytes)
            return copy
        }
        return try seal(bytes, key: key, context: context)
    }

    /// Seals bytes, padding them in place (no copy when the caller passes its last reference).
    static func seal(_ plaintext: consuming [UInt8], key: SymmetricKey, context: some DataProtocol) throws -> Data {
        var padded = plaintext
        padded.reserveCapacity(paddedCount(padded.count))
        padded.append(0x80)
        let remainder = padded.count % padBlock
        if remainder != 0 { padded.append(contentsOf: repeatElement(0, count: padBlock - remainder)) }
        do {
            // A random 96-bit nonce, as swift-crypto would draw, in one system call.
            var nonce = [UInt8](repeating: 0, count: 12)
            nonce.withUnsafeMutableBytes(fillRandom)
            let box = try AES.GCM.seal(padded, using: key, nonce: AES.GCM.Nonce(data: nonce), authenticating: context)
            guard let combined = box.combined else {
                throw KeychainError(.internalComponent, "sealing produced no output")
            }
            return combined
        } catch let error as KeychainError {
            throw error
        } catch {
            throw KeychainError(.internalComponent, "sealing failed")
        }
    }

    /// The length of `count` bytes once padded.
    static func paddedCount(_ count: Int) -> Int { (count / padBlock + 1) * padBlock }

    /// Opens a sealed blob; any tampering, wrong key or wrong context is `.decode`.
    static func open(_ sealed: Data, key: SymmetricKey, context: some DataProtocol) throws -> Data {
        var padded: Data
        do {
            let box = try AES.GCM.SealedBox(combined: sealed)
            padded = try AES.GCM.open(box, using: key, authenticating: context)
        } catch {
            throw KeychainError.decode("stored data failed authentication")
        }
        // The padding marker: the last non-zero byte, which must be 0x80.
        let length = padded.withUnsafeBytes { bytes -> Int? in
            guard let marker = bytes.lastIndex(where: { $0 != 0 }), bytes[marker] == 0x80 else { return nil }
            return marker
        }
        guard let length else { throw KeychainError.decode("stored data is malformed") }
        padded.removeSubrange((padded.startIndex + length)...)
        return padded
    }

    /// `count` bytes from the system's cryptographically secure generator.
    static func randomBytes(_ count: Int) -> Data {
        var bytes = Data(count: count)
        bytes.withUnsafeMutableBytes(fillRandom)
        return bytes
    }

    /// Fills `buffer` from the system's cryptographically secure generator: one `getrandom`
    /// call for the whole buffer (glibc's `arc4random_buf`), where `SystemRandomNumberGenerator`
    /// makes one per eight bytes.
    static func fillRandom(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress, !buffer.isEmpty else { return }
        #if canImport(Glibc)
            arc4random_buf(base, buffer.count)
        #else
            var generator = SystemRandomNumberGenerator()
            for index in buffer.indices { buffer[index] = generator.next() }
        #endif
    }
}

/// How a keychain file indexes its items' attributes.
///
/// The layout is fixed when the file is created and bound into the associated data of its
/// wrapped keys, so that a layout changed in the file makes the keys fail authentication
/// instead of making lookups miss.
enum IndexLayout: Sendable, Equatable, CaseIterable {
    /// Every indexed attribute has tag rows; the primary-key tag is one keyed hash (files
    /// created before the layout was recorded).
    case tagged
    /// The primary-key tag starts with the first 8 bytes of the tags of the class's first two
    /// primary-key attributes, so that the primary-key index also finds items by the first
    /// attribute, or the first two, as a range. The first primary-key attribute (the account
    /// of a password) has no tag rows: one B-tree page fewer on every add (files of format 3).
    case primaryKeyPrefix
    /// As ``primaryKeyPrefix``, but a password's primary-key tag starts with its service's (or
    /// server's) tag, then its account's, and neither has tag rows: a lookup by the service,
    /// or the service and the account, is a range of the primary-key index, and one by the
    /// account alone a scan of that index (no row is read or decrypted). Two B-tree pages
    /// fewer than ``tagged`` on every add. Other classes are indexed as in ``primaryKeyPrefix``.
    case lookupKeys

    /// The name of the header entry that records a layout other than ``tagged``.
    static let metaName = "index"

    /// The layout a header records.
    init(meta value: Data?) throws {
        switch value {
        case nil: self = .tagged
        case Data([2])?: self = .primaryKeyPrefix
        case Data([3])?: self = .lookupKeys
        default: throw KeychainError.invalidKeychain("the keychain's index layout is unknown")
        }
    }

    /// The header entry's value, or `nil` for ``tagged``.
    var metaValue: Data? {
        switch self {
        case .tagged: nil
        case .primaryKeyPrefix: Data([2])
        case .lookupKeys: Data([3])
        }
    }
}

/// The keyed hash of one attribute's value (``IndexTagger/tag(_:_:_:)``).
struct AttributeTag {
    let name: AttributeName
    let tag: Data
}

/// Keyed hashes of attribute values, the only form in which values are indexed.
///
/// Each tag is HMAC-SHA256 under the keychain's index key, truncated to 128 bits, over the
/// item class, the attribute name and the value's canonical bytes. The same value in two
/// keychains gives different tags.
struct IndexTagger: Sendable {
    /// How the keychain indexes attributes.
    let layout: IndexLayout

    /// The HMAC state after the key block, computed once per unlock: a tag then costs the
    /// message's compression rounds only, not a key schedule.
    private let keyed: HMAC<SHA256>

    /// The tags of the synchronizable column's two values, which every query and read uses.
    private var synchronizableTags: [Data] = []

    /// The tags of the access groups the handle was configured with, which every add and
    /// most queries use.
    private var groupTags: [String: Data] = [:]

    /// A tagger keyed with `key` for a keychain of `layout`, that computes the tags of
    /// `groups` up front.
    init(key: SymmetricKey, layout: IndexLayout, groups: [String] = []) {
        self.layout = layout
        keyed = HMAC<SHA256>(key: key)
        synchronizableTags = [
            computeColumnTag(.synchronizable, .number(0)), computeColumnTag(.synchronizable, .number(1)),
        ]
        for group in groups.prefix(64) { groupTags[group] = computeColumnTag(.accessGroup, .string(group)) }
    }

    static let tagLength = 16

    func tag(_ itemClass: ItemClass, _ spec: AttributeSpec, _ value: AttributeValue) -> Data {
        var message: [UInt8] = [0x61]  // "a"
        message.reserveCapacity(96)
        message.appendLengthPrefixed(itemClass.rawValue.utf8)
        message.appendLengthPrefixed(spec.name.rawValue.utf8)
        spec.appendCanonicalBytes(of: value, to: &message, lengthPrefixed: false)
        return mac(message)
    }

    /// The tags the index holds for an attribute's value: one, or one per search term
    /// (``KeychainModel/AttributeSpec/indexedValues(_:)``).
    func tags(_ itemClass: ItemClass, _ spec: AttributeSpec, _ value: AttributeValue) -> [Data] {
        var tags: [Data] = []
        forEachTag(itemClass, spec, value) { tags.append($0) }
        return tags
    }

    /// ``tags(_:_:_:)`` one by one, with no array for the usual single tag (adds and lookups
    /// compute one per indexed attribute).
    func forEachTag(_ itemClass: ItemClass, _ spec: AttributeSpec, _ value: AttributeValue, _ body: (Data) -> Void) {
        guard spec.kind == .terms else { return body(tag(itemClass, spec, value)) }
        for term in spec.indexedValues(value) { body(tag(itemClass, spec, term)) }
    }

    /// The tag of a column value matched whatever the item class (access group,
    /// synchronizable flag): typed canonical bytes, no class.
    func columnTag(_ name: AttributeName, _ value: AttributeValue) -> Data {
        if name == .synchronizable, case .number(let flag) = value, flag == 0 || flag == 1 {
            return synchronizableTags[Int(flag)]
        }
        if name == .accessGroup, case .string(let group) = value, let tag = groupTags[group] { return tag }
        return computeColumnTag(name, value)
    }

    private func computeColumnTag(_ name: AttributeName, _ value: AttributeValue) -> Data {
        let spec = AttributeSpec(name: name, kind: .string, comparesBytes: false, defaultValue: nil)
        var message: [UInt8] = [0x63]  // "c"
        message.reserveCapacity(64)
        message.appendLengthPrefixed(name.rawValue.utf8)
        spec.appendCanonicalBytes(of: value, to: &message, lengthPrefixed: false)
        return mac(message)
    }

    /// Bytes of a tag that a primary-key prefix keeps.
    static let prefixLength = 8

    /// The tag of an item's primary key: class and every primary-key attribute's value. In
    /// the other layouts it starts with the prefixes of the tags of the layout's prefix
    /// attributes (``KeyIndexing/prefixSpecs``, ``primaryKeyPrefix(_:_:)``); `tags` may hold tags
    /// already computed.
    func primaryKeyTag(_ schema: ItemSchema, _ attributes: Attributes, tags: [AttributeTag] = []) -> Data {
        let hash = primaryKeyHash(schema, attributes)
        guard layout != .tagged else { return hash }
        let prefixSpecs = schema.indexing(layout).prefixSpecs
        func leadingTag(_ index: Int) -> Data? {
            guard index < prefixSpecs.count else { return nil }
            let spec = prefixSpecs[index]
            if let known = tags.first(where: { $0.name == spec.name }) { return known.tag }
            return (attributes[spec.name] ?? spec.defaultValue).map { tag(schema.itemClass, spec, $0) }
        }
        var keyTag = primaryKeyPrefix(leadingTag(0), leadingTag(1))
        keyTag.append(hash)
        return keyTag
    }

    /// The first bytes of every primary-key tag whose first (and second) prefix attributes
    /// (``KeyIndexing/prefixSpecs``) have these tags; a missing value gives zeros.
    func primaryKeyPrefix(_ first: Data?, _ second: Data?) -> Data {
        var prefix = [UInt8](repeating: 0, count: 2 * Self.prefixLength)
        if let first { Self.copyPrefix(of: first, to: &prefix, slot: 0) }
        if let second { Self.copyPrefix(of: second, to: &prefix, slot: 1) }
        return Data(prefix)
    }

    /// The smallest and the largest primary-key tag that start with the prefixes of `tags`
    /// (the first prefix attribute's tag, and maybe the second's).
    func primaryKeyRange(_ tags: [Data]) -> [Data] {
        let length = 2 * Self.prefixLength + Self.tagLength
        var low = [UInt8](repeating: 0, count: length)
        for (slot, tag) in tags.prefix(2).enumerated() { Self.copyPrefix(of: tag, to: &low, slot: slot) }
        var high = low
        for index in (min(tags.count, 2) * Self.prefixLength)..<length { high[index] = 0xFF }
        return [Data(low), Data(high)]
    }

    /// The bytes of a primary-key tag's second slot (bytes 9–16) when the second prefix
    /// attribute has the tag `tag`, whatever the first.
    func primaryKeySecondSlot(_ tag: Data) -> Data { Data(tag.prefix(Self.prefixLength)) }

    /// Copies the first ``prefixLength`` bytes of a tag into slot `slot` of `bytes`.
    private static func copyPrefix(of tag: Data, to bytes: inout [UInt8], slot: Int) {
        let start = slot * prefixLength
        tag.withUnsafeBytes { source in
            bytes.replaceSubrange(start..<start + min(prefixLength, source.count), with: source.prefix(prefixLength))
        }
    }

    /// The keyed hash of a class and its primary-key values.
    private func primaryKeyHash(_ schema: ItemSchema, _ attributes: Attributes) -> Data {
        var message: [UInt8] = [0x70, 0x6B]  // "pk"
        message.reserveCapacity(128)
        message.appendLengthPrefixed(schema.itemClass.rawValue.utf8)
        for spec in schema.primaryKeySpecs where !spec.isLeftOutOfPrimaryKey(attributes[spec.name]) {
            message.appendLengthPrefixed(spec.name.rawValue.utf8)
            if let value = attributes[spec.name] ?? spec.defaultValue {
                message.append(1)
                spec.appendCanonicalBytes(of: value, to: &message, lengthPrefixed: true)
            } else {
                message.append(0)
            }
        }
        return mac(message)
    }

    private func mac(_ message: [UInt8]) -> Data {
        var hmac = keyed
        // One contiguous region: the generic `DataProtocol` path costs more for an array.
        message.withUnsafeBytes { hmac.update(data: $0) }
        // Copying from the base address skips a generic slice (its metadata is looked up at
        // run time on every call).
        return hmac.finalize().withUnsafeBytes { digest in
            Data(bytes: digest.baseAddress!, count: min(Self.tagLength, digest.count))
        }
    }
}

/// The binary encoding of an attribute set inside a sealed blob.
package enum AttributeCoding {
    package static func encode(_ attributes: Attributes) -> [UInt8] {
        var out: [UInt8] = [1]
        // Room for the padding that sealing adds in place.
        out.reserveCapacity(512 + Sealing.padBlock)
        Swift.withUnsafeBytes(of: UInt32(attributes.count).bigEndian) { out.append(contentsOf: $0) }
        for (name, value) in attributes.sorted(by: { $0.key < $1.key }) {
            out.appendLengthPrefixed(name.rawValue.utf8)
            switch value {
            case .string(let s):
                out.append(0x73)
                out.appendLengthPrefixed(s.utf8)
            case .data(let d):
                out.append(0x64)
                out.appendLengthPrefixed(d)
            case .number(let n):
                out.append(0x6E)
                Swift.withUnsafeBytes(of: n.bigEndian) { out.appendLengthPrefixed($0) }
            case .date(let date):
                out.append(0x74)
                let bits = date.timeIntervalSinceReferenceDate.bitPattern.bigEndian
                Swift.withUnsafeBytes(of: bits) { out.appendLengthPrefixed($0) }
            }
        }
        return out
    }

    package static func decode(_ bytes: Data) throws -> Attributes {
        try bytes.withUnsafeBytes { raw in
            var reader = BufferReader(raw)
            guard reader.readUInt8() == 1, let count = reader.readUInt32() else {
                throw KeychainError.decode("unknown attribute encoding")
            }
            var attributes: Attributes = [:]
            attributes.reserveCapacity(Int(min(count, 64)))
            for _ in 0..<count {
                guard let nameBytes = reader.readLengthPrefixed(),
                    let name = UTF8Bytes.string(validating: nameBytes),
                    let type = reader.readUInt8(), let payload = reader.readLengthPrefixed()
                else { throw KeychainError.decode("truncated attributes") }
                attributes[AttributeName(rawValue: name)] = try value(type, payload)
            }
            guard reader.isAtEnd else { throw KeychainError.decode("trailing bytes in attributes") }
            return attributes
        }
    }

    private static func value(_ type: UInt8, _ payload: UnsafeRawBufferPointer) throws -> AttributeValue {
        var reader = BufferReader(payload)
        switch type {
        case 0x73:
            guard let s = UTF8Bytes.string(validating: payload) else { break }
            return .string(s)
        case 0x64:
            return .data(Data(payload))
        case 0x6E:
            guard let raw = reader.readUInt64(), reader.isAtEnd else { break }
            return .number(Int64(bitPattern: raw))
        case 0x74:
            guard let raw = reader.readUInt64(), reader.isAtEnd else { break }
            return .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: raw)))
        default:
            break
        }
        throw KeychainError.decode("malformed attribute value")
    }
}

/// Reads big-endian integers and length-prefixed fields from borrowed bytes, without
/// copying them.
struct BufferReader {
    private let bytes: UnsafeRawBufferPointer
    private var offset = 0

    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    var isAtEnd: Bool { offset == bytes.count }

    mutating func readUInt8() -> UInt8? {
        guard offset < bytes.count else { return nil }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func readUInt32() -> UInt32? {
        read(4).map { $0.reduce(0) { $0 << 8 | UInt32($1) } }
    }

    mutating func readUInt64() -> UInt64? {
        read(8).map { $0.reduce(0) { $0 << 8 | UInt64($1) } }
    }

    /// The next `count` bytes, valid as long as the buffer read.
    mutating func read(_ count: Int) -> UnsafeRawBufferPointer? {
        guard count >= 0, count <= bytes.count - offset else { return nil }
        defer { offset += count }
        return UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + count])
    }

    mutating func readLengthPrefixed() -> UnsafeRawBufferPointer? {
        readUInt32().flatMap { read(Int($0)) }
    }
}

extension Array where Element == UInt8 {
    /// Appends a 32-bit big-endian length, then the bytes.
    mutating func appendLengthPrefixed<C: Collection>(_ bytes: C) where C.Element == UInt8 {
        Swift.withUnsafeBytes(of: UInt32(bytes.count).bigEndian) { append(contentsOf: $0) }
        append(contentsOf: bytes)
    }

    /// Appends a 32-bit big-endian length, then the bytes (copied as one block).
    mutating func appendLengthPrefixed(_ bytes: Data) {
        Swift.withUnsafeBytes(of: UInt32(bytes.count).bigEndian) { append(contentsOf: $0) }
        bytes.withUnsafeBytes { append(contentsOf: $0) }
    }
}
