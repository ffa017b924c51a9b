import Foundation
import KeychainClient
import KeychainModel

/// The storage that ``KeychainItemType`` saves to, fetches from and removes from.
///
/// ``KeychainService`` is the implementation on the keychain engine, and
/// ``InMemoryKeychainService`` the one for tests; a test may also implement it to record
/// calls. The dictionaries use Apple's raw keys (see ``KeychainAttributeKey``).
public protocol KeychainServiceType {
    /// Adds an item, or replaces the existing item with the same identity.
    /// - Parameter attributes: The item's class, attributes and `v_Data` secret.
    /// - Throws: An error when the item cannot be stored.
    func insertItemWithAttributes(_ attributes: KeychainAttributes) throws

    /// Removes the items that match.
    /// - Parameter attributes: The class and attributes to match.
    /// - Throws: An error when the items cannot be removed; ``KeychainService`` throws
    ///   `errSecItemNotFound` (-25300) when nothing matches.
    func removeItemWithAttributes(_ attributes: KeychainAttributes) throws

    /// Fetches the first item that matches.
    /// - Parameter attributes: The class and attributes to match; `r_Data` asks for the secret.
    /// - Returns: The item's class, attributes and (when asked) its `v_Data` secret.
    ///   ``KeychainService`` never returns `nil`; a custom implementation may, and
    ///   ``KeychainItemType/fetchFromKeychain(_:)`` then leaves the item's data unchanged.
    /// - Throws: An error when the items cannot be read; ``KeychainService`` throws
    ///   `errSecItemNotFound` (-25300) when no item matches.
    func fetchItemWithAttributes(_ attributes: KeychainAttributes) throws -> KeychainItem?
}

/// The default ``KeychainServiceType``: items in a keychain of the engine.
///
/// `KeychainService()` uses the user's default keychain, opened on first use, or the
/// database given to ``withDefaultDatabase(_:operation:)`` when created inside it;
/// `KeychainService(database:)` uses the given one.
///
/// Saving replaces an existing item atomically: the item is added or, when it exists,
/// updated in place in one transaction, so a failed save never loses the old item.
/// Errors are ``SwiftKeychainError``s carrying the `OSStatus`. As in the original
/// SwiftKeychain, fetching or removing an item that does not exist throws
/// `errSecItemNotFound` (-25300, ``SwiftKeychainError/itemNotFoundStatus``).
public struct KeychainService: KeychainServiceType, Sendable {
    private let database: (any KeychainHandle)?

    /// The default keychain (or the one given to ``withDefaultDatabase(_:operation:)``).
    public init() {
        database = Keychains.defaultOverride
    }

    /// The given keychain.
    /// - Parameter database: The keychain that holds the items.
    public init(database: any KeychainHandle) {
        self.database = database
    }

    /// Adds the item, or replaces the secret and attributes of the item with the same
    /// primary key (class, service, account, access group, …), in one transaction.
    public func insertItemWithAttributes(_ attributes: KeychainAttributes) throws {
        try Self.mapErrors {
            let database = try resolve()
            let request = try Request(attributes)
            _ = try database.upsert(Item(class: request.itemClass, attributes: request.attributes, data: request.data))
        }
    }

    /// Removes every matching item.
    /// - Throws: ``SwiftKeychainError``: `errSecItemNotFound` (-25300) when none matches.
    public func removeItemWithAttributes(_ attributes: KeychainAttributes) throws {
        try Self.mapErrors {
            let database = try resolve()
            let request = try Request(attributes)
            _ = try database.delete(ItemQuery(class: request.itemClass, attributes: request.attributes))
        }
    }

    /// Fetches the first matching item, with its secret when `r_Data` is true.
    /// - Throws: ``SwiftKeychainError``: `errSecItemNotFound` (-25300) when none matches.
    public func fetchItemWithAttributes(_ attributes: KeychainAttributes) throws -> KeychainItem? {
        try Self.mapErrors {
            let database = try resolve()
            let request = try Request(attributes)
            guard
                let item = try database.findFirst(
                    ItemQuery(class: request.itemClass, attributes: request.attributes),
                    includeData: request.returnData)
            else {
                throw SwiftKeychainError(
                    osStatus: SwiftKeychainError.itemNotFoundStatus, "the specified item could not be found")
            }
            var result: KeychainItem = [KeychainAttributeKey.itemClass: item.itemClass.rawValue]
            for (name, value) in item.attributes {
                switch value {
                case .string(let string): result[name.rawValue] = string
                case .data(let data): result[name.rawValue] = data
                case .number(let number): result[name.rawValue] = Int(number)
                case .date(let date): result[name.rawValue] = date
                }
            }
            if request.returnData, let data = item.data { result[KeychainAttributeKey.valueData] = data }
            return result
        }
    }

    /// Runs `operation` with `database` standing in for the default keychain: a
    /// `KeychainService()` created inside it — including the default argument of
    /// ``KeychainItemType/saveInKeychain(_:)`` and its siblings — uses `database`.
    ///
    /// ```swift
    /// let memory = try InMemoryKeychainService()
    /// try KeychainService.withDefaultDatabase(memory.database) {
    ///     try account.saveInKeychain()
    /// }
    /// ```
    public static func withDefaultDatabase<R>(
        _ database: any KeychainHandle, operation: () throws -> R
    ) rethrows -> R {
        try Keychains.withDefault(database, operation: operation)
    }

