import Foundation

/// A keychain query or item as a dictionary keyed by Apple's raw attribute names
/// (`"class"`, `"svce"`, `"acct"`, `"v_Data"`, … — see ``KeychainAttributeKey``).
public typealias KeychainAttributes = [String: any Sendable]
/// The values an item stores in its secret, archived with `NSKeyedArchiver`.
public typealias KeychainData = [String: any Sendable]
/// An item returned by ``KeychainServiceType/fetchItemWithAttributes(_:)``.
public typealias KeychainItem = [String: any Sendable]

/// A value stored in the keychain as one item.
///
/// Implement ``dataToStore`` (what to save) and ``data`` (where fetched values go);
/// ``KeychainGenericPasswordType`` supplies ``attributes``. Then call
/// ``saveInKeychain(_:)``, ``removeFromKeychain(_:)`` and ``fetchFromKeychain(_:)``.
///
/// The values of ``dataToStore`` are archived with `NSKeyedArchiver` (secure coding):
/// strings, numbers, booleans, data, arrays and dictionaries of them are supported as they
/// are; values of any other class — `NSDate` or a `Date`, `NSURL`, your own
/// `NSSecureCoding` classes — must be listed in ``storedClasses``.
public protocol KeychainItemType {
    /// The item's accessibility (`kSecAttrAccessible`) as Apple's raw value; the default
    /// is `"ak"`, `kSecAttrAccessibleWhenUnlocked`.
    var accessMode: String { get }
    /// The access group (`kSecAttrAccessGroup`) to store the item in, or `nil` for the
    /// process's default group.
    var accessGroup: String? { get }
    /// The attributes that identify the item (class, service, account, accessibility).
    var attributes: KeychainAttributes { get }
    /// The values fetched from the keychain by ``fetchFromKeychain(_:)``.
    var data: KeychainData { get set }
    /// The values to store by ``saveInKeychain(_:)``.
    var dataToStore: KeychainData { get }
    /// The classes, beyond strings, numbers, data, arrays and dictionaries, that
    /// ``dataToStore`` may contain (for example `[NSDate.self]`). The default is none.
    var storedClasses: [AnyClass] { get }
}

extension KeychainItemType {
    /// `"ak"`: `kSecAttrAccessibleWhenUnlocked`.
    public var accessMode: String { "ak" }

    /// `nil`: the process's default access group.
    public var accessGroup: String? { nil }

    /// None: only property-list values are stored.
    public var storedClasses: [AnyClass] { [] }
}

extension KeychainItemType {
    /// Saves ``dataToStore``, replacing the item if it already exists.
    ///
    /// The replacement is atomic: the old item stays if the new one cannot be stored.
    /// - Parameter keychain: The keychain service; the default is ``KeychainService``.
    /// - Throws: ``SwiftKeychainError``, for example when ``dataToStore`` holds a value
    ///   whose class is not in ``storedClasses``, or when the keychain is locked.
    public func saveInKeychain(_ keychain: any KeychainServiceType = KeychainService()) throws {
        try keychain.insertItemWithAttributes(attributesToSave())
    }

    /// Removes the item.
    /// - Parameter keychain: The keychain service; the default is ``KeychainService``.
    /// - Throws: ``SwiftKeychainError`` for a keychain failure; with ``KeychainService``,
    ///   removing an item that does not exist throws `errSecItemNotFound` (-25300), as the
    ///   original SwiftKeychain does.
    public func removeFromKeychain(_ keychain: any KeychainServiceType = KeychainService()) throws {
        try keychain.removeItemWithAttributes(attributesForRemove)
    }

