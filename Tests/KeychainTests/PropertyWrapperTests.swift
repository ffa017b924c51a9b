import Foundation
import KeychainCore
import Testing

@testable import Keychain

private struct Session {
    @KeychainStored("token", keychain: Session.keychain)
    var token: String?

    @KeychainStored("credentials", keychain: Session.keychain)
    var credentials: Credentials?

    nonisolated(unsafe) static var keychain = Keychain(service: "unused", database: try! KeychainDatabase.inMemory())
}

private struct Settings {
    var keychain: Keychain
    var token: KeychainStored<String> { KeychainStored("token", keychain: keychain) }
}

@Suite("The KeychainStored property wrapper")
struct PropertyWrapperTests {
    @Test("a wrapped property stores, reads and removes through the keychain")
    func wrappedProperty() throws {
        let memory = try InMemoryKeychain()
        let keychain = memory.keychain(service: "wrapped")
        struct Holder {
            @KeychainStored<String> var token: String?
            @KeychainStored<Credentials> var credentials: Credentials?
            init(_ keychain: Keychain) {
                _token = KeychainStored("token", keychain: keychain)
                _credentials = KeychainStored("credentials", keychain: keychain)
            }
        }
        let holder = Holder(keychain)
        #expect(holder.token == nil)
        holder.token = "abc"
        #expect(holder.token == "abc")
        #expect(try keychain.string(forKey: "token") == "abc")

        let credentials = Credentials(user: "u", scopes: [], expires: Date(timeIntervalSince1970: 0))
        holder.credentials = credentials
        #expect(holder.credentials == credentials)
        #expect(try keychain.value(Credentials.self, forKey: "credentials") == credentials)

        holder.token = nil
        #expect(try keychain.contains("token") == false)
    }

    @Test("the projected value gives throwing access")
    func projectedValueThrows() throws {
        let memory = try InMemoryKeychain()
        let stored = KeychainStored<String>("token", keychain: memory.keychain(service: "wrapped"))
        try stored.save("v")
        #expect(try stored.load() == "v")
        #expect(stored.projectedValue.key == "token")
        memory.lock()
        #expect(throws: KeychainError.self) { try stored.load() }
        #expect(throws: KeychainError.self) { try stored.save("w") }
        try memory.unlock()
        #expect(try stored.remove() == true)
        #expect(try stored.load() == nil)
        try stored.save(nil)
    }
}
