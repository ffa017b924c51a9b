// How LARightStore keeps a right in the keychain: a record and a guarded item.

import Foundation
import Security

/// The readable half of a saved right: its requirement and its public key, as the record item's
/// data `01 ‖ requirement ‖ public key (65 bytes, X9.63)`.
struct PersistedRecord {
    let requirement: LAAuthenticationRequirement
    let publicKey: Data

    static let version: UInt8 = 1
    static let publicKeySize = 65

    var serialized: Data { Data([Self.version, requirement.kind.rawValue]) + publicKey }

    init(requirement: LAAuthenticationRequirement, publicKey: Data) {
        self.requirement = requirement
        self.publicKey = publicKey
    }

    /// The record `data` holds, or `nil` when it is not one (refused, never trusted).
    init?(serialized data: Data) {
        let bytes = [UInt8](data)
        guard bytes.count == 2 + Self.publicKeySize, bytes[0] == Self.version, bytes[2] == 0x04,
            let kind = LAAuthenticationRequirement.Kind(rawValue: bytes[1])
        else { return nil }
        let publicKey = Data(bytes[2...])
        let attributes: [CFString: Any] = [
            kSecAttrKeyType: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeyClass: kSecAttrKeyClassPublic,
        ]
        guard SecKeyCreateWithData(publicKey as CFData, attributes as CFDictionary, nil) != nil else { return nil }
        self.init(requirement: LAAuthenticationRequirement(kind), publicKey: publicKey)
    }

    /// The query of the record saved as `identifier`, or of every record.
    static func query(_ service: String, _ identifier: String?) -> [CFString: Any] {
        var query: [CFString: Any] = [kSecClass: kSecClassGenericPassword, kSecAttrService: service]
        if let identifier { query[kSecAttrAccount] = identifier }
        return query
    }

    /// The record saved as `identifier`.
    /// - Throws: `errSecItemNotFound` when there is none, `errSecDecode` when it is malformed.
    static func read(_ identifier: String) throws -> PersistedRecord {
        var query = Self.query(LARightStore.recordService, identifier)
        query[kSecReturnData] = true
        var result: CFTypeRef?
        try check(SecItemCopyMatching(query as CFDictionary, &result))
        guard let data = result as? Data, let record = PersistedRecord(serialized: data) else {
            throw osStatus(errSecDecode)
        }
        return record
    }

    /// Saves a right of `requirement` as `identifier` with a new key pair and `secret`: the
    /// guarded item first, then the record, so that a record always has its key (a save cut
    /// short leaves at most a guarded item without a record, which the next save replaces).
    /// - Throws: `errSecDuplicateItem` when a right is saved as `identifier` already.
    static func create(_ identifier: String, requirement: LAAuthenticationRequirement, secret: Data) throws
        -> PersistedRecord
    {
        if (try? read(identifier)) != nil { throw osStatus(errSecDuplicateItem) }
        var error: Unmanaged<CFError>?
        let parameters: [CFString: Any] = [
            kSecAttrKeyType: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeySizeInBits: 256,
        ]
        guard let privateKey = SecKeyCreateRandomKey(parameters as CFDictionary, &error),
            let publicKey = SecKeyCopyPublicKey(privateKey),
            let privateBytes = SecKeyCopyExternalRepresentation(privateKey, &error) as Data?,
            let publicBytes = SecKeyCopyExternalRepresentation(publicKey, &error) as Data?,
            let access = SecAccessControlCreateWithFlags(
                nil, kSecAttrAccessibleWhenUnlockedThisDeviceOnly,
                requirement.accessControlFlags, &error)
        else { throw LAPrivateKey.failure(error) }
        var guarded = query(LARightStore.guardedService, identifier)
        guarded[kSecAttrAccessControl] = access
        guarded[kSecValueData] = Data([GuardedItem.version]) + privateBytes + secret
        var status = SecItemAdd(guarded as CFDictionary, nil)
        if status == errSecDuplicateItem {
            // A save cut short before its record: its key was never given out.
            SecItemDelete(query(LARightStore.guardedService, identifier) as CFDictionary)
            status = SecItemAdd(guarded as CFDictionary, nil)
        }
        try check(status)
        let record = PersistedRecord(requirement: requirement, publicKey: publicBytes)
        var readable = query(LARightStore.recordService, identifier)
        readable[kSecAttrLabel] = "LARight \(identifier)"
        readable[kSecAttrAccessible] = kSecAttrAccessibleWhenUnlockedThisDeviceOnly
        readable[kSecValueData] = record.serialized
        let added = SecItemAdd(readable as CFDictionary, nil)
        guard added == errSecSuccess else {
            SecItemDelete(query(LARightStore.guardedService, identifier) as CFDictionary)
            throw osStatus(added)
        }
        return record
    }

