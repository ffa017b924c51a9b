import Crypto
import Foundation

// The fixed binary layouts of the cryptographic core are written and read with these two
// helpers: every integer big-endian, every variable-length field prefixed with its length.
// (Names carry a `sync` prefix so they do not collide with other files' helpers in this module.)

/// Appends fields to a byte buffer.
struct SyncWriter {
    /// The bytes written so far.
    private(set) var data = Data()

    /// An empty buffer.
    init() {}

    /// A buffer that starts with `prefix` (a domain-separation label, as ASCII).
    init(prefix: String) { data.append(contentsOf: Array(prefix.utf8)) }

    /// One byte.
    mutating func u8(_ value: UInt8) { data.append(value) }

    /// A big-endian 16-bit integer.
    mutating func u16(_ value: UInt16) { withUnsafeBytes(of: value.bigEndian) { data.append(contentsOf: $0) } }

    /// A big-endian 32-bit integer.
    mutating func u32(_ value: UInt32) { withUnsafeBytes(of: value.bigEndian) { data.append(contentsOf: $0) } }

    /// A big-endian 64-bit integer.
    mutating func u64(_ value: UInt64) { withUnsafeBytes(of: value.bigEndian) { data.append(contentsOf: $0) } }

    /// A big-endian two's-complement 64-bit integer.
    mutating func i64(_ value: Int64) { u64(UInt64(bitPattern: value)) }

    /// A UUID's 16 bytes.
    mutating func uuid(_ value: UUID) { withUnsafeBytes(of: value.uuid) { data.append(contentsOf: $0) } }

    /// Bytes as they are (a fixed-length field).
    mutating func raw<D: DataProtocol>(_ bytes: D) { data.append(contentsOf: bytes) }

    /// Bytes after their length as a 32-bit integer.
    mutating func bytes<D: DataProtocol>(_ bytes: D) {
        u32(UInt32(bytes.count))
        data.append(contentsOf: bytes)
    }

    /// A string's UTF-8 after its length as a 32-bit integer.
    mutating func string(_ value: String) { bytes(Array(value.utf8)) }

    /// A symmetric key's bytes (fixed length).
    mutating func key(_ key: SymmetricKey) { key.withUnsafeBytes { data.append(contentsOf: $0) } }
}

/// Reads fields from a byte buffer; any shortfall throws ``SyncError/Code/malformed``.
struct SyncReader {
    private let bytes: [UInt8]
    private var offset = 0
    private let what: String

    /// A reader over `data`; `what` names the structure in error messages.
    init<D: DataProtocol>(_ data: D, what: String) {
        bytes = Array(data)
        self.what = what
    }

    /// Bytes not read yet.
    var remaining: Int { bytes.count - offset }

    /// How many bytes have been read.
    var position: Int { offset }

    /// The next `count` bytes.
    mutating func raw(_ count: Int) throws -> Data {
        guard count >= 0, count <= remaining else { throw SyncError(.malformed, "\(what) is truncated") }
        defer { offset += count }
        return Data(bytes[offset..<offset + count])
    }

    /// One byte.
    mutating func u8() throws -> UInt8 { try raw(1)[0] }

    /// A big-endian 16-bit integer.
    mutating func u16() throws -> UInt16 { UInt16(try unsigned(2)) }

    /// A big-endian 32-bit integer.
    mutating func u32() throws -> UInt32 { UInt32(try unsigned(4)) }

    /// A big-endian 64-bit integer.
    mutating func u64() throws -> UInt64 { try unsigned(8) }

    /// A big-endian two's-complement 64-bit integer.
    mutating func i64() throws -> Int64 { Int64(bitPattern: try unsigned(8)) }

    /// A UUID's 16 bytes.
    mutating func uuid() throws -> UUID {
        let b = Array(try raw(16))
        return UUID(
            uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15])
        )
    }

    /// Bytes after their length as a 32-bit integer, at most `limit` of them.
    mutating func bytes(limit: Int = 1 << 24) throws -> Data {
        let count = Int(try u32())
        guard count <= limit else { throw SyncError(.malformed, "\(what) has an oversized field") }
        return try raw(count)
    }

    /// A UTF-8 string after its length.
    mutating func string(limit: Int = 4096) throws -> String {
        guard let value = String(bytes: try bytes(limit: limit), encoding: .utf8) else {
            throw SyncError(.malformed, "\(what) has a string that is not UTF-8")
        }
        return value
    }

    /// Checks that every byte was read.
    func finish() throws {
        guard remaining == 0 else { throw SyncError(.malformed, "\(what) has \(remaining) trailing bytes") }
    }

    private mutating func unsigned(_ count: Int) throws -> UInt64 {
        try raw(count).reduce(0) { ($0 << 8) | UInt64($1) }
    }
}

extension SymmetricKey {
    /// The key's bytes (only ever to be sealed or fed to a primitive, never shown).
    var syncKeyBytes: Data { withUnsafeBytes { Data($0) } }
}

extension UUID {
    /// The 16 bytes.
    var syncBytes: Data { withUnsafeBytes(of: uuid) { Data($0) } }
}

extension Data {
    /// Lowercase hex.
    var syncHex: String { map { String(format: "%02x", $0) }.joined() }
}

/// Makes a symmetric key of 32 bytes, or throws `.malformed`.
func symmetricKey256(_ bytes: Data, what: String) throws -> SymmetricKey {
    guard bytes.count == 32 else { throw SyncError(.malformed, "\(what) is not a 256-bit key") }
    return SymmetricKey(data: bytes)
}
