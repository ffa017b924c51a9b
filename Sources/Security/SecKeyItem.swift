// Keys as keychain items (Apple's `keychain/securityd/SecItemSchema.c`): a `SecKey` passed under
// `kSecValueRef` becomes its attributes (caller keys winning) and its external representation as the
// item's data; `kSecReturnRef` rebuilds the key from the stored bytes, `kcls` and `type` (Apple's
// `SecKeyCreateFromAttributeDictionary`).
//
// Linux decisions:
// - In a search, update or delete a `SecKey` under `kSecValueRef` matches the items with the same key
//   class, application label and key type (a key stored with a caller-chosen `klbl` is found by its
//   other attributes instead).
// - The legacy SecKeyGeneratePair stores keys like SecKeyCreateRandomKey.
// - An EC private key item's reference reads its scalar on first use (DeferredECPrivateKey).
// - A token key item's reference is a token `SecKey` of the keychain it was found in; SecItemAdd of a
//   token key reference has the keychain store it (SecKeyToken.swift).

internal import Crypto
internal import _SecurityFoundation
internal import KeychainModel

/// What a dictionary becomes once a `SecKey` under `kSecValueRef` is replaced by the key's attributes.
///
/// - Parameters:
///   - dictionary: A SecItem dictionary.
///   - adding: `true` for SecItemAdd (the key's full attribute set and bytes), `false` for a search,
///     update or delete (the attributes that identify the key).
/// - Returns: The dictionary itself when it holds no key reference.
/// - Throws: errSecParam when a key reference comes with a class other than `kSecClassKey`.
func expandingKeyReference(_ dictionary: CFDictionary, adding: Bool) throws -> CFDictionary {
    guard let key = dictionary.object(forKey: "v_Ref" as NSString) as? SecKey else { return dictionary }
    let entries = try QueryParser.entries(dictionary)
    if let itemClass = entries["class"], queryString(itemClass) != "keys" {
        throw SecError(errSecParam)
    }
    // A token key is added by addTokenKeyReference, where it was made; never as bytes.
    if adding, case .token = key.backing { throw SecError(errSecUnimplemented) }
    var merged: [String: Any] = [:]
    let identifying: Set<String> = ["class", "kcls", "klbl", "type"]
    for (name, value) in keyAttributes(key) where adding || identifying.contains(name) {
        merged[name] = value
    }
    for (name, value) in entries where name != "v_Ref" {
        merged[name] = value
    }
    return NSDictionary(dictionary: merged)
}

/// The `SecKey` of a stored key item: its data read with its `kcls` and `type`, or `nil`; for a
/// token key, a reference to the key in `source` (the keychain it was found in; the default
/// keychain when `nil`), used with `context`'s proof (the query's `kSecUseAuthenticationContext`).
func keyReference(_ item: Item, source: (any KeychainHandle)? = nil, context: (any OwnerProofSource)? = nil)
    -> SecKey?
{
    if case .string(let token)? = item.attributes[AttributeName(rawValue: "tkid")], !token.isEmpty {
        return token == TokenKeys.secureEnclave ? storedTokenKey(item, source: source, context: context) : nil
    }
    guard item.itemClass == .key, let data = item.data,
        case .number(let keyClass) = item.attributes[AttributeName(rawValue: "kcls")],
        case .number(let type) = item.attributes[AttributeName(rawValue: "type")]
    else { return nil }
    if keyClass == 1, type == 73 || type == 43, let deferred = DeferredECPrivateKey(data) {
        return SecKey(.ecPrivate(deferred))
    }
    let attributes: NSDictionary = ["type": NSNumber(value: type), "kcls": NSNumber(value: keyClass)]
    return SecKeyCreateWithData(NSData(data: data), attributes, nil)
}

/// An EC private key read from a key item, `04‖X‖Y‖K`: its public point is checked at once, its
/// scalar read on the key's first private-key operation (a P-256 import costs about as much as a
/// signature, which a lookup that only wants the reference, or only its public key, need not pay).
/// A scalar that does not read fails that operation with errSecParam.
final class DeferredECPrivateKey: ECPrivateKeyBacking, @unchecked Sendable {
    let curve: ECCurve
    /// `04‖X‖Y‖K`.
    let x963: Data
    let publicBacking: any ECPublicKeyBacking
    private let lock = NSLock()
    private var parsed: (any ECPrivateKeyBacking)?

    /// The key of X9.63 private bytes whose public point is valid; `nil` otherwise.
    init?(_ data: Data) {
        guard let curve = ECCurve.allCases.first(where: { $0.privateLength == data.count }), data.first == 4,
            case .ecPublic(let publicKey)? = (try? importECPublic(Data(data.prefix(curve.publicLength))))?.backing
        else { return nil }
        self.curve = curve
        x963 = data
        publicBacking = publicKey
    }

    var publicX963: Data { Data(x963.prefix(curve.publicLength)) }

    /// The parsed key, read once.
    private func key() throws -> any ECPrivateKeyBacking {
        try lock.withLock {
            if let parsed { return parsed }
            let key: any ECPrivateKeyBacking
            do {
                switch curve {
                case .p256: key = try P256.Signing.PrivateKey(x963Representation: x963)
                case .p384: key = try P384.Signing.PrivateKey(x963Representation: x963)
                case .p521: key = try P521.Signing.PrivateKey(x963Representation: x963)
                }
            } catch {
                throw KeyFailure(errSecParam, "EC private key creation from data failed")
            }
            parsed = key
            return key
        }
    }

    func ecdsaSignature(digest: Data, format: ECDSAFormat) throws -> Data {
        try key().ecdsaSignature(digest: digest, format: format)
    }

    func sharedSecret(peerX963: Data) throws -> SharedSecret {
        try key().sharedSecret(peerX963: peerX963)
    }
}
