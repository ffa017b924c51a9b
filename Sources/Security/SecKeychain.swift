// Choosing a keychain the macOS way: SecKeychainCreate/Open/Unlock/Lock and the default keychain.
//
// On Linux a keychain is a file managed by KeychainCore. Which file a name, a path or "the
// default keychain" means is `KeychainSelection`'s decision (KeychainClient): the login keychain
// (`${XDG_DATA_HOME:-$HOME/.local/share}/keychains/login.keychain-db`), the user's choice, or the
// file named by `KEYCHAIN_DEFAULT_PATH`, so that a test or a container can point a whole process
// elsewhere without changing code. Lock state belongs to the process: every `SecKeychain`
// for the same file shares one open handle, so `SecKeychainUnlock` affects later `SecItem` calls.

internal import _SecurityFoundation
internal import KeychainClient
package import KeychainModel

/// A keychain file (macOS `SecKeychainRef`).
public final class SecKeychain: Hashable, Sendable, CustomStringConvertible {
    /// The keychain's file.
    package let path: String

    package init(path: String) { self.path = path }

    /// Two keychain objects are equal when they name the same file.
    public static func == (lhs: SecKeychain, rhs: SecKeychain) -> Bool { lhs.path == rhs.path }

    /// Hashes the file path.
    public func hash(into hasher: inout Hasher) { hasher.combine(path) }

    /// A description naming the file (never its contents).
    public var description: String { "<SecKeychainRef: \(path)>" }
}

/// The legacy macOS type of `SecKeychainRef`.
public typealias SecKeychainRef = SecKeychain

/// The process's open keychains, shared by every `SecKeychain` and `SecItem` call.
///
/// Not a hidden global for tests: ``reset(configuration:defaultKeychain:)`` points the whole
/// process at another default (an in-memory keychain, a temporary file).
package final class KeychainRegistry: @unchecked Sendable {
    /// The registry of this process.
    package static let shared = KeychainRegistry()

    private let lock = NSLock()
    private var open: [String: any KeychainHandle] = [:]
    private var defaultOverride: (any KeychainHandle)?
    private var defaultPath: String?
    private var configurationValue = KeychainConfiguration()

    /// The configuration used to open and create keychains (access groups from
    /// `KEYCHAIN_ACCESS_GROUPS`, device key from the XDG config directory).
    package var configuration: KeychainConfiguration {
        lock.withLock { configurationValue }
    }

    /// Forgets every open keychain and, optionally, sets a default keychain and configuration.
    package func reset(
        configuration: KeychainConfiguration = KeychainConfiguration(),
        defaultKeychain: (any KeychainHandle)? = nil
    ) {
        lock.withLock {
            open = [:]
            defaultPath = nil
            configurationValue = configuration
            defaultOverride = defaultKeychain
            if let path = defaultKeychain?.path { open[path] = defaultKeychain }
        }
    }

    /// The open handle of a keychain file, opening it on first use.
    package func database(at path: String) throws -> any KeychainHandle {
        if let existing = lock.withLock({ open[path] }) { return existing }
        let database = try Keychains.open(at: path, configuration: configuration)
        return lock.withLock {
            if let existing = open[path] { return existing }
            open[path] = database
            return database
        }
    }

    /// Records a keychain just created.
    package func register(_ database: any KeychainHandle) {
        guard let path = database.path else { return }
        lock.withLock { open[path] = database }
    }

    /// Forgets a keychain (after it was deleted).
    package func forget(path: String) {
        lock.withLock {
            open[path] = nil
            if defaultPath == path { defaultPath = nil }
        }
    }

    /// The default keychain: the current task's (``KeychainCore/Keychains/withDefault(_:operation:)-(_,()->R)``),
    /// else the one set with `SecKeychainSetDefault`, else the process's default keychain shared
    /// with the other modules (``KeychainCore/Keychains/current()``), created password-less on first use.
    package func defaultDatabase() throws -> any KeychainHandle {
        if let database = Keychains.defaultOverride { return database }
        if let database = lock.withLock({ defaultOverride }) { return database }
        if let path = lock.withLock({ defaultPath }) { return try database(at: path) }
        let path = Self.userDefaultKeychain()
        if let existing = lock.withLock({ open[path] }) { return existing }
        // The same keychain, where `Keychains` keeps it (the agent, or this process).
        let database = try Keychains.current()
        return lock.withLock {
            if let existing = open[path] { return existing }
            open[path] = database
            return database
        }
    }

    /// The path of the default keychain.
    package var defaultKeychainPath: String {
        if let scoped = Keychains.defaultOverride { return scoped.path ?? ":memory:" }
        return lock.withLock { defaultOverride?.path ?? defaultPath } ?? Self.userDefaultKeychain()
    }

    /// The default keychain as ``KeychainClient/KeychainSelection`` decides it for this process.
    private static func userDefaultKeychain() -> String { KeychainSelection.processDefaultKeychain() }

    /// Makes another file the default keychain for this process.
    package func setDefault(path: String) {
        lock.withLock {
            defaultOverride = nil
            defaultPath = path
        }
    }
}

/// Runs an operation and turns its failure into the matching `OSStatus`.
func status(_ body: () throws -> Void) -> OSStatus {
    do {
        try body()
        return errSecSuccess
    } catch {
        return osStatus(of: error)
    }
}

/// The `OSStatus` of any error thrown inside this module: a ``SecError`` or an engine error.
func osStatus(of error: any Error) -> OSStatus { KeychainError.osStatus(of: error) }

