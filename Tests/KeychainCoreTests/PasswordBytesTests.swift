import Foundation
import KeychainCore
import Testing

/// Passwords are bytes: the key derivation sees exactly the bytes given, UTF-8 or not.
@Suite("Passwords are bytes")
struct PasswordBytesTests {
    /// `\xe9t\xe9`: Latin-1 "été", not UTF-8.
    static let password = Data([0xE9, 0x74, 0xE9])
    /// Passwords of the same shape, which a lossy UTF-8 decoding makes equal to ``password``.
    static let sameShape = [
        Data([0xFF, 0x74, 0xFE]), Data([0x80, 0x74, 0x81]), Data("\u{FFFD}t\u{FFFD}".utf8),
    ]

    @Test func invalidUTF8PasswordsOfOneShapeDoNotUnlockEachOther() throws {
        let temporary = try TemporaryKeychain()
        let path = temporary.directory + "/bytes.keychain-db"
        let keychain = try KeychainDatabase.create(
            at: path, password: Self.password, configuration: temporary.keychain.configuration)
        for other in Self.sameShape {
            #expect(errorCode { try keychain.unlock(password: other) } == .authFailed)
        }
        #expect(keychain.isLocked)
        try keychain.unlock(password: Self.password)
        #expect(!keychain.isLocked)
    }

    @Test func changePasswordKeepsTheNewPasswordsBytesExactly() throws {
        let keychain = try KeychainDatabase.inMemory(password: Data("old".utf8))
        try keychain.changePassword(old: Data("old".utf8), new: Self.password)
        keychain.lock()
        for other in Self.sameShape {
            #expect(errorCode { try keychain.unlock(password: other) } == .authFailed)
        }
        try keychain.unlock(password: Self.password)
        #expect(errorCode { try keychain.changePassword(old: Self.sameShape[0], new: Data("x".utf8)) } == .authFailed)
    }

    @Test func aTextPasswordIsItsUTF8Bytes() throws {
        let keychain = try KeychainDatabase.inMemory(password: "pässwörd")
        try keychain.unlock(password: Data("pässwörd".utf8))
        keychain.lock()
        try keychain.changePassword(old: "pässwörd", new: "née")
        try keychain.unlock(password: Data("née".utf8))
        try keychain.unlock(password: "née")
    }
}
