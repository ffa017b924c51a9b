import CLibCrypto
import Crypto
import CryptoExtras
import Foundation
import SecretService

/// A KWallet file (`~/.local/share/kwalletd/NAME.kwl`, KDE Frameworks 5 and 6), read from disk
/// without `kwalletd` running, as the wallet's items to move in.
///
/// The layout is KWallet's own (KDE/kwallet, `src/runtime/kwalletd/backend/`): the magic
/// `KWALLET\n\r\0\r\n`; version 0.1 (the key from the password by PBKDF2-HMAC-SHA512, 50,000
/// rounds, 56 bytes, salted with the 56 bytes of `NAME.salt` beside the file); cipher 3
/// (Blowfish-CBC, a zero IV); a clear index of each folder's and entry's MD5; then the encrypted
/// part: 8 random bytes, the payload's length, the payload (Qt's `QDataStream`: folders of
/// entries), padding, and a SHA-1 of the payload in KWallet's own variant (its words loaded
/// little-endian). Blowfish and the SHA-1 compression are OpenSSL's, PBKDF2 swift-crypto's.
///
/// Nothing is trusted before it is checked: the payload's hash must match (a wrong password, or
/// an altered encrypted part, fails there), and the clear index must name exactly the folders
/// and entries the payload holds (an altered index is refused too). GnuPG-encrypted wallets and
/// KDE 4's files (before PBKDF2) are refused with the way forward.
public struct KWalletFile: Sendable {
    /// The file's bytes.
    public let contents: Data
    /// The wallet's name (the file's, without `.kwl`).
    public let name: String
    private let index: [(folder: [UInt8], entries: [[UInt8]])]
    private let encrypted: Data

    /// Whether `contents` starts as a KWallet file.
    public static func isKWalletFile(_ contents: Data) -> Bool {
        contents.starts(with: magic)
    }

    static let magic: [UInt8] = Array("KWALLET\n\r".utf8) + [0, 0x0D, 0x0A]
    /// PBKDF2's rounds and key length, and the salt's length (KWallet's constants).
    static let rounds = 50_000
    static let keyLength = 56
    static let saltLength = 56

    /// Reads the clear part of the file `contents`, named `name`.
    /// - Throws: ``KeyringFileError/unrecognized(_:)`` for another kind of file, a GnuPG wallet
    ///   or a KDE 4 one; ``KeyringFileError/damaged(_:)`` for a truncated index.
    public init(contentsOf contents: Data, name: String) throws {
        self.contents = contents
        self.name = name
        let bytes = [UInt8](contents)
        guard Self.isKWalletFile(contents), bytes.count >= 16 else {
            throw KeyringFileError.unrecognized("not a KWallet file")
        }
        guard bytes[12] == 0 else { throw KeyringFileError.unrecognized("KWallet file version \(bytes[12])") }
        switch (bytes[13], bytes[14], bytes[15]) {
        case (_, 2, _):
            throw KeyringFileError.unrecognized(
                "a KWallet encrypted with GnuPG: open it in KWallet and export its entries, or decrypt it with gpg")
        case (1, 3, 2): break
        case (0, _, _), (_, 0, _):
            throw KeyringFileError.unrecognized(
                "a KWallet from KDE 4 (no PBKDF2): open it once in KDE's KWallet 5 or later, which converts it")
        default:
            throw KeyringFileError.unrecognized(
                "KWallet version 0.\(bytes[13]), cipher \(bytes[14]), hash \(bytes[15])")
        }
        var reader = BigEndianReader(contents, from: 16)
        let folders = try reader.uint32()
        guard folders <= 0xFFFF else { throw KeyringFileError.damaged("\(folders) folders") }
        var index: [(folder: [UInt8], entries: [[UInt8]])] = []
        for _ in 0..<folders {
            let folder = [UInt8](try reader.bytes(16))
            let count = try reader.uint32()
            guard Int(count) <= reader.remaining / 16 else {
                throw KeyringFileError.damaged("a folder claims \(count) entries")
            }
            index.append((folder, try (0..<count).map { _ in [UInt8](try reader.bytes(16)) }))
        }
        self.index = index
        encrypted = Data(contents.suffix(reader.remaining))
        guard !encrypted.isEmpty, encrypted.count % 8 == 0 else {
            throw KeyringFileError.damaged("the encrypted part is \(encrypted.count) bytes, not whole Blowfish blocks")
        }
    }

