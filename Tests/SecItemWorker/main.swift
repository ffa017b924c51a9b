// A helper process of the tests: an application that calls the Security module in its own
// process, so that the keychain it reaches (the agent at KEYCHAIN_AGENT_SOCK, with
// KEYCHAIN_AGENT=required) comes from its environment, not the test's.
//
//   keychain-secitem-worker add <service> <account> <label> [userPresence|biometryAny|…]
//       the secret is standard input; with a flag, the item's access control asks for it
//       (kSecAttrAccessibleWhenUnlocked); says "ok" or "error <OSStatus>" (exit status 0 or 1)
//   keychain-secitem-worker secure-enclave create <tag>   Apple's sample code for a Secure
//       Enclave key; says "public <hex>" (X9.63) or "error <description>"
//   keychain-secitem-worker secure-enclave sign <tag>     finds the key by its tag and signs
//       standard input (ECDSA, X9.62, SHA-256); says "signature <hex>" (DER)
//   keychain-secitem-worker secure-enclave decrypt <tag>  decrypts standard input (ECIES,
//       cofactor, variable IV, X9.63 SHA-256, AES-GCM); says "plaintext <hex>"

import Foundation
import KeychainLibc
import Security

let arguments = CommandLine.arguments

func hex(_ data: Data) -> String { data.map { String(format: "%02x", $0) }.joined() }

func fail(_ message: String) -> Never {
    print("error \(message)")
    exit(1)
}

switch (arguments.count, arguments.dropFirst().first) {
case (5, "add"), (6, "add"):
    let secret = FileHandle.standardInput.readDataToEndOfFile()
    var attributes: [CFString: Any] = [
        kSecClass: kSecClassGenericPassword,
        kSecAttrService: arguments[2],
        kSecAttrAccount: arguments[3],
        kSecAttrLabel: arguments[4],
        kSecValueData: secret,
    ]
    if arguments.count == 6 {
        let flags: [String: SecAccessControlCreateFlags] = [
            "userPresence": .userPresence, "biometryAny": .biometryAny, "biometryCurrentSet": .biometryCurrentSet,
            "devicePasscode": .devicePasscode, "companion": .companion,
        ]
        guard let flag = flags[arguments[5]],
            let control = SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleWhenUnlocked, flag, nil)
        else { fail("no such flag") }
        attributes[kSecAttrAccessControl] = control
    }
    let status = SecItemAdd(attributes as CFDictionary, nil)
    print(status == errSecSuccess ? "ok" : "error \(status)")
    exit(status == errSecSuccess ? 0 : 1)
case (4, "secure-enclave"):
    let tag = Data(arguments[3].utf8)
    do {
        try secureEnclave(arguments[2], tag: tag)
    } catch {
        fail("\(error)")
    }
default:
    FileHandle.standardError.write(Data("usage: keychain-secitem-worker add|secure-enclave …\n".utf8))
    exit(2)
}

func secureEnclave(_ command: String, tag: Data) throws {
    switch command {
    case "create":
        // Apple, "Protecting keys with the Secure Enclave", unchanged.
        let access =
            SecAccessControlCreateWithFlags(
                kCFAllocatorDefault,
                kSecAttrAccessibleWhenUnlockedThisDeviceOnly,
                .privateKeyUsage,
                nil)!  // Ignore error

        let attributes: NSDictionary = [
            kSecAttrKeyType: kSecAttrKeyTypeEC,
            kSecAttrKeySizeInBits: 256,
            kSecAttrTokenID: kSecAttrTokenIDSecureEnclave,
            kSecPrivateKeyAttrs: [
                kSecAttrIsPermanent: true,
                kSecAttrApplicationTag: tag,
                kSecAttrAccessControl: access,
            ],
        ]

        var error: Unmanaged<CFError>?
        guard let privateKey = SecKeyCreateRandomKey(attributes, &error) else {
            throw error!.takeRetainedValue() as Error
        }
        // Apple, "Getting an existing key's public key" and "Storing keys as data".
        let publicKey = SecKeyCopyPublicKey(privateKey)!
        guard let data = SecKeyCopyExternalRepresentation(publicKey, &error) as Data? else {
            throw error!.takeRetainedValue() as Error
        }
        print("public \(hex(data))")
    case "sign":
        let data = FileHandle.standardInput.readDataToEndOfFile()
        let privateKey = try storedKey(tag: tag)
        // Apple, "Signing and verifying", unchanged.
        let algorithm: SecKeyAlgorithm = .ecdsaSignatureMessageX962SHA256
        guard SecKeyIsAlgorithmSupported(privateKey, .sign, algorithm) else { fail("unsupported") }
        var error: Unmanaged<CFError>?
        guard let signature = SecKeyCreateSignature(privateKey, algorithm, data as CFData, &error) as Data? else {
            throw error!.takeRetainedValue() as Error
        }
        print("signature \(hex(signature))")
    case "decrypt":
        let cipherText = FileHandle.standardInput.readDataToEndOfFile()
        let privateKey = try storedKey(tag: tag)
        // Apple, "Using keys for encryption", unchanged.
        let algorithm: SecKeyAlgorithm = .eciesEncryptionCofactorVariableIVX963SHA256AESGCM
        guard SecKeyIsAlgorithmSupported(privateKey, .decrypt, algorithm) else { fail("unsupported") }
        var error: Unmanaged<CFError>?
        guard let clearText = SecKeyCreateDecryptedData(privateKey, algorithm, cipherText as CFData, &error) as Data?
        else {
            throw error!.takeRetainedValue() as Error
        }
        print("plaintext \(hex(clearText))")
    default:
        fail("unknown command \(command)")
    }
}

/// Apple, "Storing keys in the keychain": the key with `tag`, unchanged.
func storedKey(tag: Data) throws -> SecKey {
    let getquery: [String: Any] = [
        kSecClass as String: kSecClassKey,
        kSecAttrApplicationTag as String: tag,
        kSecAttrKeyType as String: kSecAttrKeyTypeEC,
        kSecReturnRef as String: true,
    ]
    var item: CFTypeRef?
    let status = SecItemCopyMatching(getquery as CFDictionary, &item)
    guard status == errSecSuccess else { fail("SecItemCopyMatching \(status)") }
    return item as! SecKey
}
