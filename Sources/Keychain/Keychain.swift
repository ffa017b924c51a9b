import KeychainClient
@_exported import KeychainModel
import Foundation

/// The idiomatic Swift API to the keychain: read and write strings, data and `Codable`
/// values by key. New code should start here.
///
/// A `Keychain` names a set of items — the generic passwords of one service, or the
/// Internet passwords of one server — and how new items are written. It is a value:
/// configuration methods return a new `Keychain`, and every copy is safe to use from any
/// thread.
///
/// ```swift
/// let keychain = Keychain(service: "com.example.api")
///     .accessibility(.afterFirstUnlock)
///     .label("Example API")
///
/// try keychain.set("s3cr3t", forKey: "token")
/// let token = try keychain.string(forKey: "token")   // "s3cr3t", or nil when absent
/// try keychain.remove("token")
/// ```
///
/// ### Errors
/// Every failure is thrown as a ``KeychainModel/KeychainError`` whose
/// ``KeychainModel/KeychainError/osStatus`` is Apple's `OSStatus` for it (for example
/// `-25308`, `errSecInteractionNotAllowed`, while the keychain is locked). An item that
/// does not exist is `nil` (or `false`), never an error, and no other error is turned into
/// `nil` or printed.
///
/// ### Writing
/// A write is an atomic upsert: the item is added, or, when it exists, its secret and
/// attributes are replaced in one transaction. A failed write leaves the old value in place.
///
/// ### Which keychain
/// ``init(service:accessGroup:)`` uses the user's default keychain, opened on first use.
/// Pass a `database` (an ``InMemoryKeychain``'s, any `KeychainHandle` from `Keychains`, or,
/// importing `KeychainCore`, a `TemporaryKeychain`'s) to use another one, or run code under
/// ``withDefaultDatabase(_:operation:)``.
public struct Keychain: Sendable, CustomStringConvertible {
    /// The items a `Keychain` addresses.
    public enum ItemKind: Sendable, Hashable {
        /// Generic passwords (`kSecClassGenericPassword`) of one service; the key is the account.
        case genericPassword(service: String)
        /// Internet passwords (`kSecClassInternetPassword`) of one server; the key is the account.
        case internetPassword(
            server: String, protocolType: ProtocolType, authenticationType: AuthenticationType,
            port: Int, path: String)
    }

    /// The items this keychain reads and writes.
    public let itemKind: ItemKind
    /// The access group items are read from and written to; `nil` reads every group the
    /// process may read and writes to its first group (Apple's behaviour).
    public let accessGroup: String?
    /// When new and rewritten items are readable. The default is ``KeychainModel/Accessibility/whenUnlocked``.
    public private(set) var accessibility: Accessibility = .whenUnlocked
    /// Whether this keychain addresses synchronizable items (`kSecAttrSynchronizable`).
    /// Items are matched exactly: a synchronizable keychain does not see other items.
    public private(set) var synchronizable = false
    /// The label (`kSecAttrLabel`) given to written items, or `nil` to leave it unset.
    public private(set) var label: String?
    /// The comment (`kSecAttrComment`) given to written items, or `nil` to leave it unset.
    public private(set) var comment: String?

    let store: StoreReference

    // MARK: Creating

    /// A keychain of the generic passwords of `service`, in the default keychain.
    ///
    /// The default keychain is opened on first use; an error opening it is thrown by that
    /// first operation. Inside ``withDefaultDatabase(_:operation:)`` the given database
    /// is used instead.
    /// - Parameters:
    ///   - service: The service (`kSecAttrService`) of every item.
    ///   - accessGroup: The access group to use, or `nil` for the process's groups.
    public init(service: String, accessGroup: String? = nil) {
        self.init(kind: .genericPassword(service: service), accessGroup: accessGroup, store: .standard())
    }

    /// A keychain of the generic passwords of `service`, in `database`.
    ///
    /// ```swift
    /// let temporary = try TemporaryKeychain()   // KeychainCore
    /// let keychain = Keychain(service: "com.example.api", database: temporary.keychain)
    /// ```
    /// - Parameters:
    ///   - service: The service (`kSecAttrService`) of every item.
    ///   - accessGroup: The access group to use, or `nil` for the handle's groups.
    ///   - database: The keychain that holds the items.
    public init(service: String, accessGroup: String? = nil, database: any KeychainHandle) {
        self.init(kind: .genericPassword(service: service), accessGroup: accessGroup, store: StoreReference(database))
    }

    /// A keychain of the Internet passwords of `server`, in the default keychain.
    ///
    /// ```swift
    /// let keychain = Keychain(server: "api.example.com", protocolType: .https)
    /// try keychain.set("hunter2", forKey: "alice")
    /// ```
    /// - Parameters:
    ///   - server: The host name (`kSecAttrServer`).
    ///   - protocolType: The protocol (`kSecAttrProtocol`).
    ///   - authenticationType: The authentication scheme (`kSecAttrAuthenticationType`).
    ///   - port: The port, or 0 for none.
    ///   - path: The path, or `""` for none.
    ///   - accessGroup: The access group to use, or `nil` for the process's groups.
    public init(
        server: String, protocolType: ProtocolType, authenticationType: AuthenticationType = .default,
        port: Int = 0, path: String = "", accessGroup: String? = nil
    ) {
        self.init(
            kind: .internetPassword(
                server: server, protocolType: protocolType, authenticationType: authenticationType, port: port,
                path: path),
            accessGroup: accessGroup, store: .standard())
    }