    /// The salt file beside the wallet at `path` (`NAME.salt`).
    public static func saltPath(forWalletAt path: String) -> String {
        (path as NSString).deletingPathExtension + ".salt"
    }

    /// The wallet's entries as Secret Service items: one per entry, labelled with its key, with
    /// the attributes `kwallet:folder`, `kwallet:key` and `xdg:schema` (`org.kde.KWallet.Password`,
    /// `.Map` or `.Stream`); a password's secret is its text, a map's a JSON object, a stream's its
    /// bytes. KWallet keeps no dates.
    /// - Parameters:
    ///   - password: The wallet's password.
    ///   - salt: The contents of the wallet's `.salt` file.
    /// - Throws: ``KeyringFileError/wrongPassword`` when the payload's hash does not match;
    ///   ``KeyringFileError/damaged(_:)`` for a payload or index that does not parse or agree.
    public func items(password: Data, salt: Data) throws -> [ForeignSecretItem] {
        guard salt.count == Self.saltLength else {
            throw KeyringFileError.damaged("the salt file holds \(salt.count) bytes, not \(Self.saltLength)")
        }
        let key = try KDF.Insecure.PBKDF2.deriveKey(
            from: password, salt: salt, using: .sha512, outputByteCount: Self.keyLength,
            unsafeUncheckedRounds: Self.rounds)
        let plain = key.withUnsafeBytes { Self.decrypt(encrypted, key: [UInt8]($0)) }
        // [8 random bytes][length][payload][1 to 8 bytes of padding][20-byte hash]
        guard plain.count >= 12 + 1 + 20 else { throw KeyringFileError.wrongPassword }
        let length = Int(plain[8]) << 24 | Int(plain[9]) << 16 | Int(plain[10]) << 8 | Int(plain[11])
        guard length <= plain.count - 12 - 1 - 20 else { throw KeyringFileError.wrongPassword }
        let payload = Array(plain[12..<(12 + length)])
        guard Self.kwalletSHA1(payload) == Array(plain.suffix(20)) else { throw KeyringFileError.wrongPassword }
        let folders = try Self.folders(payload)
        try checkIndex(folders)
        return folders.flatMap { folder in
            folder.entries.compactMap { entry in entry.item(in: folder.name) }
        }
    }

    /// Blowfish-CBC decryption with a zero IV (OpenSSL's `BF_cbc_encrypt`).
    static func decrypt(_ data: Data, key: [UInt8]) -> [UInt8] {
        var schedule = BF_KEY()
        BF_set_key(&schedule, Int32(key.count), key)
        var iv = [UInt8](repeating: 0, count: 8)
        var output = [UInt8](repeating: 0, count: data.count)
        data.withUnsafeBytes { input in
            BF_cbc_encrypt(
                input.bindMemory(to: UInt8.self).baseAddress, &output, data.count, &schedule, &iv, BF_DECRYPT)
        }
        return output
    }

    /// KWallet's SHA-1 (KDE Frameworks' `sha1.cc` on a little-endian machine): SHA-1's padding,
    /// each 64-byte block's words loaded little-endian, the state written little-endian. OpenSSL's
    /// compression function loads words big-endian, so each word of each block is byte-reversed
    /// before it is given.
    static func kwalletSHA1(_ message: [UInt8]) -> [UInt8] {
        var padded = message + [0x80]
        padded += [UInt8](repeating: 0, count: (64 + 56 - padded.count % 64) % 64)
        padded += withUnsafeBytes(of: (UInt64(message.count) * 8).bigEndian, Array.init)
        for word in stride(from: 0, to: padded.count, by: 4) { padded[word..<(word + 4)].reverse() }
        var context = SHA_CTX()
        SHA1_Init(&context)
        padded.withUnsafeBufferPointer { blocks in
            for block in stride(from: 0, to: blocks.count, by: 64) {
                SHA1_Transform(&context, blocks.baseAddress! + block)
            }
        }
        return [context.h0, context.h1, context.h2, context.h3, context.h4].flatMap {
            withUnsafeBytes(of: UInt32($0).littleEndian, Array.init)
        }
    }

