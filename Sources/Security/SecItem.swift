// SecItemAdd, SecItemCopyMatching, SecItemUpdate and SecItemDelete on KeychainCore, as Apple's
// securityd has them (`keychain/securityd/SecItemServer.c`, `SecItemDb.c`, `SecDbQuery.c`).
//
// Linux decisions (docs/libraries.md, "Security"):
// - The keys macOS strips before its data-protection path are stripped on every platform (Apple's
//   `OSX/libsecurity_keychain/lib/SecItem.cpp`).
// - Update is all-or-nothing: one transaction, rolled back on any failure.
// - Host matching filters before the limit is applied.
// - Items whose access control carries authentication flags (biometry, passcode, …) cannot be
//   authenticated without a UI: every read that matches one fails with
//   errSecInteractionNotAllowed, and kSecUseAuthenticationUISkip skips them.
//   kSecUseAuthenticationContext gives the application password of `.applicationPassword`
//   items (SecApplicationPassword.swift); its other uses are not made yet.
// - SecKey references are built for keys (SecKeyItem.swift), SecCertificate and SecIdentity references
//   for certificates and identities (SecCertificateItem.swift); a kSecValueRef of any other kind is
//   errSecParam.

internal import Crypto
public import _SecurityFoundation
internal import KeychainModel