    /// A keychain of the Internet passwords of `server`, in `database`.
    /// - Parameters:
    ///   - server: The host name (`kSecAttrServer`).
    ///   - protocolType: The protocol (`kSecAttrProtocol`).
    ///   - authenticationType: The authentication scheme (`kSecAttrAuthenticationType`).
    ///   - port: The port, or 0 for none.
    ///   - path: The path, or `""` for none.
    ///   - accessGroup: The access group to use, or `nil` for the handle's groups.
    ///   - database: The keychain that holds the items.
    public init(
        server: String, protocolType: ProtocolType, authenticationType: AuthenticationType = .default,
        port: Int = 0, path: String = "", accessGroup: String? = nil, database: any KeychainHandle
    ) {
        self.init(
            kind: .internetPassword(
                server: server, protocolType: protocolType, authenticationType: authenticationType, port: port,
                path: path),
            accessGroup: accessGroup, store: StoreReference(database))
    }

    /// A keychain of the Internet passwords of a URL's host, port and path, in the default
    /// keychain (or `database`).
    ///
    /// The protocol is taken from `protocolType`, not from the URL's scheme.
    /// - Parameters:
    ///   - server: A URL with a host, such as `https://api.example.com:8443/v1`.
    ///   - protocolType: The protocol (`kSecAttrProtocol`).
    ///   - authenticationType: The authentication scheme (`kSecAttrAuthenticationType`).
    ///   - accessGroup: The access group to use, or `nil` for the process's groups.
    ///   - database: The keychain that holds the items, or `nil` for the default keychain.
    public init(
        server: URL, protocolType: ProtocolType, authenticationType: AuthenticationType = .default,
        accessGroup: String? = nil, database: (any KeychainHandle)? = nil
    ) {
        let components = URLComponents(url: server, resolvingAgainstBaseURL: false)
        let host = components?.host ?? server.absoluteString
        self.init(
            kind: .internetPassword(
                server: host, protocolType: protocolType, authenticationType: authenticationType,
                port: components?.port ?? 0, path: components?.path ?? ""),
            accessGroup: accessGroup, store: database.map { StoreReference($0) } ?? .standard())
    }

    init(kind: ItemKind, accessGroup: String?, store: StoreReference) {
        itemKind = kind
        self.accessGroup = accessGroup
        self.store = store
    }

    // MARK: Configuration

    /// A copy that writes items with the given accessibility.
    ///
    /// Existing items get it when they are next written.
    /// - Parameter accessibility: When written items are readable.
    /// - Returns: The configured keychain.
    public func accessibility(_ accessibility: Accessibility) -> Keychain {
        var copy = self
        copy.accessibility = accessibility
        return copy
    }

    /// A copy that addresses synchronizable items (or only items that are not).
    /// - Parameter synchronizable: Whether items are synchronizable.
    /// - Returns: The configured keychain.
    public func synchronizable(_ synchronizable: Bool) -> Keychain {
        var copy = self
        copy.synchronizable = synchronizable
        return copy
    }

    /// A copy that gives written items a label (`kSecAttrLabel`).
    /// - Parameter label: The label, or `nil` to leave labels as they are.
    /// - Returns: The configured keychain.
    public func label(_ label: String?) -> Keychain {
        var copy = self
        copy.label = label
        return copy
    }

    /// A copy that gives written items a comment (`kSecAttrComment`).
    /// - Parameter comment: The comment, or `nil` to leave comments as they are.
    /// - Returns: The configured keychain.
    public func comment(_ comment: String?) -> Keychain {
        var copy = self
        copy.comment = comment
        return copy
    }

    /// A summary of the configuration (no secret).
    public var description: String {
        let kind: String
        switch itemKind {
        case .genericPassword(let service):
            kind = "service: \(service)"
        case .internetPassword(let server, let protocolType, let authenticationType, let port, let path):
            kind =
                "server: \(server), protocol: \(protocolType), authentication: \(authenticationType)"
                + (port != 0 ? ", port: \(port)" : "") + (path.isEmpty ? "" : ", path: \(path)")
        }
        return "Keychain(\(kind), accessGroup: \(accessGroup ?? "default"), accessibility: \(accessibility)"
            + ", synchronizable: \(synchronizable))"
    }

    // MARK: Default keychain

    /// Runs `operation` with `database` standing in for the default keychain.
    ///
    /// A `Keychain` created inside `operation` by an initializer without a `database`
    /// argument uses `database`. This is how the tests of a project that creates its
    /// `Keychain` values deep inside its code keep them off the user's keychain:
    ///
    /// ```swift
    /// let memory = try InMemoryKeychain()
    /// try Keychain.withDefaultDatabase(memory.database) {
    ///     try SessionStore().saveToken("t")   // calls Keychain(service:) inside
    /// }
    /// ```
    /// The override is task-local: it is seen by this task and the tasks it creates.
    public static func withDefaultDatabase<R>(
        _ database: any KeychainHandle, operation: () throws -> R
    ) rethrows -> R {
        try Keychains.withDefault(database, operation: operation)
    }

    /// Runs the asynchronous `operation` with `database` standing in for the default keychain.
    /// See ``withDefaultDatabase(_:operation:)``.
    public static func withDefaultDatabase<R>(
        _ database: any KeychainHandle, isolation: isolated (any Actor)? = #isolation,
        operation: () async throws -> R
    ) async rethrows -> R {
        try await Keychains.withDefault(database, operation: operation)
    }
}
