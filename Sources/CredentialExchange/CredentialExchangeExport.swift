import Crypto
import Foundation
import KeePassFormat
import KeychainModel

/// A keychain's passwords in the FIDO Alliance's Credential Exchange Format (CXF 1.0,
/// <https://fidoalliance.org/specs/cx/cxf-v1.0-ps-20250814.html>), the JSON that password
/// managers (Apple's Passwords, Android's Credential Manager, Bitwarden, 1Password, Dashlane)
/// exchange credentials in: `security export-keyring --format cxf -o -` writes it into another
/// program's standard input, for leaving (docs/moving-in.md).
///
/// Each item is what ``KeePassFormat/KeePassExport/Entry`` makes of it (one mapping of a
/// keychain item to a portable password, for both exports): an `Item` with its title, dates and
/// id, a `basic-auth` credential (user name, and the password as a `concealed-string`), the
/// URL of an internet password as its scope, its comment as a `note` credential, and the
/// attributes Secret Service programs find it by as a `custom-fields` credential. One account,
/// the user's, holds them, in one collection named after the keychain.
public enum CredentialExchangeExport {
    /// The format's version: 1.0.
    public static let version = (major: 1, minor: 0)
    /// Who exported it, as CXF names the exporter: a relying party identifier, and a name to show.
    public static let exporter = (relyingParty: "keychain-linux.invalid", displayName: "Keychain for Linux")

    /// The CXF header (a JSON object, its keys sorted) holding `entries` for the account of
    /// `userName`, in one collection named `collection`, exported at `date`.
    /// - Throws: What `JSONSerialization` throws (nothing for these values).
    public static func document(
        _ entries: [KeePassExport.Entry], userName: String, collection: String, date: Date = Date()
    ) throws -> Data {
        let items = entries.map(item)
        let account: [String: Any] = [
            "id": identifier("account:\(userName)").base64URLEncoded,
            "username": userName,
            "email": "",
            "collections": [
                [
                    "id": identifier("collection:\(collection)").base64URLEncoded,
                    "title": collection,
                    "items": entries.map { ["item": uuidBytes($0.uuid).base64URLEncoded] },
                ]
            ],
            "items": items,
        ]
        let header: [String: Any] = [
            "version": ["major": version.major, "minor": version.minor],
            "exporterRpId": exporter.relyingParty,
            "exporterDisplayName": exporter.displayName,
            "timestamp": Int(date.timeIntervalSince1970),
            "accounts": [account],
        ]
        return try JSONSerialization.data(withJSONObject: header, options: [.sortedKeys, .withoutEscapingSlashes])
    }

    /// One entry as a CXF `Item`.
    static func item(_ entry: KeePassExport.Entry) -> [String: Any] {
        var credentials: [[String: Any]] = [
            [
                "type": "basic-auth",
                "username": field("string", entry.userName),
                "password": field("concealed-string", entry.password),
            ]
        ]
        if !entry.notes.isEmpty {
            credentials.append(["type": "note", "content": field("string", entry.notes)])
        }
        if !entry.fields.isEmpty {
            credentials.append([
                "type": "custom-fields", "label": "Attributes",
                "fields": entry.fields.sorted { $0.key < $1.key }.map { field("string", $0.value, label: $0.key) },
            ])
        }
        var item: [String: Any] = [
            "id": uuidBytes(entry.uuid).base64URLEncoded, "title": entry.title, "credentials": credentials,
        ]
        if let created = entry.created { item["creationAt"] = Int(created.timeIntervalSince1970) }
        if let modified = entry.modified { item["modifiedAt"] = Int(modified.timeIntervalSince1970) }
        if !entry.url.isEmpty { item["scope"] = ["urls": [entry.url], "androidApps": [[String: Any]]()] }
        return item
    }

    /// An `EditableField` of `type` holding `value`.
    static func field(_ type: String, _ value: String, label: String? = nil) -> [String: Any] {
        var field: [String: Any] = ["fieldType": type, "value": value]
        if let label { field["label"] = label }
        return field
    }

    /// A stable id for `name` (the same each export): the first 16 bytes of its SHA-256.
    static func identifier(_ name: String) -> Data {
        Data(SHA256.hash(data: Data(name.utf8)).prefix(16))
    }

    static func uuidBytes(_ uuid: UUID) -> Data {
        withUnsafeBytes(of: uuid.uuid) { Data($0) }
    }
}
