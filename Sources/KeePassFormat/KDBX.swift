import CArgon2
import Foundation
import KeyringImport

/// The constants of KeePass's KDBX 4 format (keepassxreboot/keepassxc-specs), as the bytes the
/// file holds.
enum KDBX {
    /// KeePass 2's two signature words, little-endian.
    static let signature: [UInt8] = [0x03, 0xd9, 0xa2, 0x9a, 0x67, 0xfb, 0x4b, 0xb5]
    static let aes256 = uuid("31c1f2e6bf714350be5805216afc5aff")
    static let chaCha20 = uuid("d6038a2b8b6f4cb5a524339a31dbb59a")
    static let argon2d = uuid("ef636ddf8c29444b91f7a9a403e30a0c")
    static let argon2id = uuid("9e298b1956db4773b23dfc3ec6f0a1e6")
    static let aesKDF = uuid("c9d9f39a628a4460bf740d08c18a4fea")

    private static func uuid(_ hex: String) -> Data { UUID(hex: hex)!.bytes }
}

/// Argon2 as a KDBX 4 header names it (libargon2 derives).
struct Argon2: Sendable {
    /// The most memory a file may ask for (KeePassXC offers up to 4 GiB; a database asks 64 MiB
    /// to 1 GiB in practice).
    static let maximumMemory: UInt64 = 4 << 30

    var type: argon2_type
    var salt: Data
    var parallelism: UInt32
    /// In bytes, as the header gives it.
    var memory: UInt64
    var iterations: UInt64
    var version: UInt32

    /// What a written database asks for (``KeePassExport/keyDerivation``), Argon2id.
    init(salt: Data) {
        type = Argon2_id
        self.salt = salt
        parallelism = KeePassExport.keyDerivation.parallelism
        memory = KeePassExport.keyDerivation.memory
        iterations = KeePassExport.keyDerivation.iterations
        version = 0x13
    }

    /// The parameters a file's key derivation dictionary gives.
    /// - Throws: ``KeyringImport/KeyringFileError`` for a derivation other than Argon2d or
    ///   Argon2id, or parameters out of range.
    init(_ dictionary: VariantDictionary) throws {
        switch dictionary.bytes("$UUID") {
        case KDBX.argon2d: type = Argon2_d
        case KDBX.argon2id: type = Argon2_id
        case KDBX.aesKDF:
            throw KeyringFileError.unrecognized(
                "a KeePass database whose key derivation is AES-KDF: set it to Argon2 in KeePassXC's database settings")
        default: throw KeyringFileError.unrecognized("a KeePass database with an unknown key derivation")
        }
        guard let salt = dictionary.bytes("S"), salt.count >= 8, let parallelism = dictionary.uint32("P"),
            (1...256).contains(parallelism), let memory = dictionary.uint64("M"),
            (8 * 1024 * UInt64(parallelism)...Self.maximumMemory).contains(memory),
            let iterations = dictionary.uint64("I"), (1...UInt64(UInt32.max)).contains(iterations),
            let version = dictionary.uint32("V"), version == 0x10 || version == 0x13
        else { throw KeyringFileError.damaged("Argon2 parameters out of range") }
        self.salt = salt
        self.parallelism = parallelism
        self.memory = memory
        self.iterations = iterations
        self.version = version
    }

    /// The header's key derivation dictionary for these parameters.
    var dictionary: Data {
        var data = UInt16(0x0100).littleEndianBytes
        func entry(_ type: UInt8, _ key: String, _ value: Data) {
            data += [type] + UInt32(key.utf8.count).littleEndianBytes + Data(key.utf8)
            data += UInt32(value.count).littleEndianBytes + value
        }
        entry(0x42, "$UUID", type == Argon2_d ? KDBX.argon2d : KDBX.argon2id)
        entry(0x42, "S", salt)
        entry(0x04, "P", parallelism.littleEndianBytes)
        entry(0x05, "M", memory.littleEndianBytes)
        entry(0x05, "I", iterations.littleEndianBytes)
        entry(0x04, "V", version.littleEndianBytes)
        return data + [0]
    }

