import Crypto
import Foundation
import GRDB

/// A password keychain's recovery key: 128 random bits that open it as its password does, with
/// no key derivation and no TPM, for when the password is lost to an administrator's reset or
/// the TPM it is sealed to was cleared or replaced (docs/login.md).
///
/// It is shown once, as every recovery key of this project is (``KeychainModel/RecoveryKeyText``),
/// and it is accepted wherever the keychain's password is: text of a recovery key's form that
/// does not open the keychain is then tried as its password.
extension KeychainDatabase {
    /// Makes a new recovery key for this keychain, replacing any earlier one, and returns its
    /// text: show it to the user once; it is stored nowhere in the clear.
    ///
    /// The keys it opens are those in memory now, so the keychain must be unlocked. A password
    /// change keeps it; ``rotateKeys(password:newPassword:)-(Data?,Data?)`` replaces every key
    /// and so voids it.
    /// - Throws: `.parameter` for a keychain without a password; `.interactionNotAllowed` when
    ///   locked; `.authFailed` when this machine's device key does not open the keychain's
    ///   this-device-only keys.
    public func makeRecoveryKey() throws -> String {
        guard hasPassword else {
            throw KeychainError(.parameter, "a keychain without a password has nothing to recover")
        }
        let held: [KeyName: SymmetricKey] = keys.read { state in
            guard state.isUnlocked else { return [:] }
            var held: [KeyName: SymmetricKey] = [:]
            held[.index] = state.indexKey
            for (protection, key) in state.classKeys { held[.protection(protection)] = key }
            return held
        }
        guard !held.isEmpty else { throw KeychainError(.interactionNotAllowed, "unlock the keychain first") }
        guard held.count == KeyName.all.count else { throw Self.deviceKeysMissing }
        let recovery = RecoveryKey()
        let wrapping = WrappingKeys(deviceKey: deviceKey, recoveryKey: recovery.key, keychainID: keychainID)
        let current = header.withLock { $0 }
        try Self.run {
            try writer.write { db in
                try db.execute(
                    sql: "DELETE FROM meta WHERE name LIKE 'wrap.%.recovery' OR name LIKE 'wrap.%.recovery+device'")
                for (name, key) in held {
                    for wrapper in Wrapper.recoveryWrappers(for: name) {
                        guard let wrappingKey = wrapping[wrapper] else { continue }
                        let context = Self.wrapContext(
                            keychainID: keychainID, header: current, name: name, wrapper: wrapper)
                        try Storage.setMeta(
                            db, "wrap.\(name.rawValue).\(wrapper.rawValue)",
                            try Sealing.seal(key.bytes, key: wrappingKey, context: context))
                    }
                }
                // The device key too, so that the recovery key brings back this machine's keys
                // when the TPM that sealed the device key file was cleared or replaced.
                try Storage.setMeta(
                    db, Self.escrowedDeviceKey,
                    try Sealing.seal(deviceKey.bytes, key: escrowKey(recovery), context: escrowContext))
            }
        }
        return recovery.text
    }

    /// Where the device key is kept under the recovery key: a `wrap.…recovery` name, so that it
    /// lives and dies with the recovery key's wrappings (kept by a password change, removed by a
    /// new recovery key or a key rotation).
    static let escrowedDeviceKey = "wrap.devicekey.recovery"

    private func escrowKey(_ recovery: RecoveryKey) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(
            inputKeyMaterial: recovery.key, salt: keychainID,
            info: Data("keychain-linux wrap devicekey recovery v1".utf8), outputByteCount: 32)
    }

    private var escrowContext: Data { keychainID + Data("devicekey.recovery".utf8) }

    /// The keys that `text` opens when it is this keychain's recovery key; `nil` when it is not
    /// a recovery key's text or not this keychain's (a password, then).
    func unwrapWithRecoveryKey(_ text: Data, meta: [String: Data], header: Header) throws -> [KeyName: SymmetricKey]? {
        guard header.kdf != nil, let recovery = RecoveryKey(text: text) else { return nil }
        let keys = try unwrapAll(
            meta: meta, header: header,
            wrapping: WrappingKeys(deviceKey: deviceKey, recoveryKey: recovery.key, keychainID: keychainID))
        guard keys[.protection(.whenUnlocked)] != nil, keys[.protection(.afterFirstUnlock)] != nil else { return nil }
        // This process cannot read the device key (its file is sealed to a TPM that was cleared
        // or replaced, or gone): the one the recovery key kept opens the rest, and is put back.
        guard keys.count < KeyName.all.count, deviceKeyIsStandIn, let escrowed = meta[Self.escrowedDeviceKey],
            let bytes = try? Sealing.open(escrowed, key: escrowKey(recovery), context: escrowContext), bytes.count == 32
        else { return keys }
        let recovered = SymmetricKey(data: bytes)
        let all = try unwrapAll(
            meta: meta, header: header,
            wrapping: WrappingKeys(deviceKey: recovered, recoveryKey: recovery.key, keychainID: keychainID))
        guard all.count == KeyName.all.count else { return keys }
        restoreDeviceKey(recovered)
        return all
    }
}

/// A login keychain's recovery key: 128 random bits.
struct RecoveryKey {
    /// The 16 random bytes.
    let bytes: Data

    /// The wrapping key material (the bytes themselves: 128 random bits need no stretching).
    var key: SymmetricKey { SymmetricKey(data: bytes) }

    /// A new random key.
    init() { bytes = Sealing.randomBytes(16) }

    /// The text shown once (``KeychainModel/RecoveryKeyText``).
    var text: String { RecoveryKeyText.display(bytes) }

    /// The key in text as typed; `nil` when the text is not a recovery key's form.
    init?(text: Data) {
        guard text.count <= 64, let bytes = try? RecoveryKeyText.bytes(parsingUTF8: text) else { return nil }
        self.bytes = bytes
    }
}

extension KeychainDatabase: KeychainRecovery {}

extension CallerKeychain: KeychainRecovery {
    func makeRecoveryKey() throws -> String { try database.makeRecoveryKey() }
}