/// A failure inside the Security layer, carrying its `OSStatus`.
struct SecError: OSStatusConvertible {
    var status: OSStatus
    init(_ status: OSStatus) { self.status = status }
    var osStatus: Int32 { status }
}

/// A password given as a length and a pointer: its bytes exactly (UTF-8 or not), or `nil`
/// when there are none.
private func passwordBytes(_ length: UInt32, _ password: UnsafeRawPointer?) -> Data? {
    guard let password, length > 0 else { return nil }
    return Data(bytes: password, count: Int(length))
}

/// Creates a keychain file (macOS).
///
/// With a password the keychain is created locked, as every password keychain opens on Linux;
/// unlock it with ``SecKeychainUnlock(_:_:_:_:)``. With no password (length 0) it is protected by
/// the device key alone.
/// - Parameters:
///   - pathName: The file to create.
///   - passwordLength: The password's length in bytes.
///   - password: The password's bytes (used exactly as given, UTF-8 or not), or `nil`.
///   - promptUser: Ignored on Linux (there is no UI).
///   - initialAccess: Ignored on Linux.
///   - keychain: Receives the new keychain.
/// - Returns: `errSecSuccess`, `errSecDuplicateKeychain`, or another error.
@discardableResult
public func SecKeychainCreate(
    _ pathName: UnsafePointer<CChar>, _ passwordLength: UInt32, _ password: UnsafeRawPointer?,
    _ promptUser: Bool, _ initialAccess: SecAccess?, _ keychain: UnsafeMutablePointer<SecKeychain?>
) -> OSStatus {
    let path = String(cString: pathName)
    return status {
        let database = try Keychains.create(
            at: path, password: passwordBytes(passwordLength, password),
            configuration: KeychainRegistry.shared.configuration)
        KeychainRegistry.shared.register(database)
        keychain.pointee = SecKeychain(path: path)
    }
}

/// Returns a keychain object for a file (macOS); the file is opened when first used.
/// - Parameters:
///   - pathName: The keychain's file (a bare name is looked up in the keychains directory).
///   - keychain: Receives the keychain object.
/// - Returns: `errSecSuccess`.
@discardableResult
public func SecKeychainOpen(_ pathName: UnsafePointer<CChar>, _ keychain: UnsafeMutablePointer<SecKeychain?>)
    -> OSStatus
{
    keychain.pointee = SecKeychain(path: KeychainSelection().keychain(named: String(cString: pathName)))
    return errSecSuccess
}

/// Unlocks a keychain for this process (macOS).
/// - Parameters:
///   - keychain: The keychain, or `nil` for the default keychain.
///   - passwordLength: The password's length in bytes.
///   - password: The password's bytes (used exactly as given, UTF-8 or not).
///   - usePassword: Whether to use `password`; `false` (which would show a dialog on macOS)
///     unlocks only a password-less keychain.
/// - Returns: `errSecSuccess`, `errSecAuthFailed` for a wrong password, or `errSecNoSuchKeychain`.
@discardableResult
public func SecKeychainUnlock(
    _ keychain: SecKeychain?, _ passwordLength: UInt32, _ password: UnsafeRawPointer?, _ usePassword: Bool
) -> OSStatus {
    status {
        let database = try database(for: keychain)
        try database.unlock(password: usePassword ? passwordBytes(passwordLength, password) ?? Data() : nil)
    }
}

/// Locks a keychain for this process (macOS).
/// - Parameter keychain: The keychain, or `nil` for the default keychain.
/// - Returns: `errSecSuccess` or `errSecNoSuchKeychain`.
@discardableResult
public func SecKeychainLock(_ keychain: SecKeychain?) -> OSStatus {
    status { try database(for: keychain).lock() }
}

/// Returns the default keychain (macOS).
/// - Parameter keychain: Receives the default keychain.
/// - Returns: `errSecSuccess`.
@discardableResult
public func SecKeychainCopyDefault(_ keychain: UnsafeMutablePointer<SecKeychain?>) -> OSStatus {
    keychain.pointee = SecKeychain(path: KeychainRegistry.shared.defaultKeychainPath)
    return errSecSuccess
}

/// Makes a keychain the default for this process (macOS).
/// - Parameter keychain: The new default keychain.
/// - Returns: `errSecSuccess`, or `errSecParam` for `nil`.
@discardableResult
public func SecKeychainSetDefault(_ keychain: SecKeychain?) -> OSStatus {
    guard let keychain else { return errSecParam }
    KeychainRegistry.shared.setDefault(path: keychain.path)
    return errSecSuccess
}

/// Deletes a keychain file (macOS).
/// - Parameter keychainOrArray: The keychain to delete.
/// - Returns: `errSecSuccess`, `errSecNoSuchKeychain`, `errSecInvalidKeychain` for a file that is
///   not a keychain (nothing is removed), or `errSecInvalidKeychain` for `nil`.
@discardableResult
public func SecKeychainDelete(_ keychainOrArray: SecKeychain?) -> OSStatus {
    guard let keychain = keychainOrArray else { return errSecInvalidKeychain }
    return status {
        try Keychains.delete(at: keychain.path)
        KeychainRegistry.shared.forget(path: keychain.path)
    }
}

/// The open database behind a keychain object, or the default keychain's for `nil`.
func database(for keychain: SecKeychain?) throws -> any KeychainHandle {
    guard let keychain else { return try KeychainRegistry.shared.defaultDatabase() }
    if keychain.path == KeychainRegistry.shared.defaultKeychainPath {
        return try KeychainRegistry.shared.defaultDatabase()
    }
    return try KeychainRegistry.shared.database(at: keychain.path)
}
