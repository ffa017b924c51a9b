// Keys as keychain items (spec §3.3, design §3): a `SecKey` passed under `kSecValueRef` becomes its
// attributes (caller keys winning) and its external representation as the item's data; `kSecReturnRef`
// rebuilds the key from the stored bytes, `kcls` and `type` (Apple's `SecKeyCreateFromAttributeDictionary`).
//
// Linux decisions:
// - In a search, update or delete a `SecKey` under `kSecValueRef` matches the items with the same key
//   class, application label and key type (a key stored with a caller-chosen `klbl` is found by its
//   other attributes instead).
// - The legacy SecKeyGeneratePair stores keys like SecKeyCreateRandomKey.
// - A token key item's reference is a token `SecKey` of the keychain it was found in; SecItemAdd of a
//   token key reference has the keychain store it (SecKeyToken.swift).

import Foundation
import KeychainCore

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
/// keychain when `nil`).
func keyReference(_ item: Item, source: (any KeychainHandle)? = nil) -> SecKey? {
    if case .string(let token)? = item.attributes[AttributeName(rawValue: "tkid")], !token.isEmpty {
        return token == TokenKeys.secureEnclave ? storedTokenKey(item, source: source) : nil
    }
    guard item.itemClass == .key, let data = item.data,
        case .number(let keyClass) = item.attributes[AttributeName(rawValue: "kcls")],
        case .number(let type) = item.attributes[AttributeName(rawValue: "type")]
    else { return nil }
    let attributes: NSDictionary = ["type": NSNumber(value: type), "kcls": NSNumber(value: keyClass)]
    return SecKeyCreateWithData(NSData(data: data), attributes, nil)
}