    /// Removes the right saved as `identifier` (every right, for `nil`): its record, then its
    /// guarded item.
    /// - Throws: `errSecItemNotFound` when there is no right `identifier`.
    static func remove(_ identifier: String?) throws {
        let removed = SecItemDelete(query(LARightStore.recordService, identifier) as CFDictionary)
        let guarded = SecItemDelete(query(LARightStore.guardedService, identifier) as CFDictionary)
        for status in [removed, guarded] where status != errSecSuccess && status != errSecItemNotFound {
            throw osStatus(status)
        }
        if identifier != nil && removed == errSecItemNotFound { throw osStatus(errSecItemNotFound) }
    }
}

/// The guarded half of a saved right: its private key and secret, as the guarded item's data
/// `01 ‖ private key (97 bytes, X9.63 ‖ K) ‖ secret`, read only with the right's authorized
/// context.
final class GuardedItem: @unchecked Sendable {
    static let version: UInt8 = 1
    static let privateKeySize = 97

    let identifier: String
    /// The right the item belongs to (set once, as the right is made).
    weak var right: LAPersistedRight?

    init(identifier: String) { self.identifier = identifier }

    /// Reads the item with the right's authorized context.
    /// - Throws: ``LAError`` `.notInteractive` while the right is not authorized, or when the
    ///   item asks and nobody can be asked; `.userCancel` and `.authenticationFailed` as the
    ///   person answered; the keychain's error otherwise (`errSecItemNotFound` once the right is
    ///   removed or invalidated).
    func open() throws -> (privateKey: SecKey, secret: Data) {
        guard let context = right?.authorizedContext else {
            throw LAError(.notInteractive, "the right is not authorized: authorize it first")
        }
        var query = PersistedRecord.query(LARightStore.guardedService, identifier)
        query[kSecReturnData] = true
        query[kSecUseAuthenticationContext] = context
        var result: CFTypeRef?
        switch SecItemCopyMatching(query as CFDictionary, &result) {
        case errSecSuccess: break
        case errSecUserCanceled: throw LAError(.userCancel, "the person cancelled")
        case errSecAuthFailed: throw LAError(.authenticationFailed, "the person did not authenticate")
        case errSecInteractionNotAllowed: throw LAError(.notInteractive, "nobody can be asked for the right")
        case let status: throw osStatus(status)
        }
        let bytes = [UInt8](result as? Data ?? Data())
        guard bytes.count > Self.privateKeySize, bytes[0] == Self.version else { throw osStatus(errSecDecode) }
        let attributes: [CFString: Any] = [
            kSecAttrKeyType: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeyClass: kSecAttrKeyClassPrivate,
        ]
        var error: Unmanaged<CFError>?
        guard
            let key = SecKeyCreateWithData(
                Data(bytes[1...Self.privateKeySize]) as CFData, attributes as CFDictionary, &error)
        else { throw osStatus(errSecDecode) }
        return (key, Data(bytes[(Self.privateKeySize + 1)...]))
    }
}

/// Throws the keychain's `status` unless it is success.
private func check(_ status: OSStatus) throws {
    guard status == errSecSuccess else { throw osStatus(status) }
}

/// The keychain's `status` as an error (`NSOSStatusErrorDomain`).
private func osStatus(_ status: OSStatus) -> NSError {
    NSError(domain: NSOSStatusErrorDomain, code: Int(status))
}