    /// The 32-byte key Argon2 derives from `password`.
    /// - Throws: ``KeyringImport/KeyringFileError/damaged(_:)`` when libargon2 refuses the parameters.
    func derive(_ password: Data) throws -> Data {
        var output = Data(count: 32)
        let status = output.withUnsafeMutableBytes { out in
            password.withUnsafeBytes { pwd in
                salt.withUnsafeBytes { salt in
                    argon2_hash(
                        UInt32(iterations), UInt32(memory / 1024), parallelism, pwd.baseAddress, pwd.count,
                        salt.baseAddress, salt.count, out.baseAddress, out.count, nil, 0, type, version)
                }
            }
        }
        guard status == ARGON2_OK.rawValue else {
            throw KeyringFileError.damaged(
                "Argon2 refused the parameters (\(String(cString: argon2_error_message(status))))")
        }
        return output
    }
}

/// KeePass's typed key-value dictionary (the key derivation's parameters).
struct VariantDictionary: Sendable {
    private var values: [String: (type: UInt8, value: Data)] = [:]

    init(_ data: Data) throws {
        var reader = LittleEndianReader(data, from: 0)
        let version = try reader.uint16()
        guard version & 0xff00 == 0x0100 else {
            throw KeyringFileError.unrecognized("a KDBX parameter dictionary of version \(version)")
        }
        while true {
            let type = try reader.uint8()
            if type == 0 { break }
            let key = String(decoding: try reader.bytes(Int(try reader.uint32())), as: UTF8.self)
            values[key] = (type, try reader.bytes(Int(try reader.uint32())))
        }
    }

    func bytes(_ key: String) -> Data? { values[key].flatMap { $0.type == 0x42 ? $0.value : nil } }
    func uint32(_ key: String) -> UInt32? {
        values[key].flatMap { $0.type == 0x04 && $0.value.count == 4 ? UInt32(littleEndian: $0.value) : nil }
    }
    func uint64(_ key: String) -> UInt64? {
        values[key].flatMap { $0.type == 0x05 && $0.value.count == 8 ? UInt64(littleEndian: $0.value) : nil }
    }
}

/// Little-endian fields read in place from a file's bytes; reading past the end is damage.
struct LittleEndianReader {
    let data: Data
    private(set) var offset: Int

    init(_ data: Data, from offset: Int) {
        self.data = data
        self.offset = offset
    }

    var isAtEnd: Bool { offset == data.count }

    mutating func bytes(_ count: Int) throws -> Data {
        guard count >= 0, count <= data.count - offset else { throw KeyringFileError.damaged("truncated") }
        defer { offset += count }
        return data.subdata(in: data.startIndex + offset..<data.startIndex + offset + count)
    }

    mutating func uint8() throws -> UInt8 { try bytes(1).first! }
    mutating func uint16() throws -> UInt16 { UInt16(littleEndian: try bytes(2)) }
    mutating func uint32() throws -> UInt32 { UInt32(littleEndian: try bytes(4)) }
}

extension FixedWidthInteger {
    /// The integer from its little-endian bytes (`bytes` holds exactly its width).
    init(littleEndian bytes: Data) {
        self = bytes.reversed().reduce(0) { $0 << 8 | Self($1) }
    }

    /// Its little-endian bytes.
    var littleEndianBytes: Data { withUnsafeBytes(of: self.littleEndian) { Data($0) } }
}

extension Data {
    /// The bytes in lower-case hexadecimal (`String(format:)` per byte costs a microsecond each
    /// on Linux, in a loop over every entry of a database).
    var hexDigits: String {
        let digits = Array("0123456789abcdef".utf8)
        return String(decoding: flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] }, as: UTF8.self)
    }
}

extension UUID {
    /// The UUID of 16 bytes, or `nil`.
    init?(bytes: Data) {
        guard bytes.count == 16 else { return nil }
        let b = Array(bytes)
        self.init(
            uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15])
        )
    }

    /// The UUID of 32 hexadecimal digits, or `nil`.
    init?(hex: String) {
        let digits = Array(hex.utf8)
        guard digits.count == 32 else { return nil }
        var bytes = Data()
        for index in stride(from: 0, to: 32, by: 2) {
            guard let byte = UInt8(String(decoding: digits[index..<index + 2], as: UTF8.self), radix: 16) else {
                return nil
            }
            bytes.append(byte)
        }
        self.init(bytes: bytes)
    }

    /// Its 16 bytes.
    var bytes: Data { withUnsafeBytes(of: uuid) { Data($0) } }
}
