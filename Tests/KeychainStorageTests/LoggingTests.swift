import Foundation
import KeychainCore
import KeychainStorage
import KeychainTestSupport
import Logging
import Testing

@Suite("Logging")
struct LoggingTests {
    @Test("store events are logged under the KeychainStorage label, and no line holds a secret")
    func logsWithoutSecrets() throws {
        _ = LogCapture.installed
        let fixture = try KeychainBackend.memory.make()
        let name = "logged-\(UUID().uuidString)"
        let password = "correct-horse-\(UUID().uuidString)"
        let value = "value-\(UUID().uuidString)"
        let key = "key-\(UUID().uuidString)"
        let cipher = try Cipher(password: password, salt: testSalt, keyDerivation: .unsafeTestingOnly)

        let store = try fixture.create(name, cipher: cipher)
        try store.put(data: Data(value.utf8), for: key)
        _ = try store.data(for: key)
        _ = try fixture.open(name, cipher: cipher)
        _ = storageError { try fixture.open(name, cipher: nil) }
        try store.changeCipher(to: try testCipher("next-\(password)"))
        _ = storageError { try store.changeCipher(to: FlakyCipher(try testCipher(), failAfter: 0)) }
        try KeychainStorage.removeStore(name: name, accessGroup: nil, database: fixture.handle)

        let lines = LogCapture.shared.entries { $0.metadata["store"] == name }
        #expect(lines.allSatisfy { $0.label == KeychainStorage.loggerLabel })
        #expect(KeychainStorage.loggerLabel == "KeychainStorage")
        let messages = lines.map(\.message)
        #expect(messages.contains("Created store"))
        #expect(messages.contains("Opened store"))
        #expect(messages.contains("Changed the cipher"))
        #expect(messages.contains("Removed store"))
        #expect(lines.contains { $0.level == .warning })

        let everything = LogCapture.shared.entries { _ in true }.map(\.text).joined(separator: "\n")
        let valueHex = Data(value.utf8).map { String(format: "%02x", $0) }.joined()
        for secret in [password, value, key, valueHex, Data(value.utf8).base64EncodedString()] {
            #expect(!everything.contains(secret))
        }
    }
}
