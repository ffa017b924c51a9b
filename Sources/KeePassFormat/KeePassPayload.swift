import Crypto
import CryptoExtras
import Foundation
import KeyringImport
import SecretService

import CLibXML2

/// A KDBX 4 payload once decrypted: the inner header (the protected values' stream key; the
/// attachments, skipped), then the database's XML.
struct KeePassPayload {
    /// The key of the ChaCha20 stream that enciphers the protected values, in document order.
    var streamKey: Data
    var xml: Data

    init(_ payload: Data) throws {
        var reader = LittleEndianReader(payload, from: 0)
        var streamID: UInt32?
        var key: Data?
        while true {
            let id = try reader.uint8()
            let value = try reader.bytes(Int(try reader.uint32()))
            if id == 0 { break }
            if id == 1, value.count == 4 { streamID = UInt32(littleEndian: value) }
            if id == 2 { key = value }
        }
        guard streamID == 3, let key else {
            throw KeyringFileError.unrecognized(
                "a KeePass database whose protected values are not enciphered with ChaCha20")
        }
        streamKey = key
        xml = payload.subdata(in: payload.startIndex + reader.offset..<payload.endIndex)
    }

    /// The entries outside the recycle bin, as Secret Service items (see
    /// ``KeePassFile/items(password:)``).
    func items() throws -> [ForeignSecretItem] {
        let reader = KeePassXMLReader()
        try reader.read(xml)
        let clear = try revealed(reader.protectedValues)
        return reader.entries.filter { !$0.isHistory && !$0.inRecycleBin(reader.recycleBin) }.map { entry in
            entry.item(protected: clear)
        }
    }

    /// The protected values deciphered: the stream is ChaCha20 under the first 32 bytes of
    /// SHA-512 of the stream key, with the next 12 as its nonce, run over the values in order.
    private func revealed(_ values: [Data]) throws -> [Data] {
        let hash = Data(SHA512.hash(data: streamKey))
        let joined = values.reduce(into: Data()) { $0.append($1) }
        let clear = try Insecure.ChaCha20CTR.encrypt(
            joined, using: SymmetricKey(data: hash.prefix(32)),
            nonce: Insecure.ChaCha20CTR.Nonce(data: hash.subdata(in: 32..<44)))
        var offset = clear.startIndex
        return values.map { value in
            defer { offset += value.count }
            return clear.subdata(in: offset..<offset + value.count)
        }
    }
}

/// One entry as read from the XML.
struct KeePassEntry {
    var uuid = Data()
    /// Its groups' names below the root, outermost first.
    var groups: [String] = []
    /// Its groups' UUIDs, outermost (the root) first.
    var groupUUIDs: [Data] = []
    var isHistory = false
    /// Its fields: a clear value, or the index of a protected one.
    var strings: [(key: String, value: Value)] = []
    var created: Date?
    var modified: Date?

    enum Value {
        case clear(String)
        case protected(Int)
    }

    func inRecycleBin(_ recycleBin: Data?) -> Bool {
        guard let recycleBin, recycleBin != Data(count: 16) else { return false }
        return groupUUIDs.contains(recycleBin)
    }

    /// The item KeePassXC's Secret Service would give for it.
    func item(protected: [Data]) -> ForeignSecretItem {
        var attributes: [String: String] = [:]
        var secret = Data()
        for (key, value) in strings {
            switch value {
            case .clear(let text) where key == "Password": secret = Data(text.utf8)
            case .protected(let index) where key == "Password": secret = protected[index]
            case .clear(let text) where key == "Title" || !text.isEmpty: attributes[key] = text
            case .protected(let index) where ["Title", "UserName", "URL", "Notes"].contains(key):
                attributes[key] = String(decoding: protected[index], as: UTF8.self)
            default: break  // an empty field, or a protected custom field (a TOTP seed): not an attribute
            }
        }
        let title = attributes["Title"] ?? ""
        attributes["Title"] = title
        attributes["Uuid"] = uuid.hexDigits
        attributes["Path"] = (groups + [title]).joined(separator: "/")
        return ForeignSecretItem(
            label: title, attributes: attributes, secret: secret, created: created, modified: modified)
    }
}

/// The parts of a KeePass XML document an import needs, read as it streams by (libxml2's
/// streaming reader: no document tree, no entity substitution, no network).
final class KeePassXMLReader {
    private(set) var entries: [KeePassEntry] = []
    /// The protected values' enciphered bytes, in document order.
    private(set) var protectedValues: [Data] = []
    private(set) var recycleBin: Data?
    private(set) var failure: String?

    private var path: [String] = []
    private var text = ""
    /// The open groups: name and UUID (filled in as their elements pass).
    private var groups: [(name: String, uuid: Data)] = []
    /// The open entries (an entry's history holds entries).
    private var open: [KeePassEntry] = []
    private var stringKey = ""
    private var valueIsProtected = false
    private var recycleBinEnabled = true

