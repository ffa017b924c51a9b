import Foundation
import Security

// The calls two widely used keychain libraries make for an item whose access control asks for
// user presence, written here from reading their sources (nothing of theirs is copied), so that
// their access-control paths are exercised against ours:
//
// - auth0/SimpleKeychain (`SimpleKeychain/SimpleKeychain.swift`): `SimpleKeychain(service:,
//   accessControlFlags: .userPresence)`. `set` adds with `kSecAttrAccessControl` (made with
//   `kCFAllocatorDefault`, the accessibility, the flags and no error pointer) and, on
//   `errSecDuplicateItem`, updates `kSecValueData` alone; `hasItem` matches with no return key
//   (`errSecItemNotFound` is false, any other failure is thrown); `data(forKey:)` returns data,
//   limit one; `keys()` returns attributes, limit all; `deleteItem` deletes.
// - kishikawakatsumi/KeychainAccess (`Lib/KeychainAccess/Keychain.swift`): `Keychain(service:)
//   .accessibility(.whenUnlocked, authenticationPolicy: .userPresence).authenticationPrompt(…)`
//   (`.whenPasscodeSetThisDeviceOnly`, its README's example, adds nothing to a keychain without a
//   password: errSecAuthFailed, as on an iOS device without a passcode). Every query has `kSecAttrSynchronizableAny` and
//   `kSecUseOperationPrompt`; `set` first looks for the item with `kSecUseAuthenticationUIFail`
//   and no return key, then updates (on success or `errSecInteractionNotAllowed`, sending the
//   access control again) or adds; `get` returns data, limit one; `contains(_:
//   withoutAuthenticationUI: true)` is true on success and on `errSecInteractionNotAllowed`;
//   `remove` deletes, `errSecItemNotFound` being no error.
//
//   keychain-la-worker simplekeychain set KEY FILE | has KEY | get KEY | keys | delete KEY
//   keychain-la-worker keychainaccess set KEY FILE | contains KEY | get KEY | remove KEY
// Each prints what the library would return ("ok", "true", "data TEXT", "keys A,B", "updated",
// "added", "removed", "deleted") or "error OSSTATUS".

/// SimpleKeychain's calls, as its methods make them.
func simpleKeychain(_ values: [String]) {
    let flags = SecAccessControlCreateFlags.userPresence
    func base(_ key: String? = nil, _ data: Data? = nil) -> [CFString: Any] {
        var query: [CFString: Any] = [kSecClass: kSecClassGenericPassword, kSecAttrService: "simple-keychain"]
        if let key { query[kSecAttrAccount] = key }
        if let data { query[kSecValueData] = data }
        return query
    }
    let key = values.count > 1 ? values[1] : nil
    switch values.first {
    case "set":
        guard let key, values.count > 2, let data = FileManager.default.contents(atPath: values[2]) else { exit(2) }
        var query = base(key, data)
        if let access = SecAccessControlCreateWithFlags(
            kCFAllocatorDefault, kSecAttrAccessibleAfterFirstUnlock, flags, nil)
        {
            query[kSecAttrAccessControl] = access
        } else {
            query[kSecAttrAccessible] = kSecAttrAccessibleAfterFirstUnlock
        }
        var status = SecItemAdd(query as CFDictionary, nil)
        if status == errSecDuplicateItem {
            status = SecItemUpdate(base(key) as CFDictionary, [kSecValueData: data] as CFDictionary)
        }
        print(status == errSecSuccess ? "ok" : "error \(status)")
    case "has":
        let status = SecItemCopyMatching(base(key) as CFDictionary, nil)
        print(status == errSecSuccess ? "true" : status == errSecItemNotFound ? "false" : "error \(status)")
    case "get":
        var query = base(key)
        query[kSecReturnData] = true
        query[kSecMatchLimit] = kSecMatchLimitOne
        printData(query, notFound: "error \(errSecItemNotFound)")
    case "keys":
        var query = base()
        query[kSecReturnAttributes] = true
        query[kSecMatchLimit] = kSecMatchLimitAll
        var result: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &result)
        if status == errSecItemNotFound {
            print("keys")
        } else if status == errSecSuccess, let items = result as? [[String: Any]] {
            print(
                "keys " + items.compactMap { $0[kSecAttrAccount as String] as? String }.sorted().joined(separator: ","))
        } else {
            print("error \(status)")
        }
    case "delete":
        let status = SecItemDelete(base(key) as CFDictionary)
        print(status == errSecSuccess ? "deleted" : "error \(status)")
    default:
        exit(2)
    }
}

