import Crypto
import CryptoExtras
import Foundation
import KeychainModel
import SecretService

/// A KeePass database written in the KDBX 4 format, for leaving: `security export-keyring -o
/// FILE.kdbx` writes a keychain's passwords into a file KeePassXC and KeePass 2 open with the
/// password given (docs/moving-in.md).
///
/// The file is what ``KeePassFile`` reads: Argon2id (``keyDerivation``, by libargon2)
/// over `SHA-256(SHA-256(password))`, AES-256-CBC, gzip, HMAC-SHA-256 over the header and each
/// block, and each password enciphered again with ChaCha20 inside the XML, as KeePassXC writes
/// it. Every key, seed, salt and IV is fresh from the system's random source.
public enum KeePassExport {
    /// The Argon2id parameters a written database asks for: 64 MiB, 10 passes, 2 lanes (about
    /// what KeePassXC's one-second default comes to on a laptop).
    public static let keyDerivation = (memory: UInt64(64 << 20), iterations: UInt64(10), parallelism: UInt32(2))

    /// One entry of the database.
    public struct Entry: Sendable, Equatable {
        public var title: String
        public var userName: String
        public var url: String
        public var notes: String
        /// The entry's password (protected in the file).
        public var password: String
        /// Its other fields, unprotected.
        public var fields: [String: String]
        public var uuid: UUID
        public var created: Date?
        public var modified: Date?

        /// An entry from its parts; a random UUID unless one is given.
        public init(
            title: String, userName: String = "", url: String = "", notes: String = "", password: String,
            fields: [String: String] = [:], uuid: UUID = UUID(), created: Date? = nil, modified: Date? = nil
        ) {
            self.title = title
            self.userName = userName
            self.url = url
            self.notes = notes
            self.password = password
            self.fields = fields
            self.uuid = uuid
            self.created = created
            self.modified = modified
        }

        /// The entry for a keychain's generic or internet password, or `nil` when its secret is not
        /// text (a KeePass password is).
        ///
        /// An item moved in from KeePass gets its title, fields and UUID back. Another gets its
        /// label (else service, else server) as title, its account as user name, an internet
        /// password's protocol, server, port and path as URL, its comment as notes, and the
        /// attributes Secret Service clients find it by (`service`, `xdg:schema`, …) as fields,
        /// so that KeePassXC's own Secret Service serves it to them under the same attributes.
        public init?(exporting item: Item) {
            guard let data = item.data, let password = String(data: data, encoding: .utf8) else { return nil }
            var map = SecretAttributes.attributes(of: item)
            func take(_ key: String) -> String { map.removeValue(forKey: key) ?? "" }
            func string(_ name: AttributeName) -> String { item.attributes[name]?.stringValue ?? "" }
            let (title, userName, url, notes): (String, String, String, String)
            var uuid: UUID?
            if map["Title"] != nil, map["Uuid"] != nil {  // moved in from KeePass
                uuid = UUID(hex: take("Uuid"))
                map["Path"] = nil  // the entry's groups and title: made again when it moves in
                (title, userName, url, notes) = (take("Title"), take("UserName"), take("URL"), take("Notes"))
            } else {
                title = [string(.label), string(.service), string(.server)].first { !$0.isEmpty } ?? ""
                (userName, url, notes) = (
                    string(.account), Self.url(of: item, scheme: map["protocol"]), string(.comment)
                )
            }
            self.init(
                title: title, userName: userName, url: url, notes: notes, password: password, fields: map,
                uuid: uuid ?? UUID(), created: item.attributes[.creationDate]?.dateValue,
                modified: item.attributes[.modificationDate]?.dateValue)
        }

        /// An internet password's `scheme://server:port/path` (`https` when it names no protocol
        /// libsecret knows); empty for a generic password.
        static func url(of item: Item, scheme: String?) -> String {
            guard item.itemClass == .internetPassword, let server = item.attributes[.server]?.stringValue,
                !server.isEmpty
            else { return "" }
            let scheme = scheme ?? "https"
            let port = item.attributes[.port]?.numberValue.flatMap { $0 > 0 ? ":\($0)" : nil } ?? ""
            let path = item.attributes[.path]?.stringValue ?? ""
            return "\(scheme)://\(server)\(port)\(path.isEmpty || path.hasPrefix("/") ? path : "/" + path)"
        }
    }

