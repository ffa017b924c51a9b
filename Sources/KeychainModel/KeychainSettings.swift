import Foundation

/// When a keychain locks itself: macOS's `SecKeychainSettings`, stored with the keychain.
///
/// ``lockInterval`` is the number of seconds without any use after which the keychain locks
/// (`nil`: it never locks by itself); ``locksOnSleep`` asks for a lock when the system sleeps.
/// The engine only stores them; whoever keeps keychains unlocked (the session agent) acts on
/// them. A new keychain has no timeout and does not lock on sleep.
///
/// The settings travel with the file (one entry of its header, written in one transaction),
/// so they survive reopening and copying. They are not secret and not sealed: reading them
/// needs no password, and changing them, as on macOS, needs the keychain unlocked
/// (`KeychainDatabase.setSettings(_:)`).
///
/// ```swift
/// try keychain.unlock(password: password)
/// try keychain.setSettings(KeychainSettings(lockInterval: 300, locksOnSleep: true))
/// let settings = try keychain.settings   // lockInterval 300, locksOnSleep true
/// ```
public struct KeychainSettings: Hashable, Sendable, CustomStringConvertible {
    /// Seconds of inactivity after which the keychain locks, from 1 to
    /// ``maximumLockInterval``; `nil` for no timeout.
    public var lockInterval: Int?
    /// Whether the keychain locks when the system sleeps.
    public var locksOnSleep: Bool

    /// The longest lock interval: macOS's `INT_MAX` means "no timeout", so one second less.
    public static let maximumLockInterval = Int(Int32.max) - 1

    /// No timeout, no lock on sleep: the settings of a new keychain.
    public static let `default` = KeychainSettings()

    /// Creates settings.
    /// - Parameters:
    ///   - lockInterval: Seconds of inactivity after which the keychain locks; `nil` for none.
    ///   - locksOnSleep: Whether the keychain locks when the system sleeps.
    public init(lockInterval: Int? = nil, locksOnSleep: Bool = false) {
        self.lockInterval = lockInterval
        self.locksOnSleep = locksOnSleep
    }

    /// Whether ``lockInterval`` is in range (`nil`, or 1 to ``maximumLockInterval``).
    public var isValid: Bool { lockInterval.map { (1...Self.maximumLockInterval).contains($0) } ?? true }

    /// macOS's words for the settings, as `security show-keychain-info` prints them after the
    /// keychain's name: `lock-on-sleep timeout=300s`, `no-timeout`.
    public var description: String {
        (locksOnSleep ? "lock-on-sleep " : "") + (lockInterval.map { "timeout=\($0)s" } ?? "no-timeout")
    }

    // MARK: Stored form

    /// The header entry that holds the settings.
    package static let metaName = "settings"
    /// The version of the stored form written here.
    package static let encodingVersion: UInt8 = 1

    /// The stored form: 6 bytes, the version (1), the flags (bit 0: lock on sleep; the others
    /// zero) and the lock interval as a big-endian 32-bit count of seconds (0: no timeout).
    package func encoded() -> Data {
        let interval = UInt32(lockInterval ?? 0)
        return Data([
            Self.encodingVersion, locksOnSleep ? 1 : 0, UInt8(truncatingIfNeeded: interval >> 24),
            UInt8(truncatingIfNeeded: interval >> 16), UInt8(truncatingIfNeeded: interval >> 8),
            UInt8(truncatingIfNeeded: interval),
        ])
    }

    /// Reads the stored form; a missing entry is the default settings.
    /// - Throws: `.wrongVersion` for a form written by a later version, `.decode` for one that
    ///   is damaged (a wrong length, unknown flags, an interval out of range).
    package init(stored: Data?) throws {
        guard let stored else {
            self.init()
            return
        }
        let bytes = [UInt8](stored)
        guard let version = bytes.first else {
            throw KeychainError.decode("the keychain's lock settings are damaged (an empty entry)")
        }
        guard version <= Self.encodingVersion, version != 0 else {
            throw KeychainError(
                .wrongVersion, "the keychain's lock settings were written in an unknown format (version \(version))")
        }
        guard bytes.count == 6 else {
            throw KeychainError.decode("the keychain's lock settings are damaged (\(bytes.count) bytes, not 6)")
        }
        guard bytes[1] & ~1 == 0 else {
            throw KeychainError.decode("the keychain's lock settings are damaged (unknown flags)")
        }
        let interval = bytes[2...5].reduce(0) { $0 << 8 | Int($1) }
        guard interval <= Self.maximumLockInterval else {
            throw KeychainError.decode("the keychain's lock settings are damaged (a lock interval out of range)")
        }
        self.init(lockInterval: interval == 0 ? nil : interval, locksOnSleep: bytes[1] & 1 != 0)
    }
}