/// KeychainAccess's calls, as its methods make them.
func keychainAccess(_ values: [String]) {
    func query(_ key: String) -> [CFString: Any] {
        [
            kSecClass: kSecClassGenericPassword, kSecAttrSynchronizable: kSecAttrSynchronizableAny,
            kSecAttrService: "keychain-access", kSecUseOperationPrompt: "Authenticate to use the vault",
            kSecAttrAccount: key,
        ]
    }
    func attributes(_ key: String?, _ data: Data) -> [CFString: Any]? {
        var attributes = key.map(query) ?? [:]
        attributes[kSecValueData] = data
        var error: Unmanaged<CFError>?
        guard
            let access = SecAccessControlCreateWithFlags(
                kCFAllocatorDefault, kSecAttrAccessibleWhenUnlocked as CFTypeRef,
                SecAccessControlCreateFlags(rawValue: CFOptionFlags(SecAccessControlCreateFlags.userPresence.rawValue)),
                &error)
        else { return nil }
        attributes[kSecAttrAccessControl] = access
        attributes[kSecAttrSynchronizable] = kCFBooleanFalse
        return attributes
    }
    guard values.count > 1 else { exit(2) }
    let key = values[1]
    switch values[0] {
    case "set":
        guard values.count > 2, let data = FileManager.default.contents(atPath: values[2]) else { exit(2) }
        var existing = query(key)
        existing[kSecUseAuthenticationUI] = kSecUseAuthenticationUIFail
        let found = SecItemCopyMatching(existing as CFDictionary, nil)
        if found == errSecSuccess || found == errSecInteractionNotAllowed {
            guard let changes = attributes(nil, data) else { exit(2) }
            let status = SecItemUpdate(query(key) as CFDictionary, changes as CFDictionary)
            print(status == errSecSuccess ? "updated" : "error \(status)")
        } else if found == errSecItemNotFound {
            guard let item = attributes(key, data) else { exit(2) }
            let status = SecItemAdd(item as CFDictionary, nil)
            print(status == errSecSuccess ? "added" : "error \(status)")
        } else {
            print("error \(found)")
        }
    case "contains":
        var lookup = query(key)
        lookup[kSecUseAuthenticationUI] = kSecUseAuthenticationUIFail
        let status = SecItemCopyMatching(lookup as CFDictionary, nil)
        switch status {
        case errSecSuccess, errSecInteractionNotAllowed: print("true")
        case errSecItemNotFound: print("false")
        default: print("error \(status)")
        }
    case "get":
        var lookup = query(key)
        lookup[kSecMatchLimit] = kSecMatchLimitOne
        lookup[kSecReturnData] = kCFBooleanTrue
        printData(lookup, notFound: "nil")
    case "remove":
        let status = SecItemDelete(query(key) as CFDictionary)
        print(status == errSecSuccess || status == errSecItemNotFound ? "removed" : "error \(status)")
    default:
        exit(2)
    }
}

/// Reads the data `query` finds and prints it ("data TEXT"), `notFound` when nothing matches, or
/// "error OSSTATUS".
func printData(_ query: [CFString: Any], notFound: String) {
    var result: CFTypeRef?
    let status = SecItemCopyMatching(query as CFDictionary, &result)
    if status == errSecSuccess, let data = result as? Data {
        print("data \(String(decoding: data, as: UTF8.self))")
    } else {
        print(status == errSecItemNotFound ? notFound : "error \(status)")
    }
}