    /// The asynchronous form of ``withDefaultDatabase(_:operation:)``.
    public static func withDefaultDatabase<R>(
        _ database: any KeychainHandle, isolation: isolated (any Actor)? = #isolation,
        operation: () async throws -> R
    ) async rethrows -> R {
        try await Keychains.withDefault(database, operation: operation)
    }

    // MARK: Internals

    private func resolve() throws -> any KeychainHandle {
        if let database { return database }
        return try Keychains.current()
    }

    private static func mapErrors<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as KeychainError {
            throw SwiftKeychainError(osStatus: error.osStatus, error.message, underlying: error)
        }
    }

    /// A dictionary split into class, attributes, secret and return flags.
    struct Request {
        var itemClass: ItemClass
        var attributes: Attributes = [:]
        var data: Data?
        var returnData = false

        init(_ dictionary: KeychainAttributes) throws {
            guard let rawClass = dictionary[KeychainAttributeKey.itemClass].flatMap(Self.string) else {
                throw SwiftKeychainError(osStatus: SwiftKeychainError.parameterStatus, "the item has no class")
            }
            guard let itemClass = ItemClass(rawValue: rawClass) else {
                throw SwiftKeychainError(osStatus: -25306, "the item class is not known")
            }
            self.itemClass = itemClass
            for (key, value) in dictionary {
                switch key {
                case KeychainAttributeKey.itemClass:
                    continue
                case KeychainAttributeKey.valueData:
                    guard let data = value as? Data else {
                        throw SwiftKeychainError(osStatus: SwiftKeychainError.parameterStatus, "v_Data is not Data")
                    }
                    self.data = data
                case KeychainAttributeKey.returnData:
                    returnData = (value as? Bool) ?? ((value as? NSNumber)?.boolValue ?? false)
                case _ where key.hasPrefix("r_") || key.hasPrefix("m_") || key.hasPrefix("u_"):
                    continue
                default:
                    attributes[AttributeName(rawValue: key)] = try Self.attributeValue(value, key: key)
                }
            }
        }

        static func string(_ value: any Sendable) -> String? {
            if let string = value as? String { return string }
            if let string = value as? NSString { return string.description }
            return nil
        }

        static func attributeValue(_ value: any Sendable, key: String) throws -> AttributeValue {
            switch value {
            case let string as String: return .string(string)
            case let data as Data: return .data(data)
            case let date as Date: return .date(date)
            case let bool as Bool: return .number(bool ? 1 : 0)
            case let number as Int: return .number(Int64(number))
            case let number as Int64: return .number(number)
            case let number as Int32: return .number(Int64(number))
            case let number as UInt32: return .number(Int64(number))
            case let number as NSNumber: return .number(number.int64Value)
            default:
                if let string = string(value) { return .string(string) }
                throw SwiftKeychainError(
                    osStatus: SwiftKeychainError.parameterStatus, "the attribute \(key) has an unsupported type")
            }
        }
    }
}

/// A ``KeychainServiceType`` for tests: a fresh keychain in memory, with a simulated lock.
///
/// ```swift
/// let keychain = try InMemoryKeychainService()
/// try account.saveInKeychain(keychain)
/// keychain.lock()   // the next fetch throws errSecInteractionNotAllowed (-25308)
/// ```
public final class InMemoryKeychainService: KeychainServiceType, Sendable {
    /// The engine handle of the in-memory keychain.
    public let database: any KeychainHandle
    private let service: KeychainService

    /// Creates an empty, unlocked keychain in memory.
    /// - Parameter accessGroups: The access groups the simulated process may use.
    /// - Throws: ``KeychainModel/KeychainError`` if the engine cannot start.
    public init(accessGroups: AccessGroups = .standard) throws {
        var configuration = KeychainConfiguration.testing()
        configuration.accessGroups = accessGroups
        database = try Keychains.inMemory(configuration: configuration)
        service = KeychainService(database: database)
    }

    /// See ``KeychainService/insertItemWithAttributes(_:)``.
    public func insertItemWithAttributes(_ attributes: KeychainAttributes) throws {
        try service.insertItemWithAttributes(attributes)
    }

    /// See ``KeychainService/removeItemWithAttributes(_:)``.
    public func removeItemWithAttributes(_ attributes: KeychainAttributes) throws {
        try service.removeItemWithAttributes(attributes)
    }

    /// See ``KeychainService/fetchItemWithAttributes(_:)``.
    public func fetchItemWithAttributes(_ attributes: KeychainAttributes) throws -> KeychainItem? {
        try service.fetchItemWithAttributes(attributes)
    }

    /// Simulates the device locking: items readable only when unlocked (the default
    /// `accessMode`) can be neither fetched, saved nor removed until ``unlock()``; those
    /// operations throw with `OSStatus` -25308 (`errSecInteractionNotAllowed`).
    public func lock() { database.lock() }

    /// Simulates the device unlocking.
    /// - Throws: ``KeychainModel/KeychainError`` if the engine cannot unwrap its keys.
    public func unlock() throws { try database.unlock(password: nil) }

    /// The number of generic and Internet passwords stored (attributes only are read).
    /// - Throws: ``SwiftKeychainError`` when the keychain is locked.
    public func itemCount() throws -> Int {
        do {
            return try [ItemClass.genericPassword, .internetPassword].reduce(0) { total, itemClass in
                total + (try database.find(ItemQuery(class: itemClass, synchronizable: .any)).count)
            }
        } catch let error as KeychainError {
            throw SwiftKeychainError(osStatus: error.osStatus, error.message, underlying: error)
        }
    }
}
