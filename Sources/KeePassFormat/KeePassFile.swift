import CArgon2
import Crypto
import CryptoExtras
import Foundation
import KeyringImport
import SecretService

/// A KeePass database file in the KDBX 4 format, as KeePassXC and KeePass 2 write it, read to
/// move its entries in (`security import-keyring FILE.kdbx`; docs/moving-in.md).
///
/// The container (KeePass's "KDBX 4" file format, documented by the KeePassXC team in
/// keepassxreboot/keepassxc-specs): a clear header (cipher, compression, master seed, IV and the
/// key derivation's parameters) with its SHA-256 and an HMAC-SHA-256 under a key derived from the
/// password, then the encrypted payload in blocks, each with its own HMAC-SHA-256. The password's
/// key is `SHA-256(SHA-256(password))` through Argon2d or Argon2id (libargon2), the payload
/// AES-256-CBC or ChaCha20 (swift-crypto), gzip-compressed (zlib), and its XML has each protected
/// value (passwords) enciphered again with ChaCha20 under a key of its own.
///
/// Every check comes before anything is used: the header's hash (damage), its HMAC (the wrong
/// password, or a key file this reader is not given), every block's HMAC (damage or tampering).
/// Not read: KDBX 3.1 files (their protected values use Salsa20, which no library of this
/// project has: KeePassXC saves a database as KDBX 4 when its key derivation is Argon2),
/// the AES-KDF and Twofish (no library), key files and hardware keys.
///
/// ```swift
/// let file = try KeePassFile(contentsOf: Data(contentsOf: url))
/// let items = try file.items(password: Data("master password".utf8))
/// ```
public struct KeePassFile: Sendable {
    /// The file's bytes.
    public let contents: Data
    private let header: OuterHeader

    /// Whether `contents` starts as a KeePass 2 file does (any version).
    public static func isKeePassFile(_ contents: Data) -> Bool {
        contents.count >= 8 && contents.prefix(8).elementsEqual(KDBX.signature)
    }

    /// Reads the clear header of the KDBX 4 file in `contents`.
    /// - Throws: ``KeyringImport/KeyringFileError/unrecognized(_:)`` for another kind of file, a
    ///   KDBX 3.1 file, or a cipher or key derivation this reader has no library for;
    ///   ``KeyringImport/KeyringFileError/damaged(_:)`` for a truncated or altered header.
    public init(contentsOf contents: Data) throws {
        self.contents = contents
        header = try OuterHeader(contents)
    }

    /// The database's entries, decrypted with `password`, as Secret Service items the way
    /// KeePassXC's own Secret Service gives them: the label is the entry's title; the attributes
    /// `Title`, `UserName`, `URL`, `Notes` (when not empty), its unprotected custom fields, `Uuid`
    /// and `Path` (its groups and title); the secret is its password; the dates are its own.
    /// Entries in the recycle bin, old versions (history), protected custom fields and attachments
    /// are not moved in.
    /// - Throws: ``KeyringImport/KeyringFileError/wrongPassword`` when `password` does not open it,
    ///   ``KeyringImport/KeyringFileError/damaged(_:)`` when a block or the payload is damaged.
    public func items(password: Data) throws -> [ForeignSecretItem] {
        let keys = try header.keys(password: password)
        let payload = try header.payload(of: contents, keys: keys)
        return try KeePassPayload(payload).items()
    }
}

/// The clear part of a KDBX 4 file.
private struct OuterHeader: Sendable {
    enum Cipher { case aes256, chaCha20 }

    /// The header's bytes, which its hash and HMAC cover.
    var bytes: Data
    var cipher: Cipher
    var compressed: Bool
    var masterSeed: Data
    var iv: Data
    var argon2: Argon2
    /// The header's HMAC-SHA-256, under a key from the password.
    var storedHMAC: Data
    /// Where the header's SHA-256 and HMAC end and the blocks start.
    var blocksStart: Int