    /// The clear index must list exactly the payload's folders and entries, by their MD5.
    private func checkIndex(_ folders: [Folder]) throws {
        func md5(_ text: String) -> [UInt8] { Array(Insecure.MD5.hash(data: Data(text.utf8))) }
        let payload = Set(
            folders.map { [md5($0.name)] + $0.entries.map { md5($0.key) }.sorted { $0.lexicographicallyPrecedes($1) } })
        let clear = Set(index.map { [$0.folder] + $0.entries.sorted { $0.lexicographicallyPrecedes($1) } })
        guard payload == clear, folders.count == index.count else {
            throw KeyringFileError.damaged("the clear index does not match the encrypted folders and entries")
        }
    }

    // MARK: The payload

    struct Folder {
        var name: String
        var entries: [Entry]
    }

    struct Entry {
        var key: String
        /// KWallet's types: 1 a password, 2 a stream, 3 a map (0, unknown, is skipped).
        var type: Int32
        var value: [UInt8]

        /// The entry as an item, or `nil` for an entry of an unknown type.
        func item(in folder: String) -> ForeignSecretItem? {
            let kind: String
            let secret: Data
            switch type {
            case 1:
                var reader = BigEndianReader(Data(value), from: 0)
                guard let text = try? reader.qString() else { return nil }
                kind = "Password"
                secret = Data(text.utf8)
            case 2:
                kind = "Stream"
                secret = Data(value)
            case 3:
                guard let map = try? Self.map(value),
                    let json = try? JSONSerialization.data(withJSONObject: map, options: [.sortedKeys])
                else { return nil }
                kind = "Map"
                secret = json
            default:
                return nil
            }
            return ForeignSecretItem(
                label: key,
                attributes: ["xdg:schema": "org.kde.KWallet." + kind, "kwallet:folder": folder, "kwallet:key": key],
                secret: secret)
        }

        /// A map entry's value: a count, then that many pairs of strings.
        static func map(_ value: [UInt8]) throws -> [String: String] {
            var reader = BigEndianReader(Data(value), from: 0)
            let count = try reader.uint32()
            var map: [String: String] = [:]
            for _ in 0..<count {
                let key = try reader.qString()
                map[key] = try reader.qString()
            }
            return map
        }
    }

    /// The payload's folders: until its end, a folder's name, its entry count, then each entry's
    /// key, type and value.
    static func folders(_ payload: [UInt8]) throws -> [Folder] {
        var reader = BigEndianReader(Data(payload), from: 0)
        var folders: [Folder] = []
        while reader.remaining > 0 {
            let name = try reader.qString()
            let count = try reader.uint32()
            guard Int(count) <= reader.remaining / 12 else {
                throw KeyringFileError.damaged("a folder claims \(count) entries")
            }
            let entries = try (0..<count).map { _ in
                Entry(
                    key: try reader.qString(), type: Int32(bitPattern: try reader.uint32()),
                    value: [UInt8](try reader.byteArray() ?? Data()))
            }
            folders.append(Folder(name: name, entries: entries))
        }
        return folders
    }
}

extension BigEndianReader {
    /// A Qt `QString` (`QDataStream`): its length in bytes (`0xFFFFFFFF` for a null one), then
    /// UTF-16BE.
    mutating func qString() throws -> String {
        let units = [UInt8](try byteArray() ?? Data())
        guard units.count % 2 == 0 else { throw KeyringFileError.damaged("a text field is not UTF-16") }
        let utf16 = stride(from: 0, to: units.count, by: 2).map { UInt16(units[$0]) << 8 | UInt16(units[$0 + 1]) }
        return String(decoding: utf16, as: UTF16.self)
    }
}