    /// Reads the document in `xml`.
    /// - Throws: ``KeyringImport/KeyringFileError/damaged(_:)`` when it is not well-formed XML,
    ///   or a value that must be base64 is not.
    func read(_ xml: Data) throws {
        guard xml.count < Int32.max else { throw KeyringFileError.damaged("the database's XML is too large") }
        let options = Int32(XML_PARSE_NONET.rawValue | XML_PARSE_NOERROR.rawValue | XML_PARSE_NOWARNING.rawValue)
        let status: Int32 = xml.withUnsafeBytes { bytes in
            guard let base = bytes.baseAddress,
                let reader = xmlReaderForMemory(
                    base.assumingMemoryBound(to: CChar.self), Int32(bytes.count), nil, nil, options)
            else { return -1 }
            defer { xmlFreeTextReader(reader) }
            var status = xmlTextReaderRead(reader)
            while status == 1 && failure == nil {
                step(reader)
                status = xmlTextReaderRead(reader)
            }
            return status
        }
        guard status == 0 else { throw KeyringFileError.damaged(failure ?? "the database's XML is malformed") }
        if let failure { throw KeyringFileError.damaged(failure) }
    }

    /// One node of the document.
    private func step(_ reader: xmlTextReaderPtr) {
        switch xmlTextReaderNodeType(reader) {
        case 1:  // an element begins
            let name = xmlTextReaderConstLocalName(reader).map { String(cString: $0) } ?? ""
            var protected = false
            if name == "Value", let value = xmlTextReaderGetAttribute(reader, "Protected") {
                protected = String(cString: value).lowercased() == "true"
                ck_xml_free(value)
            }
            didStart(name, protected: protected)
            if xmlTextReaderIsEmptyElement(reader) == 1 { didEnd(name) }
        case 15:  // an element ends
            didEnd(xmlTextReaderConstLocalName(reader).map { String(cString: $0) } ?? "")
        case 3, 4:  // text, CDATA
            if let value = xmlTextReaderConstValue(reader) { text += String(cString: value) }
        default: break
        }
    }

    private func didStart(_ name: String, protected: Bool) {
        path.append(name)
        text = ""
        switch name {
        case "Group" where open.isEmpty: groups.append((name: "", uuid: Data()))
        case "Entry":
            var entry = KeePassEntry()
            entry.isHistory = !open.isEmpty
            entry.groups = groups.dropFirst().map(\.name)
            entry.groupUUIDs = groups.map(\.uuid)
            open.append(entry)
        case "Value": valueIsProtected = protected
        default: break
        }
    }

    private func didEnd(_ name: String) {
        let parent = path.dropLast().last
        defer { path.removeLast() }
        switch (parent, name) {
        case ("Meta", "RecycleBinUUID"): recycleBin = Data(base64Encoded: text)
        case ("Meta", "RecycleBinEnabled"): recycleBinEnabled = text.lowercased() == "true"
        case ("Group", "Name") where open.isEmpty && !groups.isEmpty: groups[groups.count - 1].name = text
        case ("Group", "UUID") where open.isEmpty && !groups.isEmpty: groups[groups.count - 1].uuid = decoded(text)
        case (_, "Group") where open.isEmpty: groups.removeLast()
        case ("Entry", "UUID") where !open.isEmpty: open[open.count - 1].uuid = decoded(text)
        case ("Times", "CreationTime") where !open.isEmpty: open[open.count - 1].created = Self.date(text)
        case ("Times", "LastModificationTime") where !open.isEmpty: open[open.count - 1].modified = Self.date(text)
        case ("String", "Key") where !open.isEmpty: stringKey = text
        case ("String", "Value"):
            if valueIsProtected {
                protectedValues.append(decoded(text))
                if !open.isEmpty {
                    open[open.count - 1].strings.append((stringKey, .protected(protectedValues.count - 1)))
                }
            } else if !open.isEmpty {
                open[open.count - 1].strings.append((stringKey, .clear(text)))
            }
            valueIsProtected = false
        case (_, "Entry") where !open.isEmpty: entries.append(open.removeLast())
        case (_, "KeePassFile") where !recycleBinEnabled: recycleBin = nil
        default: break
        }
        text = ""
    }

    /// Base64 text's bytes; malformed base64 is damage.
    private func decoded(_ text: String) -> Data {
        guard let data = Data(base64Encoded: text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            failure = failure ?? "a value is not base64"
            return Data()
        }
        return data
    }

    /// A KDBX 4 time (base64 of seconds since 0001-01-01, little-endian) or a KDBX 3.1 one (ISO 8601).
    static func date(_ text: String) -> Date? {
        if let data = Data(base64Encoded: text), data.count == 8 {
            let seconds = Int64(littleEndian: data)
            return Date(timeIntervalSince1970: TimeInterval(seconds) - 62_135_596_800)
        }
        return ISO8601DateFormatter().date(from: text)
    }
}
