import Crypto
import Foundation
import KeychainModel

/// A Secure Enclave key that is an SSH key: a P-256 token key (`kSecAttrTokenIDSecureEnclave`)
/// whose application tag is ``SSHAgent/tokenKeyTag``, made with `security create-ssh-key` or
/// any `SecKeyCreateRandomKey` that gives that tag. It is an `ecdsa-sha2-nistp256` key to `ssh`;
/// the agent signs with it through the keychain that holds it, so its private key never reaches
/// the agent's code, and on a machine with a TPM it never leaves the TPM.
struct SSHTokenKey {
    /// The public key, X9.63 `04‖X‖Y`.
    let publicKey: Data
    /// Its comment: the key item's label.
    let comment: String
    /// The key item's persistent identity, which names it to its keychain.
    let identity: UUID
    /// The key item (its attributes, and its public key as data).
    let item: Item

    /// The public key blob (RFC 5656 §3.1).
    var blob: [UInt8] {
        var writer = SSHWriter()
        writer.string("ecdsa-sha2-nistp256")
        writer.string("nistp256")
        writer.string(Array(publicKey))
        return writer.bytes
    }

    /// `SHA256:…`, as `ssh-keygen -l` prints it.
    var fingerprint: String { SSHIdentity.fingerprint(ofBlob: blob) }

    /// The SSH token keys `keychain` holds for the caller, oldest first, from what a caller sees
    /// of them (each key's public key): no private key is read.
    static func all(in keychain: any KeychainHandle) throws -> [SSHTokenKey] {
        var query = ItemQuery(
            class: .key, attributes: ["atag": .data(SSHAgent.tokenKeyTag)], synchronizable: .any)
        query.authenticationUI = .fail
        let items = try keychain.find(query, includeData: true).sorted {
            ($0.attributes[.creationDate]?.dateValue ?? .distantPast)
                < ($1.attributes[.creationDate]?.dateValue ?? .distantPast)
        }
        return items.compactMap { item in
            guard case .string(let token)? = item.attributes["tkid"], !token.isEmpty, let identity = item.persistentID,
                let publicKey = item.data, (try? P256.Signing.PublicKey(x963Representation: publicKey)) != nil
            else { return nil }
            return SSHTokenKey(
                publicKey: publicKey, comment: item.attributes[.label]?.stringValue ?? "", identity: identity,
                item: item)
        }
    }

    /// The signature blob over `data`: ECDSA over its SHA-256, made where the key is.
    /// - Throws: ``SSHAgentError`` when the keychain cannot use token keys; the keychain's errors.
    func signature(for data: [UInt8], in keychain: any KeychainHandle) throws -> [UInt8] {
        guard let holder = keychain as? any TokenKeyHolder else {
            throw SSHAgentError.unsupported("this keychain cannot use Secure Enclave keys")
        }
        let digest = Data(SHA256.hash(data: data))
        let raw = try holder.useTokenKey(storedTokenKeyHandle(identity), TokenKeyRequest(.sign, input: digest))
        guard raw.count == 64 else { throw SSHAgentError.malformed("the key returned a malformed signature") }
        var signature = SSHWriter()
        signature.positiveInteger(raw.prefix(32))
        signature.positiveInteger(raw.dropFirst(32))
        var writer = SSHWriter()
        writer.string("ecdsa-sha2-nistp256")
        writer.string(signature.bytes)
        return writer.bytes
    }
}
