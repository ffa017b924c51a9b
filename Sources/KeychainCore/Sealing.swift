import Crypto
import Foundation

/// AES-256-GCM sealing with padding and associated data, the only way bytes are encrypted.
///
/// Plaintexts are padded (ISO/IEC 7816-4: a 0x80 byte, then zeros) to a multiple of 32
/// bytes, so secrets of 1 and 31 bytes give ciphertexts of equal length. Nonces are 96 random
/// bits from the system generator for every seal; a keychain stays many orders of magnitude
/// below the 2^32 seals per key that NIST SP 800-38D allows for random nonces.
enum Sealing {
    static let padBlock = 32

    static func seal(_ plaintext: Data, key: SymmetricKey, context: some DataProtocol) throws -> Data {
        var padded = plaintext
        padded.append(0x80)
        let remainder = padded.count % padBlock
        if remainder != 0 { padded.append(Data(count: padBlock - remainder)) }
        do {
            let box = try AES.GCM.seal(padded, using: key, authenticating: context)
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

    /// Opens a sealed blob; any tampering, wrong key or wrong context is `.decode`.
    static func open(_ sealed: Data, key: SymmetricKey, context: some DataProtocol) throws -> Data {
        let padded: Data
        do {
            let box = try AES.GCM.SealedBox(combined: sealed)
            padded = try AES.GCM.open(box, using: key, authenticating: context)
        } catch {
            throw KeychainError.decode("stored data failed authentication")
        }
        guard let marker = padded.lastIndex(where: { $0 != 0 }), padded[marker] == 0x80 else {
            throw KeychainError.decode("stored data is malformed")
        }
        return Data(padded[padded.startIndex..<marker])
    }

    static func randomBytes(_ count: Int) -> Data {
        var generator = SystemRandomNumberGenerator()
        return Data((0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }
}

/// Keyed hashes of attribute values, the only form in which values are indexed.
///
/// Each tag is HMAC-SHA256 under the keychain's index key, truncated to 128 bits, over the
/// item class, the attribute name and the value's canonical bytes. The same value in two
/// keychains gives different tags.
struct IndexTagger: Sendable {
    /// The HMAC state after the key block, computed once per unlock: a tag then costs the
    /// message's compression rounds only, not a key schedule.
    private let keyed: HMAC<SHA256>

    /// The tags of the synchronizable column's two values, which every query and read uses.
    private var synchronizableTags: [Data] = []

    init(key: SymmetricKey) {
        keyed = HMAC<SHA256>(key: key)
        synchronizableTags = [
            computeColumnTag(.synchronizable, .number(0)), computeColumnTag(.synchronizable, .number(1)),
        ]
    }

    static let tagLength = 16

    func tag(_ itemClass: ItemClass, _ spec: AttributeSpec, _ value: AttributeValue) -> Data {
        var message: [UInt8] = [0x61]  // "a"
        message.reserveCapacity(96)
        message.appendLengthPrefixed(itemClass.rawValue.utf8)
        message.appendLengthPrefixed(spec.name.rawValue.utf8)
        message.append(contentsOf: spec.canonicalBytes(value))
        return mac(message)
    }

    /// The tag of a column value matched whatever the item class (access group,
    /// synchronizable flag): typed canonical bytes, no class.
    func columnTag(_ name: AttributeName, _ value: AttributeValue) -> Data {
        if name == .synchronizable, case .number(let flag) = value, flag == 0 || flag == 1 {
            return synchronizableTags[Int(flag)]
        }
        return computeColumnTag(name, value)
    }

    private func computeColumnTag(_ name: AttributeName, _ value: AttributeValue) -> Data {
        let spec = AttributeSpec(name: name, kind: .string, comparesBytes: false, defaultValue: nil)
        var message: [UInt8] = [0x63]  // "c"
        message.reserveCapacity(64)
        message.appendLengthPrefixed(name.rawValue.utf8)
        message.append(contentsOf: spec.canonicalBytes(value))
        return mac(message)
    }

    /// The tag of an item's primary key: class and every primary-key attribute's value.
    func primaryKeyTag(_ schema: ItemSchema, _ attributes: Attributes) -> Data {
        var message: [UInt8] = [0x70, 0x6B]  // "pk"
        message.reserveCapacity(128)
        message.appendLengthPrefixed(schema.itemClass.rawValue.utf8)
        for name in schema.primaryKey {
            guard let spec = schema.spec(for: name) else { continue }
            message.appendLengthPrefixed(name.rawValue.utf8)
            if let value = attributes[name] ?? spec.defaultValue {
                message.append(1)
                message.appendLengthPrefixed(spec.canonicalBytes(value))
            } else {
                message.append(0)
            }
        }
        return mac(message)
    }

    private func mac(_ message: [UInt8]) -> Data {
        var hmac = keyed
        hmac.update(data: message)
        return Data(hmac.finalize().prefix(Self.tagLength))
    }
}

/// The binary encoding of an attribute set inside a sealed blob.
enum AttributeCoding {
    static func encode(_ attributes: Attributes) -> Data {
        var out = Data([1])
        out.appendUInt32(UInt32(attributes.count))
        for (name, value) in attributes.sorted(by: { $0.key < $1.key }) {
            out.appendLengthPrefixed(Data(name.rawValue.utf8))
            switch value {
            case .string(let s):
                out.append(0x73)
                out.appendLengthPrefixed(Data(s.utf8))
            case .data(let d):
                out.append(0x64)
                out.appendLengthPrefixed(d)
            case .number(let n):
                out.append(0x6E)
                out.appendLengthPrefixed(withUnsafeBytes(of: n.bigEndian) { Data($0) })
            case .date(let date):
                out.append(0x74)
                let bits = date.timeIntervalSinceReferenceDate.bitPattern.bigEndian
                out.appendLengthPrefixed(withUnsafeBytes(of: bits) { Data($0) })
            }
        }
        return out
    }

    static func decode(_ bytes: Data) throws -> Attributes {
        var reader = ByteReader(bytes)
        guard reader.readUInt8() == 1, let count = reader.readUInt32() else {
            throw KeychainError.decode("unknown attribute encoding")
        }
        var attributes: Attributes = [:]
        for _ in 0..<count {
            guard let nameBytes = reader.readLengthPrefixed(),
                let name = String(data: nameBytes, encoding: .utf8),
                let type = reader.readUInt8(), let payload = reader.readLengthPrefixed()
            else { throw KeychainError.decode("truncated attributes") }
            attributes[AttributeName(rawValue: name)] = try value(type, payload)
        }
        guard reader.isAtEnd else { throw KeychainError.decode("trailing bytes in attributes") }
        return attributes
    }

    private static func value(_ type: UInt8, _ payload: Data) throws -> AttributeValue {
        var reader = ByteReader(payload)
        switch type {
        case 0x73:
            guard let s = String(data: payload, encoding: .utf8) else { break }
            return .string(s)
        case 0x64:
            return .data(payload)
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

extension Array where Element == UInt8 {
    /// Appends a 32-bit big-endian length, then the bytes.
    mutating func appendLengthPrefixed<C: Collection>(_ bytes: C) where C.Element == UInt8 {
        Swift.withUnsafeBytes(of: UInt32(bytes.count).bigEndian) { append(contentsOf: $0) }
        append(contentsOf: bytes)
    }
}
