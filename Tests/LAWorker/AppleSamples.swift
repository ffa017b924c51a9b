import Foundation
import LocalAuthentication
import Security

// Apple's LocalAuthentication sample code, as its articles show it and unchanged but for the
// formatting: "Accessing Keychain Items with Face ID or Touch ID"
// (https://developer.apple.com/documentation/localauthentication/accessing-keychain-items-with-face-id-or-touch-id)
// and "Logging a User into Your App with Face ID or Touch ID"
// (https://developer.apple.com/documentation/localauthentication/logging-a-user-into-your-app-with-face-id-or-touch-id).

struct Credentials {
    var username: String
    var password: String
}

enum KeychainError: Error {
    case noPassword
    case unexpectedPasswordData
    case unhandledError(status: OSStatus)
}

func addCredentials(_ credentials: Credentials, server: String) throws {
    // Use the username as the account, and get the password as data.
    let account = credentials.username
    let password = credentials.password.data(using: String.Encoding.utf8)!

    // Create an access control instance that dictates how the item can be read later.
    let access = SecAccessControlCreateWithFlags(
        nil,  // Use the default allocator.
        kSecAttrAccessibleWhenUnlockedThisDeviceOnly,
        .userPresence,
        nil)  // Ignore any error.

    // Allow a device unlock in the last 10 seconds to be used to get at keychain items.
    let context = LAContext()
    context.touchIDAuthenticationAllowableReuseDuration = 10

    // Build the query for use in the add operation.
    let query: [String: Any] = [
        kSecClass as String: kSecClassInternetPassword,
        kSecAttrAccount as String: account,
        kSecAttrServer as String: server,
        kSecAttrAccessControl as String: access as Any,
        kSecUseAuthenticationContext as String: context,
        kSecValueData as String: password,
    ]

    let status = SecItemAdd(query as CFDictionary, nil)
    guard status == errSecSuccess else { throw KeychainError.unhandledError(status: status) }
}

func readCredentials(server: String) throws -> Credentials {
    let context = LAContext()
    context.localizedReason = "Access your password on the keychain"
    let query: [String: Any] = [
        kSecClass as String: kSecClassInternetPassword,
        kSecAttrServer as String: server,
        kSecMatchLimit as String: kSecMatchLimitOne,
        kSecReturnAttributes as String: true,
        kSecUseAuthenticationContext as String: context,
        kSecReturnData as String: true,
    ]

    var item: CFTypeRef?
    let status = SecItemCopyMatching(query as CFDictionary, &item)
    guard status == errSecSuccess else { throw KeychainError.unhandledError(status: status) }

    guard let existingItem = item as? [String: Any],
        let passwordData = existingItem[kSecValueData as String] as? Data,
        let password = String(data: passwordData, encoding: String.Encoding.utf8),
        let account = existingItem[kSecAttrAccount as String] as? String
    else {
        throw KeychainError.unexpectedPasswordData
    }

    return Credentials(username: account, password: password)
}

/// The login sample's state and button action.
@MainActor
final class LoginViewController {
    enum AuthenticationState {
        case loggedin, loggedout
    }

    var state = AuthenticationState.loggedout

    /// What the login button does: evaluates the policy, then says what happened.
    func tapButton(done: @escaping @MainActor () -> Void) {
        if state == .loggedin {
            state = .loggedout
            done()
        } else {
            let context = LAContext()
            context.localizedCancelTitle = "Enter Username/Password"

            // First check if we have the needed hardware support.
            var error: NSError?
            guard context.canEvaluatePolicy(.deviceOwnerAuthentication, error: &error) else {
                print(error?.localizedDescription ?? "Can't evaluate policy")
                done()
                return
            }
            Task {
                do {
                    try await context.evaluatePolicy(
                        .deviceOwnerAuthentication, localizedReason: "Log in to your account")
                    state = .loggedin
                } catch let error {
                    print(error.localizedDescription)
                    // Fall back to a asking for username and password.
                    // ...
                }
                done()
            }
        }
    }
}

// LARightStore's overview (https://developer.apple.com/documentation/localauthentication/larightstore),
// unchanged.

func storeBackendAccessToken(_ token: Data) async throws {
    let loginRight = LARight()
    _ = try await LARightStore.shared.saveRight(loginRight, identifier: "access-token", secret: token)
}

func fetchBackendAccessToken() async throws -> Data {
    let loginRight = try await LARightStore.shared.right(forIdentifier: "access-token")

    // Authorize the right or else the secret is unavailable.
    try await loginRight.authorize(localizedReason: "Access sandcastle competition server")
    return try await loginRight.secret.rawData
}