    /// The KDBX 4 file holding `entries` in one group named `name`, opened by `password`.
    /// - Throws: ``KeePassExportError`` when libargon2 or zlib fail.
    public static func database(_ entries: [Entry], name: String, password: Data) throws -> Data {
        let masterSeed = randomBytes(32)
        let iv = randomBytes(16)
        let streamKey = randomBytes(64)
        let argon2 = Argon2(salt: randomBytes(32))

        var header = Data(KDBX.signature) + UInt16(1).littleEndianBytes + UInt16(4).littleEndianBytes
        func field(_ id: UInt8, _ value: Data) { header += [id] + UInt32(value.count).littleEndianBytes + value }
        field(2, KDBX.aes256)
        field(3, UInt32(1).littleEndianBytes)  // gzip
        field(4, masterSeed)
        field(7, iv)
        field(11, argon2.dictionary)
        field(0, Data("\r\n\r\n".utf8))

        let composite = Data(SHA256.hash(data: Data(SHA256.hash(data: password))))
        var transformed = try argon2.derive(composite)
        defer { transformed.resetBytes(in: 0..<transformed.count) }
        let encryptionKey = SymmetricKey(data: SHA256.hash(data: masterSeed + transformed))
        let hmacBase = Data(SHA512.hash(data: masterSeed + transformed + [1]))
        func blockKey(_ index: UInt64) -> SymmetricKey {
            SymmetricKey(data: SHA512.hash(data: index.littleEndianBytes + hmacBase))
        }

        var inner = Data([1]) + UInt32(4).littleEndianBytes + UInt32(3).littleEndianBytes  // ChaCha20
        inner += Data([2]) + UInt32(streamKey.count).littleEndianBytes + streamKey
        inner += Data([0]) + UInt32(0).littleEndianBytes
        inner += Data(try xml(entries, name: name, streamKey: streamKey).utf8)
        let ciphertext: Data
        do {
            ciphertext = try AES._CBC.encrypt(try Gzip.gzip(inner), using: encryptionKey, iv: AES._CBC.IV(ivBytes: iv))
        } catch let error as KeePassExportError {
            throw error
        } catch {
            throw KeePassExportError(description: "AES-256-CBC refused the payload")
        }

        var file = header + Data(SHA256.hash(data: header))
        file += Data(HMAC<SHA256>.authenticationCode(for: header, using: blockKey(.max)))
        var index: UInt64 = 0
        var offset = ciphertext.startIndex
        while true {
            let block = ciphertext[offset..<min(offset + (1 << 20), ciphertext.endIndex)]
            let size = UInt32(block.count).littleEndianBytes
            let authenticated = index.littleEndianBytes + size + block
            file += Data(HMAC<SHA256>.authenticationCode(for: authenticated, using: blockKey(index))) + size + block
            if block.isEmpty { break }
            offset = block.endIndex
            index += 1
        }
        return file
    }

    /// The database's XML: one root group, the entries in it, each password protected (the
    /// ChaCha20 stream of `streamKey`, run over the passwords in document order).
    static func xml(_ entries: [Entry], name: String, streamKey: Data) throws -> String {
        let hash = Data(SHA512.hash(data: streamKey))
        let passwords = entries.map { Data($0.password.utf8) }
        let enciphered: Data
        do {
            enciphered = try Insecure.ChaCha20CTR.encrypt(
                passwords.reduce(into: Data()) { $0.append($1) }, using: SymmetricKey(data: hash.prefix(32)),
                nonce: Insecure.ChaCha20CTR.Nonce(data: hash.subdata(in: 32..<44)))
        } catch {
            throw KeePassExportError(description: "ChaCha20 refused the passwords")
        }
        let now = time(Date())
        var out = "<?xml version=\"1.0\" encoding=\"utf-8\" standalone=\"yes\"?>\n<KeePassFile><Meta>"
        out += "<Generator>keychain-linux</Generator><DatabaseName>\(escaped(name))</DatabaseName>"
        out += "<RecycleBinEnabled>False</RecycleBinEnabled>"
        out += "<RecycleBinUUID>\(Data(count: 16).base64EncodedString())</RecycleBinUUID></Meta><Root><Group>"
        out += "<UUID>\(UUID().bytes.base64EncodedString())</UUID><Name>\(escaped(name))</Name>"
        out += "<Times><CreationTime>\(now)</CreationTime><LastModificationTime>\(now)</LastModificationTime></Times>"
        var offset = enciphered.startIndex
        for (entry, password) in zip(entries, passwords) {
            let protected = enciphered[offset..<offset + password.count]
            offset += password.count
            out += "<Entry><UUID>\(entry.uuid.bytes.base64EncodedString())</UUID><Times>"
            out += "<CreationTime>\(entry.created.map(time) ?? now)</CreationTime>"
            out += "<LastModificationTime>\(entry.modified.map(time) ?? now)</LastModificationTime></Times>"
            let standard = [
                ("Title", entry.title), ("UserName", entry.userName), ("URL", entry.url), ("Notes", entry.notes),
            ]
            let custom = entry.fields.filter { !Self.standardKeys.contains($0.key) }.sorted { $0.key < $1.key }
            for (key, value) in standard + custom {
                out += "<String><Key>\(escaped(key))</Key><Value>\(escaped(value))</Value></String>"
            }
            out +=
                "<String><Key>Password</Key><Value Protected=\"True\">\(protected.base64EncodedString())</Value></String>"
            out += "</Entry>"
        }
        return out + "</Group></Root></KeePassFile>\n"
    }

    /// The fields every entry has; a custom field cannot take their names.
    static let standardKeys: Set<String> = ["Title", "UserName", "URL", "Notes", "Password"]

    /// A KDBX 4 time: seconds since 0001-01-01, 8 bytes little-endian, base64.
    static func time(_ date: Date) -> String {
        Int64(date.timeIntervalSince1970.rounded(.down) + 62_135_596_800).littleEndianBytes.base64EncodedString()
    }

    /// `text` for XML character data: markup characters as entities, and the characters XML 1.0
    /// cannot hold at all (control characters but tab and line breaks) left out.
    static func escaped(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "\t", "\n", "\r": out.unicodeScalars.append(scalar)
            case _ where scalar.value < 0x20 || (0xFFFE...0xFFFF).contains(scalar.value): break
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    static func randomBytes(_ count: Int) -> Data {
        Data(SymmetricKey(size: SymmetricKeySize(bitCount: count * 8)).withUnsafeBytes { Data($0) })
    }
}

/// Why a KeePass database could not be written.
public struct KeePassExportError: Error, CustomStringConvertible {
    public let description: String
}