    /// Fetches the item and puts its values in ``data``.
    ///
    /// As in the original SwiftKeychain, an item that does not exist is an error:
    /// ``KeychainService`` throws `errSecItemNotFound` (-25300), and ``data`` keeps its
    /// previous values. A custom ``KeychainServiceType`` that returns `nil` also leaves
    /// ``data`` unchanged.
    ///
    /// ```swift
    /// do {
    ///     try account.fetchFromKeychain()
    /// } catch let error as SwiftKeychainError where error.osStatus == SwiftKeychainError.itemNotFoundStatus {
    ///     // no account stored yet
    /// }
    /// ```
    /// - Parameter keychain: The keychain service; the default is ``KeychainService``.
    /// - Returns: The item with its fetched data.
    /// - Throws: ``SwiftKeychainError`` for a keychain failure (`errSecItemNotFound` when
    ///   the item does not exist), or when the stored data holds a class that is not in
    ///   ``storedClasses``.
    @discardableResult
    public mutating func fetchFromKeychain(_ keychain: any KeychainServiceType = KeychainService()) throws -> Self {
        guard let result = try keychain.fetchItemWithAttributes(attributesForFetch) else { return self }
        if let valueData = result[KeychainAttributeKey.valueData] as? Data {
            data = try KeychainArchive.unarchive(valueData, allowing: storedClasses)
        } else {
            data = KeychainData()
        }
        return self
    }

    // MARK: Internals

    func attributesToSave() throws -> KeychainAttributes {
        var itemAttributes = attributes
        itemAttributes[KeychainAttributeKey.valueData] = try KeychainArchive.archive(
            dataToStore, allowing: storedClasses)
        if let accessGroup { itemAttributes[KeychainAttributeKey.accessGroup] = accessGroup }
        return itemAttributes
    }

    var attributesForRemove: KeychainAttributes {
        var itemAttributes = attributes
        if let accessGroup { itemAttributes[KeychainAttributeKey.accessGroup] = accessGroup }
        return itemAttributes
    }

    var attributesForFetch: KeychainAttributes {
        var itemAttributes = attributesForRemove
        itemAttributes[KeychainAttributeKey.returnData] = true
        itemAttributes[KeychainAttributeKey.returnAttributes] = true
        return itemAttributes
    }
}

/// A generic password (`kSecClassGenericPassword`) identified by a service and an account.
///
/// ```swift
/// struct InstagramAccount: KeychainGenericPasswordType {
///     let accountName: String
///     let token: String
///     var data = KeychainData()
///     var dataToStore: KeychainData { ["token": token] }
///     var accessToken: String? { data["token"] as? String }
/// }
/// ```
public protocol KeychainGenericPasswordType: KeychainItemType {
    /// The service (`kSecAttrService`); the default is `"swift.keychain.service"`.
    var serviceName: String { get }
    /// The account (`kSecAttrAccount`) that identifies the item within its service.
    var accountName: String { get }
}

extension KeychainGenericPasswordType {
    /// `"swift.keychain.service"`.
    public var serviceName: String { "swift.keychain.service" }

    /// The class, accessibility, service and account.
    public var attributes: KeychainAttributes {
        [
            KeychainAttributeKey.itemClass: KeychainAttributeKey.genericPasswordClass,
            KeychainAttributeKey.accessible: accessMode,
            KeychainAttributeKey.service: serviceName,
            KeychainAttributeKey.account: accountName,
        ]
    }
}

/// Apple's raw keys and values of the dictionaries that ``KeychainServiceType`` exchanges
/// (the strings behind `kSecClass`, `kSecAttrService`, …), for code that builds them
/// without the `Security` module.
public enum KeychainAttributeKey {
    /// `kSecClass`.
    public static let itemClass = "class"
    /// `kSecClassGenericPassword`, a value of ``itemClass``.
    public static let genericPasswordClass = "genp"
    /// `kSecClassInternetPassword`, a value of ``itemClass``.
    public static let internetPasswordClass = "inet"
    /// `kSecAttrAccessible`.
    public static let accessible = "pdmn"
    /// `kSecAttrAccessGroup`.
    public static let accessGroup = "agrp"
    /// `kSecAttrService`.
    public static let service = "svce"
    /// `kSecAttrAccount`.
    public static let account = "acct"
    /// `kSecAttrLabel`.
    public static let label = "labl"
    /// `kSecAttrSynchronizable`.
    public static let synchronizable = "sync"
    /// `kSecValueData`.
    public static let valueData = "v_Data"
    /// `kSecReturnData`.
    public static let returnData = "r_Data"
    /// `kSecReturnAttributes`.
    public static let returnAttributes = "r_Attributes"
    /// `kSecReturnPersistentRef`.
    public static let returnPersistentRef = "r_PersistentRef"
    /// `kSecReturnRef`.
    public static let returnRef = "r_Ref"
    /// `kSecMatchLimit`.
    public static let matchLimit = "m_Limit"
}
