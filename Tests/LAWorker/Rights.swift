import Foundation
import LocalAuthentication
import Security

// The worker's rights commands, as an app keeps a token behind an LARight
// (LARightStore's own example, extended to the key):
//   keychain-la-worker right-save ID FILE [default|biometry|current|fallback]   saves a right
//       of that requirement with FILE's bytes as its secret; prints "saved" or "error CODE"
//   keychain-la-worker right-use ID   fetches the right, tries its secret before authorizing,
//       authorizes it, reads the secret, signs and decrypts with its key, checks both with the
//       public key, deauthorizes and tries again; a line for each step
//   keychain-la-worker right-remove ID   removes it, then looks for it; "removed", "gone CODE"

/// The code of an error as an app sees it (`LAError`'s, or the keychain's OSStatus).
func code(_ error: any Error) -> Int { (error as NSError).code }

func requirement(_ name: String?) -> LAAuthenticationRequirement {
    switch name {
    case "biometry": .biometry
    case "current": .biometryCurrentSet
    case "fallback": .biometry(fallback: .devicePasscode)
    default: .default
    }
}

func saveRight(_ values: [String]) async {
    guard values.count >= 2, let secret = FileManager.default.contents(atPath: values[1]) else { exit(2) }
    do {
        let right = LARight(requirement: requirement(values.count > 2 ? values[2] : nil))
        let saved = try await LARightStore.shared.saveRight(right, identifier: values[0], secret: secret)
        print("saved \(saved.state.rawValue)")
    } catch {
        print("error \(code(error))")
    }
}

func useRight(_ identifier: String) async {
    let right: LAPersistedRight
    do {
        right = try await LARightStore.shared.right(forIdentifier: identifier)
    } catch {
        print("error \(code(error))")
        return
    }
    print("state \(right.state.rawValue)")
    do {
        _ = try await right.secret.rawData
        print("read before authorizing")
    } catch {
        print("unauthorized \(code(error))")
    }
    do {
        try await right.authorize(localizedReason: "Open your vault")
        print("authorized \(right.state.rawValue)")
        print("secret \(String(decoding: try await right.secret.rawData, as: UTF8.self))")
        let message = Data("a message to sign".utf8)
        let signature = try await right.key.sign(message, algorithm: .ecdsaSignatureMessageX962SHA256)
        try await right.key.publicKey.verify(message, signature: signature, algorithm: .ecdsaSignatureMessageX962SHA256)
        print("verified by a public key of \(try await right.key.publicKey.bytes.count) bytes")
        let sealed = try await right.key.publicKey.encrypt(
            Data("sealed".utf8), algorithm: .eciesEncryptionStandardX963SHA256AESGCM)
        let opened = try await right.key.decrypt(sealed, algorithm: .eciesEncryptionStandardX963SHA256AESGCM)
        print("decrypted \(String(decoding: opened, as: UTF8.self))")
        // Another party's key agrees the same secret with the right's public key.
        let parameters: [CFString: Any] = [
            kSecAttrKeyType: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeySizeInBits: 256,
        ]
        guard let other = SecKeyCreateRandomKey(parameters as CFDictionary, nil),
            let otherPublic = SecKeyCopyPublicKey(other),
            let otherBytes = SecKeyCopyExternalRepresentation(otherPublic, nil) as Data?,
            let rightPublic = SecKeyCreateWithData(
                try await right.key.publicKey.bytes as CFData,
                [kSecAttrKeyType: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeyClass: kSecAttrKeyClassPublic]
                    as CFDictionary, nil),
            let theirs = SecKeyCopyKeyExchangeResult(
                other, .ecdhKeyExchangeStandard, rightPublic, [:] as CFDictionary, nil)
        else { exit(3) }
        let ours = try await right.key.exchangeKeys(
            publicKey: otherBytes, algorithm: .ecdhKeyExchangeStandard, parameters: [:])
        print(ours == theirs as Data ? "agreed" : "disagreed")
    } catch {
        print("error \(code(error))")
    }
    await right.deauthorize()
    do {
        _ = try await right.key.sign(Data("again".utf8), algorithm: .ecdsaSignatureMessageX962SHA256)
        print("signed after deauthorizing")
    } catch {
        print("deauthorized \(right.state.rawValue) \(code(error))")
    }
}

func removeRight(_ identifier: String) async {
    do {
        try await LARightStore.shared.removeRight(forIdentifier: identifier)
        print("removed")
    } catch {
        print("error \(code(error))")
    }
    do {
        _ = try await LARightStore.shared.right(forIdentifier: identifier)
        print("still there")
    } catch {
        print("gone \(code(error))")
    }
}

// The environment's commands:
//   keychain-la-worker environment   LAEnvironment.currentUser.state: "password yes|no",
//       "biometry NAME enrolled 0|1 usable 0|1 hash HEX|none" (or "biometry none"), "mechanisms N"
//   keychain-la-worker environment-watch SECONDS   registers an observer, prints "watching", then
//       the old and new state's biometry lines at the first change, or "unchanged" after SECONDS

func describe(_ state: LAEnvironment.State) -> String {
    var lines = ["password \(state.userPassword?.isSet == true ? "yes" : "no")"]
    if let biometry = state.biometry {
        let hash = biometry.stateHash.isEmpty ? "none" : biometry.stateHash.map { String(format: "%02x", $0) }.joined()
        lines.append(
            "biometry \(biometry.localizedName) enrolled \(biometry.isEnrolled ? 1 : 0) usable \(biometry.isUsable ? 1 : 0) hash \(hash)"
        )
    } else {
        lines.append("biometry none")
    }
    lines.append("mechanisms \(state.allMechanisms.count)")
    return lines.joined(separator: "\n")
}

final class Watcher: NSObject, LAEnvironment.Observer, @unchecked Sendable {
    let changed = DispatchSemaphore(value: 0)
    func environment(_ environment: LAEnvironment, stateDidChangeFromOldState oldState: LAEnvironment.State) {
        print("old \(describe(oldState).replacingOccurrences(of: "\n", with: "; "))")
        print("new \(describe(environment.state).replacingOccurrences(of: "\n", with: "; "))")
        changed.signal()
    }
}

func watchEnvironment(_ seconds: Int) {
    let watcher = Watcher()
    LAEnvironment.currentUser.addObserver(watcher)
    // Unbuffered, so that the test sees it while this waits.
    FileHandle.standardOutput.write(Data("watching\n".utf8))
    if watcher.changed.wait(timeout: .now() + .seconds(seconds)) == .timedOut { print("unchanged") }
    LAEnvironment.currentUser.removeObserver(watcher)
}
