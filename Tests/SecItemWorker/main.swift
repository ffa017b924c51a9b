// A helper process of SecretServiceTests: an application that stores a password through the
// Security module's SecItemAdd, in its own process, so that the keychain it reaches (the agent at
// KEYCHAIN_AGENT_SOCK, with KEYCHAIN_AGENT=required) comes from its environment, not the test's.
//
//   keychain-secitem-worker add <service> <account> <label>   the secret is standard input;
//       says "ok" or "error <OSStatus>" (exit status 0 or 1)

import Foundation
import KeychainLibc
import Security

let arguments = CommandLine.arguments
guard arguments.count == 5, arguments[1] == "add" else {
    FileHandle.standardError.write(Data("usage: keychain-secitem-worker add <service> <account> <label>\n".utf8))
    exit(2)
}
let secret = FileHandle.standardInput.readDataToEndOfFile()
let status = SecItemAdd(
    [
        kSecClass: kSecClassGenericPassword,
        kSecAttrService: arguments[2],
        kSecAttrAccount: arguments[3],
        kSecAttrLabel: arguments[4],
        kSecValueData: secret,
    ] as CFDictionary, nil)
print(status == errSecSuccess ? "ok" : "error \(status)")
exit(status == errSecSuccess ? 0 : 1)