    init(_ contents: Data) throws {
        guard KeePassFile.isKeePassFile(contents) else {
            throw KeyringFileError.unrecognized("not a KeePass database (no KDBX signature)")
        }
        var reader = LittleEndianReader(contents, from: 8)
        let minor = try reader.uint16()
        let major = try reader.uint16()
        guard major == 4 else {
            throw KeyringFileError.unrecognized(
                major < 4
                    ? "a KDBX \(major).\(minor) database: save it as KDBX 4 first (in KeePassXC, set its key derivation to Argon2)"
                    : "a KDBX \(major).\(minor) database (this reader knows KDBX 4)")
        }
        var fields: [UInt8: Data] = [:]
        while true {
            let id = try reader.uint8()
            let value = try reader.bytes(Int(try reader.uint32()))
            if id == 0 { break }
            fields[id] = value
        }
        let headerEnd = reader.offset
        bytes = contents.subdata(in: contents.startIndex..<contents.startIndex + headerEnd)
        let storedHash = try reader.bytes(32)
        guard Data(SHA256.hash(data: bytes)) == storedHash else {
            throw KeyringFileError.damaged("the header's checksum does not match")
        }
        storedHMAC = try reader.bytes(32)
        blocksStart = reader.offset

        switch fields[2] {
        case KDBX.aes256: cipher = .aes256
        case KDBX.chaCha20: cipher = .chaCha20
        case .some:
            throw KeyringFileError.unrecognized("a KeePass database with a cipher other than AES-256 or ChaCha20")
        case nil: throw KeyringFileError.damaged("no cipher in the header")
        }
        guard let compression = fields[3], compression.count == 4, compression.allSatisfy({ $0 <= 1 }) else {
            throw KeyringFileError.damaged("no compression flag in the header")
        }
        compressed = compression.first == 1
        guard let seed = fields[4], seed.count == 32 else { throw KeyringFileError.damaged("no master seed") }
        masterSeed = seed
        guard let iv = fields[7], iv.count == (cipher == .aes256 ? 16 : 12) else {
            throw KeyringFileError.damaged("no encryption IV of the cipher's length")
        }
        self.iv = iv
        guard let kdf = fields[11] else { throw KeyringFileError.damaged("no key derivation parameters") }
        argon2 = try Argon2(try VariantDictionary(kdf))
    }

    /// The payload's key and the blocks' HMAC key.
    struct Keys {
        var encryption: SymmetricKey
        var hmacBase: Data

        /// The HMAC key of block `index` (`UInt64.max`: the header's).
        func blockKey(_ index: UInt64) -> SymmetricKey {
            SymmetricKey(data: SHA512.hash(data: index.littleEndianBytes + hmacBase))
        }
    }

    /// The keys from `password`, checked against the header's HMAC.
    func keys(password: Data) throws -> Keys {
        let composite = Data(SHA256.hash(data: Data(SHA256.hash(data: password))))
        var transformed = try argon2.derive(composite)
        defer { transformed.resetBytes(in: 0..<transformed.count) }
        let keys = Keys(
            encryption: SymmetricKey(data: SHA256.hash(data: masterSeed + transformed)),
            hmacBase: Data(SHA512.hash(data: masterSeed + transformed + [1])))
        guard HMAC<SHA256>.isValidAuthenticationCode(storedHMAC, authenticating: bytes, using: keys.blockKey(.max))
        else { throw KeyringFileError.wrongPassword }
        return keys
    }

    /// The decrypted, decompressed payload: the inner header and the XML.
    func payload(of contents: Data, keys: Keys) throws -> Data {
        var reader = LittleEndianReader(contents, from: blocksStart)
        var ciphertext = Data()
        for index in UInt64(0)... {
            let mac = try reader.bytes(32)
            let size = try reader.uint32()
            guard size <= Int32.max else { throw KeyringFileError.damaged("block \(index) has a negative size") }
            let block = try reader.bytes(Int(size))
            let authenticated = index.littleEndianBytes + size.littleEndianBytes + block
            guard
                HMAC<SHA256>.isValidAuthenticationCode(mac, authenticating: authenticated, using: keys.blockKey(index))
            else { throw KeyringFileError.damaged("block \(index) was altered") }
            if size == 0 { break }
            ciphertext += block
        }
        guard reader.isAtEnd else { throw KeyringFileError.damaged("bytes after the last block") }
        var plain: Data
        do {
            switch cipher {
            case .aes256:
                plain = try AES._CBC.decrypt(ciphertext, using: keys.encryption, iv: AES._CBC.IV(ivBytes: iv))
            case .chaCha20:
                plain = try Insecure.ChaCha20CTR.encrypt(
                    ciphertext, using: keys.encryption, nonce: Insecure.ChaCha20CTR.Nonce(data: iv))
            }
        } catch {
            throw KeyringFileError.damaged("the payload does not decrypt")
        }
        return compressed ? try Gzip.gunzip(plain) : plain
    }
}
