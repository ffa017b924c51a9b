import Foundation

/// A keyed store of `Data` values: the instance API of ``KeychainStorage``.
///
/// Code that only reads and writes values can depend on `DataStoring` and be tested with
/// any implementation, such as a ``KeychainStorage`` on an in-memory keychain.
public protocol DataStoring: AnyObject, Sendable {
    /// Reads the value stored under `key`.
    /// - Parameter key: The value's key.
    /// - Returns: The value, or `nil` when the key does not exist.
    /// - Throws: An error when the value exists but cannot be read.
    func data(for key: String) throws -> Data?

    /// Stores a value under `key`, replacing any previous value.
    /// - Parameters:
    ///   - data: The value.
    ///   - key: The value's key.
    /// - Throws: An error when the value cannot be stored; the previous value is kept.
    func put(data: Data, for key: String) throws

    /// Removes the value stored under `key`; removing a key that does not exist does nothing.
    /// - Parameter key: The value's key.
    /// - Throws: An error when the value exists but cannot be removed.
    func removeData(for key: String) throws

    /// Removes every value.
    /// - Throws: An error when the values cannot be removed.
    func removeAllData() throws

    /// The keys of the stored values.
    /// - Returns: Every key; empty when nothing is stored.
    /// - Throws: An error when the keys cannot be listed.
    func keys() throws -> Set<String>
}
