import Crypto
import Foundation
import Testing

@testable import KeychainCore

/// A token key that is not permanent is held by its handle alone (issue 50, item 4: such
/// handles were bearer capabilities, usable by any client of the agent whatever its groups).
@Suite struct TokenKeyHandleTests {
    private func sign(_ keychain: KeychainDatabase, _ handle: Data, as groups: AccessGroups) throws -> Data {
        try KeychainDatabase.$callerGroups.withValue(groups) {
            try keychain.useTokenKey(handle, TokenKeyRequest(.sign, input: Data(SHA256.hash(data: Data("m".utf8)))))
        }
    }

    @Test func aHandleWorksForTheGroupsThatMadeItAlone() throws {
        let keychain = try KeychainDatabase.inMemory()
        let maker = AccessGroups(["com.example.maker"])
        let (publicKey, handle) = try KeychainDatabase.$callerGroups.withValue(maker) {
            try keychain.createTokenKey(storing: nil)
        }
        let signature = try sign(keychain, handle, as: maker)
        let verifier = try P256.Signing.PublicKey(x963Representation: publicKey)
        #expect(
            verifier.isValidSignature(
                try P256.Signing.ECDSASignature(rawRepresentation: signature), for: SHA256.hash(data: Data("m".utf8))))
        for other in [
            AccessGroups(["com.example.other"]), AccessGroups(["com.example.maker", "com.example.other"]), .standard,
        ] {
            let error = #expect(throws: KeychainError.self) { try sign(keychain, handle, as: other) }
            #expect(error?.code == .itemNotFound, "\(other.groups)")
        }
        // Nor can another caller make it permanent under its own groups.
        let template = Item(class: .key, attributes: [.label: .string("stolen")])
        let stored = #expect(throws: KeychainError.self) {
            try KeychainDatabase.$callerGroups.withValue(AccessGroups(["com.example.other"])) {
                try keychain.storeTokenKey(handle, as: template)
            }
        }
        #expect(stored?.code == .itemNotFound)
    }
}