/// Adds one item to a keychain.
///
/// ```swift
/// let status = SecItemAdd([
///     kSecClass: kSecClassGenericPassword,
///     kSecAttrService: "api.example.com",
///     kSecAttrAccount: "alice",
///     kSecValueData: Data("s3cret".utf8),
/// ] as CFDictionary, nil)
/// ```
/// - Parameters:
///   - attributes: The item's class, attributes and data, plus optional return keys.
///   - result: Receives what the return keys ask for; may be `nil`.
/// - Returns: `errSecSuccess`, `errSecDuplicateItem`, `errSecParam`, `errSecNoSuchAttr`,
///   `errSecInteractionNotAllowed` (locked), `errSecMissingEntitlement`, …
@discardableResult
public func SecItemAdd(_ attributes: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus {
    result?.pointee = nil
    if let identity = identityReference(attributes) { return addIdentity(identity, attributes, result) }
    return status {
        if try addTokenKeyReference(attributes, result) { return }
        let attributes = try expandingReference(attributes, adding: true)
        let query = try QueryParser(operation: .add).parse(attributes)
        guard let itemClass = query.itemClass else { throw SecError(errSecParam) }
        if query.hasValueRef { throw SecError(errSecParam) }
        if let reference = query.persistentRef, reference.identity == nil { throw SecError(errSecParam) }
        if query.accessControl != nil, isCFTrue(attributes, "sync") { throw SecError(errSecParam) }
        let database = try targetDatabase(query)
        guard database.accessGroups.groups.contains(where: { $0 != "com.apple.token" }) else {
            throw SecError(errSecMissingEntitlement)
        }
        var item = Item(
            class: itemClass, attributes: query.attributes,
            data: try ApplicationPasswordSeal.storedData(query.valueData, for: query))
        item = try database.add(item)
        item.data = query.valueData
        guard query.returnsAnything, let result else { return }
        result.pointee = addResult(item, query)
    }
}

/// Finds items and returns what the return keys ask for
/// ([Apple's documentation](https://developer.apple.com/documentation/security/secitemcopymatching(_:_:))).
///
/// ```swift
/// var result: CFTypeRef?
/// let status = SecItemCopyMatching([
///     kSecClass: kSecClassGenericPassword,
///     kSecAttrAccount: "alice",
///     kSecReturnData: true,
/// ] as CFDictionary, &result)
/// let secret = result as? Data
/// ```
/// - Parameters:
///   - query: The class, attributes to match, `kSecMatchLimit` and return keys.
///   - result: Receives one object (limit one) or an array; left untouched on failure.
/// - Returns: `errSecSuccess`, `errSecItemNotFound`, `errSecInteractionNotAllowed`, …
@discardableResult
public func SecItemCopyMatching(_ query: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus {
    status {
        let parsed = try parsedSearch(query, for: .copyMatching)
        guard parsed.itemClass != nil else { throw SecError(errSecParam) }
        if let reference = parsed.persistentRef, reference.identity != nil,
            !parsed.attributes.isEmpty || parsed.synchronizableAny
        {
            throw SecError(errSecParam)
        }
        if parsed.hasValueRef { throw SecError(errSecParam) }
        let items = try matchingItems(parsed)
        guard !items.isEmpty else { throw SecError(errSecItemNotFound) }
        let objects = items.compactMap { copyResult($0.item, $0.source, parsed) }
        let value: CFTypeRef? = parsed.limitIsOne ? objects.first : makeResultArray(objects)
        if let result, let value { result.pointee = value }
    }
}

/// Changes every item that matches a query, all or nothing
/// ([Apple's documentation](https://developer.apple.com/documentation/security/secitemupdate(_:_:))).
///
/// ```swift
/// SecItemUpdate([kSecClass: kSecClassGenericPassword, kSecAttrAccount: "alice"] as CFDictionary,
///               [kSecValueData: Data("new".utf8)] as CFDictionary)
/// ```
/// - Parameters:
///   - query: Which items to change.
///   - attributesToUpdate: New attribute values and, under `kSecValueData`, a new secret.
/// - Returns: `errSecSuccess`, `errSecItemNotFound`, `errSecDuplicateItem`, `errSecNoSuchAttr`, …
@discardableResult
public func SecItemUpdate(_ query: CFDictionary, _ attributesToUpdate: CFDictionary) -> OSStatus {
    status {
        let parsed = try parsedSearch(query, for: .update)
        guard let itemClass = parsed.itemClass else { throw SecError(errSecParam) }
        if parsed.hasValueRef { throw SecError(errSecParam) }
        let (changes, data) = try parseChanges(attributesToUpdate, itemClass: itemClass)
        let database = try targetDatabase(parsed)
        guard let itemQuery = itemQuery(parsed, unlimited: true) else { throw SecError(errSecItemNotFound) }
        let stored = try ApplicationPasswordSeal.updatedData(
            data, changes: changes, of: itemQuery, in: database, query: parsed)
        // The engine reports errSecItemNotFound itself when nothing matched.
        _ = try database.update(itemQuery, attributes: changes, data: stored)
    }
}

/// Deletes every item that matches a query
/// ([Apple's documentation](https://developer.apple.com/documentation/security/secitemdelete(_:))).
///
/// ```swift
/// SecItemDelete([kSecClass: kSecClassGenericPassword, kSecAttrAccount: "alice"] as CFDictionary)
/// ```
/// - Parameter query: Which items to delete; `[kSecClass: …]` alone deletes the whole class.
/// - Returns: `errSecSuccess`, `errSecItemNotFound`, `errSecInteractionNotAllowed`, …
@discardableResult
public func SecItemDelete(_ query: CFDictionary) -> OSStatus {
    if let identity = identityReference(query) { return deleteIdentity(identity, query) }
    return status {
        let parsed = try parsedSearch(query, for: .delete)
        guard parsed.itemClass != nil else { throw SecError(errSecParam) }
        if parsed.hasValueRef { throw SecError(errSecParam) }
        let database = try targetDatabase(parsed)
        guard let itemQuery = itemQuery(parsed, unlimited: true) else { throw SecError(errSecItemNotFound) }
        _ = try database.delete(itemQuery)
    }
}

// MARK: - Internals

/// A search, update or delete query parsed for `operation`, with a `kSecValueRef` (a key, a
/// certificate, an identity) or an issuer replaced by the attributes it stands for.
///
/// Most queries hold neither: they are read into Swift once and parsed from there, since every
/// look-up in the caller's `NSDictionary` (its keys are bridged objects) costs about a
/// microsecond and a half, and the reference checks made four of them before the parse read the
/// dictionary again. A dictionary that holds either, or whose keys or values cannot be read
/// (`errSecParam`, `errSecNoSuchAttr`), takes the full way, so that its errors are the same, in
/// the same order.
private func parsedSearch(_ query: CFDictionary, for operation: SecOperation) throws -> ParsedQuery {
    if let entries = try? QueryParser.entries(query), entries["v_Ref"] == nil, entries["issr"] == nil {
        return try QueryParser(operation: operation).parse(entries: entries)
    }
    let query = try identityReference(query).map { try identityQuery($0, query) } ?? query
    return try QueryParser(operation: operation).parse(expandingReference(query, adding: false))
}

private func isPassword(_ itemClass: ItemClass) -> Bool {
    itemClass == .genericPassword || itemClass == .internetPassword
}

/// Whether the dictionary holds exactly `kCFBooleanTrue` under `key`.
private func isCFTrue(_ dictionary: CFDictionary, _ key: String) -> Bool {
    guard let value = dictionary.object(forKey: NSString(string: key)) else { return false }
    return cfBooleanValue(value) == true
}

private func targetDatabase(_ query: ParsedQuery) throws -> any KeychainHandle {
    try database(for: query.keychains?.first)
}

/// The engine query for a parsed dictionary; `nil` when a legacy reference can match nothing.
private func itemQuery(_ parsed: ParsedQuery, unlimited: Bool) -> ItemQuery? {
    if let reference = parsed.persistentRef, reference.identity == nil { return nil }
    var query = ItemQuery(
        class: parsed.itemClass, attributes: parsed.attributes,
        synchronizable: parsed.synchronizableAny ? .any : .no,
        persistentID: parsed.persistentRef?.identity,
        limit: unlimited || parsed.filtersCertificates ? nil : parsed.limit)
    // An item that asks for its owner's authentication has the person asked (Apple's default,
    // kSecUseAuthenticationUIAllow), fails the search (Fail, or a context that may not ask), or
    // is left out (Skip). The keychain checks it, so no secret it withholds is ever read here.
    // (Certificate filters need the certificate, which is public, and are checked here.)
    query.authenticationUI = authenticationUI(parsed)
    // An evaluated LAContext spares the read the question, where the keychain made its proof.
    query.ownerProof = (parsed.authenticationContext as? any OwnerProofSource)?.ownerProof()
    // Items sealed under an application password come back sealed, opened here.
    query.opensApplicationPassword = ApplicationPasswordSeal.hasPassword(parsed)
    query.hostOrSubdomain = parsed.hostOrSubdomain
    return query
}

/// What the keychain does with an item that asks for its owner's authentication.
private func authenticationUI(_ parsed: ParsedQuery) -> ItemQuery.AuthenticationUI {
    switch parsed.authenticationUI {
    case .skip: return .skip
    case .fail: return .fail
    case .allow:
        let context = parsed.authenticationContext as? any AuthenticationInteractionSource
        return context?.allowsInteraction == false ? .fail : .allow
    }
}

/// Finds the items of every searched keychain, in order, up to the limit.
private func matchingItems(_ parsed: ParsedQuery) throws -> [(item: Item, source: any KeychainHandle)] {
    guard var itemQuery = itemQuery(parsed, unlimited: false) else { return [] }
    let targets: [SecKeychain?] = parsed.keychains ?? [nil]
    let keychains = try targets.map { try database(for: $0) }
    let wantsData =
        parsed.returnData
        || parsed.returnRef
        || parsed.filtersCertificates
    var items: [(item: Item, source: any KeychainHandle)] = []
    let password = itemQuery.opensApplicationPassword ? ApplicationPasswordSeal.password(of: parsed) : nil
    for database in keychains {
        for var item in try database.find(itemQuery, includeData: wantsData) {
            if let sealed = item.data, ApplicationPasswordSeal.isSealed(item) {
                guard let password else { throw SecError(errSecInteractionNotAllowed) }
                item.data = try ApplicationPasswordSeal.open(sealed, password: password)
            }
            if parsed.filtersCertificates, !passesCertificateFilters(item, parsed) { continue }
            items.append((item, database))
            if let limit = parsed.limit, items.count >= limit { return items }
        }
        if let limit = itemQuery.limit { itemQuery.limit = limit - items.count }
    }
    return items
}

/// The attribute-to-object conversion shared by every result dictionary. (No key is added
/// twice, so the order of the attributes does not matter.)
private func appendAttributes(of item: Item, housekeeping: Bool, to builder: inout ResultDictionaryBuilder) {
    for (name, value) in item.attributes {
        let key = name.rawValue
        switch (name, value) {
        case (.accessControl, .data(let data)):
            if let control = SecAccessControl(serialized: data) { builder.append(key, control) }
        case (.tombstone, _), (.multiUser, _), (.primaryKeyDiscriminator, _), (.searchTerms, _):
            continue
        case (.generic, _) where item.itemClass == .internetPassword:
            continue  // the Secret Service's attribute map: Apple's internet passwords have none
        case (_, .string(let string)): builder.append(key, string: string)
        case (_, .data(let data)): builder.append(key, data: data)
        case (_, .number(let number)): builder.append(key, number: Int(number))
        case (_, .date(let date)): builder.append(key, date: date)
        }
    }
    if item.attributes[.accessControl] == nil, let protection = item.attributes[.accessible]?.stringValue {
        builder.append("accc", SecAccessControl(protectionValue: protection, flags: []))
    }
    if housekeeping {
        builder.append("musr", data: Data())
        builder.append("tomb", number: 0)
    }
}

/// Room for a result dictionary: an item's attributes and the few keys results add.
private func resultCapacity(_ item: Item) -> Int { item.attributes.count + 8 }

private func persistentReference(_ item: Item) -> Data? {
    item.persistentID.map { PersistentReference(itemClass: item.itemClass, identity: $0).data }
}

private func sha1(_ data: Data?) -> Data {
    Data(Insecure.SHA1.hash(data: data ?? Data()))
}

/// One item's result for SecItemCopyMatching, shaped by the return keys as Apple's
/// `SecItemResultCopyPrepared` (`OSX/sec/Security/SecItem.m`) shapes it; `nil` when nothing can be
/// returned.
private func copyResult(_ item: Item, _ source: any KeychainHandle, _ query: ParsedQuery) -> AnyObject? {
    let others = [query.returnAttributes, query.returnData, query.returnPersistentRef].filter { $0 }.count
    let dictionary = query.returnAttributes || (query.returnRef && others > 0) || others > 1
    guard dictionary else {
        if query.returnData { return item.data.map(NSData.init(data:)) }
        if query.returnPersistentRef { return persistentReference(item).map(NSData.init(data:)) }
        return query.returnRef ? itemReference(item, source: source, context: keyContext(query)) : nil
    }
    var builder = ResultDictionaryBuilder(capacity: resultCapacity(item))
    appendAttributes(of: item, housekeeping: true, to: &builder)
    if query.returnData { builder.append("sha1", data: sha1(item.data)) }
    let reference = query.returnRef ? itemReference(item, source: source, context: keyContext(query)) : nil
    if query.returnRef { builder.append("class", string: item.itemClass.rawValue) }
    if let reference { builder.append("v_Ref", reference) }
    // A password's "reference" is its data; a key's, certificate's or identity's that cannot be
    // built is left out, never replaced by its bytes (a private key's among them).
    if query.returnData || (query.returnRef && reference == nil && isPassword(item.itemClass)), let data = item.data {
        builder.append("v_Data", data: data)
    }
    if query.returnPersistentRef, let reference = persistentReference(item) {
        builder.append("v_PersistentRef", data: reference)
    }
    return builder.build()
}

/// The `LAContext` a query gives (`kSecUseAuthenticationContext`), which the token keys it
/// returns are used with, as Apple's are.
private func keyContext(_ query: ParsedQuery) -> (any OwnerProofSource)? {
    query.authenticationContext as? any OwnerProofSource
}

/// The result of SecItemAdd when it has return keys, shaped as Apple's securityd shapes it
/// (`SecDbItemCopyResult`, `keychain/securityd/SecItemDb.c`).
private func addResult(_ item: Item, _ query: ParsedQuery) -> CFTypeRef? {
    let reference = query.returnRef ? itemReference(item) : nil
    if let reference, !query.returnAttributes, !query.returnData, !query.returnPersistentRef { return reference }
    let attributes = query.returnAttributes || query.returnRef
    if !attributes {
        if query.returnData && query.returnPersistentRef {
            return makeResultDictionary([
                ("v_Data", item.data ?? Data()), ("v_PersistentRef", persistentReference(item) as Any),
            ])
        }
        if query.returnData { return NSData(data: item.data ?? Data()) }
        if query.returnPersistentRef { return persistentReference(item).map(NSData.init(data:)) }
        return nil
    }
    var builder = ResultDictionaryBuilder(capacity: resultCapacity(item))
    appendAttributes(of: item, housekeeping: false, to: &builder)
    builder.append("sha1", data: sha1(item.data))
    if query.returnRef { builder.append("class", string: item.itemClass.rawValue) }
    if let reference { builder.append("v_Ref", reference) }
    if query.returnData || (query.returnRef && reference == nil && isPassword(item.itemClass)) {
        builder.append("v_Data", data: item.data ?? Data())
    }
    if query.returnPersistentRef, let reference = persistentReference(item) {
        builder.append("v_PersistentRef", data: reference)
    }
    return builder.build()
}

/// Parses `attributesToUpdate` (Apple's `query_update_parse`, `keychain/securityd/SecDbQuery.c`):
/// every key but kSecValueData is an attribute name.
private func parseChanges(_ dictionary: CFDictionary, itemClass: ItemClass) throws -> (Attributes, Data?) {
    let entries = try QueryParser.entries(dictionary)
    let schema = ItemSchema.of(itemClass)
    var changes: Attributes = [:]
    var data: Data?
    var accessControl: SecAccessControl?
    for (key, value) in entries.sorted(by: { $0.key < $1.key }) {
        if key == "v_Data" {
            guard let bytes = try secretData(value) else { throw SecError(errSecParam) }
            data = bytes
            continue
        }
        // kSecAttrAccess goes with the add only; macOS strips it from changes too
        // (`SecItemCopyTranslatedAttributes`, `OSX/libsecurity_keychain/lib/SecItem.cpp`).
        if key == "nleg" || key == "musr" || key == "mdat" || key == "acls" { continue }
        if key == "ggrp" { throw SecError(errSecParam) }
        guard key.utf8.count == 4, let spec = schema.applesSpec(for: AttributeName(rawValue: key)) else {
            throw SecError(errSecNoSuchAttr)
        }
        switch spec.kind {
        case .accessControl:
            guard let control = value as? SecAccessControl, control.protectionValue != "f" else {
                throw SecError(errSecParam)
            }
            accessControl = control
        case .sync where (value as? String) == "syna":
            continue
        default:
            changes[spec.name] = try spec.normalize(attributeValue(value))
        }
    }
    if let accessControl {
        if changes[.accessible] != nil || isCFTrue(dictionary, "sync") { throw SecError(errSecParam) }
        changes[.accessible] = .string(accessControl.protectionValue)
        changes[.accessControl] = .data(try accessControl.storedForItem())
    }
    return (changes, data)
}
