import Foundation
import KeychainClient
import KeychainModel

/// How stores map onto keychain items.
///
/// Every item is a generic password in the store's access group:
///
/// | item | `svce` (service) | `acct` (account) | secret | other attributes |
/// | --- | --- | --- | --- | --- |
/// | marker, one per store | `KeychainStorage/stores` | the store name | the check value | `gena`: current generation; `icmt`: generation to clean up, or empty |
/// | value, one per key | `KeychainStorage/<name>/<generation>` | the key | the (encrypted) value | — |
///
/// The check value is the constant ``verifierPlaintext`` encrypted with the store's cipher
/// (stored as it is without a cipher): opening decrypts it to recognise the right cipher.
///
/// A generation is a random UUID. Values live under the marker's current generation;
/// `changeCipher` writes the re-encrypted values under a new generation, then switches the
/// marker to it — data and attributes in one atomic update — and only then removes the old
/// generation. Until the switch every old value is intact; after it every new one is.
/// The `icmt` attribute records a generation that an interrupted change left behind, so the
/// next change (or `removeStore`) removes it.
enum StoreLayout {
    static let markerService = "KeychainStorage/stores"
    static let verifierPlaintext = Data("keychain-linux KeychainStorage check v1".utf8)
    static let maximumNameLength = 200

    static func valueService(store: String, generation: String) -> String {
        "KeychainStorage/\(store)/\(generation)"
    }

    /// Checks that `name` is a name and not a path.
    ///
    /// Refused: the empty name, names longer than ``maximumNameLength`` UTF-8 bytes, `.`,
    /// names containing `/`, `\`, `..`, NUL or any other control character, and names
    /// containing U+FFFD (the mark of text that was not valid UTF-8 when it was decoded).
    static func validate(name: String) throws {
        func reject(_ reason: String) -> KeychainStorageError {
            KeychainStorageError(.invalidStoreName, "the store name \(reason)")
        }
        if name.isEmpty { throw reject("is empty") }
        if name.utf8.count > maximumNameLength { throw reject("is longer than \(maximumNameLength) bytes") }
        if name == "." || name.contains("..") { throw reject("contains a relative path component") }
        if name.contains("/") || name.contains("\\") { throw reject("contains a path separator") }
        for scalar in name.unicodeScalars {
            if scalar.value == 0 { throw reject("contains a NUL character") }
            if scalar.properties.generalCategory == .control { throw reject("contains a control character") }
            if scalar == "\u{FFFD}" { throw reject("is not valid UTF-8") }
        }
    }
}

/// The handle on one store's items in one keychain.
struct StoreLocation: Sendable {
    let database: any KeychainHandle
    let name: String
    let accessGroup: String

    /// Resolves `accessGroup` (nil: the handle's first writable group).
    init(database: any KeychainHandle, name: String, accessGroup: String?) throws {
        try StoreLayout.validate(name: name)
        guard
            let group = accessGroup
                ?? database.accessGroups.defaultGroup
        else {
            throw KeychainStorageError(
                .keychain, "the process has no access group",
                underlying: KeychainError(.missingEntitlement, "no access group"))
        }
        self.database = database
        self.name = name
        self.accessGroup = group
    }

    var markerQuery: ItemQuery {
        ItemQuery(
            class: .genericPassword,
            attributes: [
                .service: .string(StoreLayout.markerService), .account: .string(name),
                .accessGroup: .string(accessGroup),
            ])
    }

    func valueQuery(generation: String, key: String? = nil) -> ItemQuery {
        var attributes: Attributes = [
            .service: .string(StoreLayout.valueService(store: name, generation: generation)),
            .accessGroup: .string(accessGroup),
        ]
        if let key { attributes[.account] = .string(key) }
        return ItemQuery(class: .genericPassword, attributes: attributes)
    }

    struct Marker {
        var generation: String
        var cleanup: String
        var accessibility: Accessibility
        var verifier: Data?
    }

    func readMarker(includeData: Bool) throws -> Marker? {
        guard
            let item = try KeychainStorageError.keychain(
                "read the store",
                {
                    try database.findFirst(markerQuery, includeData: includeData)
                })
        else { return nil }
        return Marker(
            generation: Self.text(item.attributes[.generic]) ?? "",
            cleanup: Self.text(item.attributes[.comment]) ?? "",
            accessibility: item.accessibility ?? .whenUnlocked, verifier: item.data)
    }

    /// Removes every value of a generation; a generation without values is fine.
    func removeGeneration(_ generation: String) throws {
        guard !generation.isEmpty else { return }
        try KeychainStorageError.keychain("remove values") {
            do {
                _ = try database.delete(valueQuery(generation: generation))
            } catch let error as KeychainError where error.code == .itemNotFound {}
        }
    }

    static func text(_ value: AttributeValue?) -> String? {
        switch value {
        case .string(let string): string
        case .data(let data): String(validating: data, as: UTF8.self)
        default: nil
        }
    }
}

/// The default keychain shared by every module (``KeychainCore/Keychains/current()``).
enum DefaultDatabase {
    static func open() throws -> any KeychainHandle {
        try KeychainStorageError.keychain("open the default keychain") { try Keychains.current() }
    }
}
