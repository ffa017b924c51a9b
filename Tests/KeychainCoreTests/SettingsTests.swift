import Foundation
import GRDB
import KeychainCore
import Testing

@Suite("Keychain lock settings")
struct SettingsTests {
    @Test("a new keychain has no timeout and does not lock on sleep", arguments: Backend.allCases)
    func newKeychainHasDefaultSettings(backend: Backend) throws {
        let (keychain, owner) = try backend.make(password: "pw")
        defer { withExtendedLifetime(owner) {} }
        let settings = try keychain.settings
        #expect(settings == KeychainSettings.default)
        #expect(settings.lockInterval == nil && !settings.locksOnSleep)
        #expect(settings.description == "no-timeout")
    }

    @Test("a display name is set while locked, read back after reopening, removed by nil; a long one is refused")
    func displayName() throws {
        let temporary = try TemporaryKeychain(password: "pw")
        #expect(try temporary.keychain.displayName == nil)
        try temporary.keychain.setDisplayName("Work — 2026")
        try temporary.keychain.close()
        let reopened = try KeychainDatabase.open(at: temporary.path, configuration: temporary.keychain.configuration)
        #expect(reopened.isLocked)
        #expect(try reopened.displayName == "Work — 2026")
        let long = String(repeating: "é", count: KeychainDatabase.maximumDisplayNameLength / 2 + 1)
        #expect(errorCode { try reopened.setDisplayName(long) } == .parameter)
        #expect(try reopened.displayName == "Work — 2026")
        try reopened.setDisplayName(nil)
        #expect(try reopened.displayName == nil)
    }

    @Test("settings set on an unlocked keychain are read back, and survive closing and reopening")
    func settingsSurviveReopening() throws {
        let temporary = try TemporaryKeychain(password: "pw")
        try temporary.keychain.unlock(password: "pw")
        let chosen = KeychainSettings(lockInterval: 300, locksOnSleep: true)
        try temporary.keychain.setSettings(chosen)
        #expect(try temporary.keychain.settings == chosen)
        try temporary.keychain.close()

        // A new handle opens locked, and reads the settings without a password.
        let reopened = try KeychainDatabase.open(at: temporary.path, configuration: temporary.keychain.configuration)
        #expect(reopened.isLocked)
        #expect(try reopened.settings == chosen)
        #expect(try reopened.settings.description == "lock-on-sleep timeout=300s")

        try reopened.unlock(password: "pw")
        try reopened.setSettings(KeychainSettings(lockInterval: nil, locksOnSleep: false))
        let third = try KeychainDatabase.open(at: temporary.path, configuration: temporary.keychain.configuration)
        #expect(try third.settings == .default)
    }

    @Test("changing the settings needs the keychain unlocked, as on macOS; a failed change keeps the old ones")
    func changingSettingsNeedsAnUnlockedKeychain() throws {
        let temporary = try TemporaryKeychain(password: "pw")
        let keychain = temporary.keychain
        #expect(errorCode { try keychain.setSettings(KeychainSettings(lockInterval: 60)) } == .interactionNotAllowed)
        try keychain.unlock(password: "pw")
        try keychain.setSettings(KeychainSettings(lockInterval: 60))
        keychain.lock()
        #expect(errorCode { try keychain.setSettings(KeychainSettings(locksOnSleep: true)) } == .interactionNotAllowed)
        #expect(try keychain.settings == KeychainSettings(lockInterval: 60))
    }

    @Test("a keychain without a password is always unlocked, so its settings can always change")
    func passwordlessKeychainSettingsChange() throws {
        let keychain = try KeychainDatabase.inMemory()
        try keychain.setSettings(KeychainSettings(locksOnSleep: true))
        #expect(try keychain.settings == KeychainSettings(locksOnSleep: true))
    }

    @Test("a lock interval of zero, a negative one or one past the maximum is refused", arguments: [0, -1, Int.max])
    func outOfRangeIntervalsAreRefused(interval: Int) throws {
        let keychain = try KeychainDatabase.inMemory()
        #expect(errorCode { try keychain.setSettings(KeychainSettings(lockInterval: interval)) } == .parameter)
        #expect(try keychain.settings == .default)
        try keychain.setSettings(KeychainSettings(lockInterval: KeychainSettings.maximumLockInterval))
        #expect(try keychain.settings.lockInterval == KeychainSettings.maximumLockInterval)
    }

    @Test("a closed handle neither reads nor changes settings")
    func closedHandleRefusesSettings() throws {
        let keychain = try KeychainDatabase.inMemory()
        try keychain.close()
        #expect(errorCode { _ = try keychain.settings } == .notAvailable)
        #expect(errorCode { try keychain.setSettings(.default) } == .notAvailable)
    }

    @Test("the settings are one handle away from every conformer of KeychainHandle")
    func settingsThroughTheProtocol() throws {
        let keychain = try KeychainDatabase.inMemory()
        let handle: any KeychainHandle = keychain.acting(for: AccessGroups(["app"]))
        try handle.setSettings(KeychainSettings(lockInterval: 5))
        #expect(try handle.settings == KeychainSettings(lockInterval: 5))
        #expect(try keychain.settings == KeychainSettings(lockInterval: 5))
    }

    /// Garbled entries: empty, short, long, unknown flags, an interval past the maximum.
    static let garbled: [[UInt8]] = [
        [], [1], [1, 0, 0, 0, 1], [1, 0, 0, 0, 0, 1, 0], [1, 2, 0, 0, 0, 1], [1, 0, 0xff, 0xff, 0xff, 0xff],
        Array("{\"lockInterval\":300}".utf8),
    ]

    @Test("a garbled settings entry in the file is a clear decode error, never a crash", arguments: garbled)
    func garbledSettingsAreADecodeError(bytes: [UInt8]) throws {
        let temporary = try TemporaryKeychain()
        try temporary.keychain.setSettings(KeychainSettings(lockInterval: 300))
        try Self.overwriteSettings(at: temporary.path, with: Data(bytes))
        let reopened = try KeychainDatabase.open(at: temporary.path, configuration: temporary.keychain.configuration)
        let error = #expect(throws: KeychainError.self) { _ = try reopened.settings }
        // A JSON object starts with "{" (123), read as a format version from the future.
        let expected: KeychainError.Code = (bytes.first ?? 0) > 1 ? .wrongVersion : .decode
        #expect(error?.code == expected, "\(String(describing: error))")
        #expect(error?.message.contains("lock settings") == true, "\(String(describing: error))")
        // The damage is confined to the settings: the keychain still opens, and new settings
        // replace the damaged ones.
        try reopened.setSettings(KeychainSettings(locksOnSleep: true))
        #expect(try reopened.settings == KeychainSettings(locksOnSleep: true))
    }

    @Test("settings written by a later format version are refused as such")
    func laterVersionIsWrongVersion() throws {
        let temporary = try TemporaryKeychain()
        try Self.overwriteSettings(at: temporary.path, with: Data([2, 0, 0, 0, 0, 60]))
        let error = #expect(throws: KeychainError.self) { _ = try temporary.keychain.settings }
        #expect(error?.code == .wrongVersion)
    }

    static func overwriteSettings(at path: String, with value: Data) throws {
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in
            try db.execute(sql: "INSERT OR REPLACE INTO meta(name, value) VALUES ('settings', ?)", arguments: [value])
        }
    }
}
