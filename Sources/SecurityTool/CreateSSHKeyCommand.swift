import ArgumentParser
import Foundation
import KeychainModel
import Security

/// `security create-ssh-key` (Linux only): an SSH key that is a Secure Enclave key, made in this
/// machine's TPM when it has one, and served by keychaind's SSH agent.
struct CreateSSHKey: ToolCommand {
    static let name = "create-ssh-key"
    static let configuration = CommandConfiguration(
        commandName: Self.name,
        _superCommandName: "security",
        abstract: "Create an SSH key whose private key never leaves the keychain's Secure Enclave (Linux only).",
        usage: "security create-ssh-key [-C comment] [-p presence|passcode|biometry|companion] [keychain]",
        discussion: HelpText.wrapped(
            """
            Makes a P-256 Secure Enclave key (kSecAttrTokenIDSecureEnclave), stored in the keychain \
            (the default keychain when none is given), and prints its public key as ssh-keygen \
            writes one: put that line in a server's authorized_keys. keychaind's SSH agent lists it \
            (ssh-add -L) and signs with it as an ecdsa-sha2-nistp256 key. On a machine with a TPM \
            (security secure-enclave) the private key is made in the TPM and never leaves it; \
            without, it stays in keychaind's memory and is never given to any program. It cannot be \
            exported or copied to another machine. Delete it with security delete-key … or its \
            keychain item. With -p, each signature asks for the person first (the key's access \
            control, as SecAccessControlCreateWithFlags makes it): presence is the login password \
            (or whatever polkit's PAM stack asks), passcode the password alone, biometry an \
            enrolled finger (the set enrolled now), companion a touch of a paired security key.
            """))

    @Option(name: .customShort("C"), help: ArgumentHelp("The key's comment (its label).", valueName: "comment"))
    var comment: String?

    @Option(
        name: .customShort("p"),
        help: ArgumentHelp(
            "Ask for the person at each signature: presence, passcode, biometry or companion.",
            valueName: "protection"))
    var protection: Protection?

    /// What each signature asks for: the access control flag it gives the key.
    enum Protection: String, ExpressibleByArgument, CaseIterable {
        case presence, passcode, biometry, companion

        var flags: SecAccessControlCreateFlags {
            switch self {
            case .presence: .userPresence
            case .passcode: .devicePasscode
            case .biometry: .biometryCurrentSet
            case .companion: .companion
            }
        }
    }

    @Argument(help: ArgumentHelp("The keychain that keeps the key.", valueName: "keychain"))
    var keychain: String?

    func execute(in session: Session) throws -> Int32 {
        let label = comment ?? Self.defaultComment
        let target: OpenKeychain
        do {
            target = try session.open(keychain, createDefault: keychain == nil)
        } catch {
            throw CommandFailure.status(of: error, "SecKeychainOpen \(keychain ?? "<default>")").withResult(1)
        }
        let publicKey: Data
        do {
            publicKey = try withSecurityKeychain(target, session: session) {
                var error: Unmanaged<CFError>?
                var privateAttributes: [CFString: Any] = [
                    kSecAttrIsPermanent: true, kSecAttrApplicationTag: TokenKeys.sshApplicationTag,
                    kSecAttrLabel: label,
                ]
                if let protection {
                    guard
                        let access = SecAccessControlCreateWithFlags(
                            nil, kSecAttrAccessibleWhenUnlockedThisDeviceOnly,
                            protection.flags.union(.privateKeyUsage), &error)
                    else { throw KeychainError(.parameter) }
                    privateAttributes[kSecAttrAccessControl] = access
                }
                let parameters: [CFString: Any] = [
                    kSecAttrKeyType: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeySizeInBits: 256,
                    kSecAttrTokenID: kSecAttrTokenIDSecureEnclave, kSecPrivateKeyAttrs: privateAttributes,
                ]
                guard let key = SecKeyCreateRandomKey(parameters as CFDictionary, &error),
                    let publicKey = SecKeyCopyPublicKey(key),
                    let bytes = SecKeyCopyExternalRepresentation(publicKey, &error) as Data?
                else {
                    let status = OSStatus(truncatingIfNeeded: error?.takeRetainedValue().code ?? Int(errSecParam))
                    throw KeychainError(KeychainError.Code(rawValue: status))
                }
                return bytes
            }
        } catch {
            let status = CommandFailure.osStatus(of: error)
            throw CommandFailure.failure("SecKeyCreateRandomKey: \(statusMessage(status))")
        }
        Console.out("ecdsa-sha2-nistp256 \(Self.blob(publicKey).base64EncodedString()) \(label)\n")
        return 0
    }

    /// `user@host`, as ssh-keygen's default comment.
    static var defaultComment: String {
        var host = [CChar](repeating: 0, count: 256)
        gethostname(&host, host.count)
        return NSUserName() + "@" + String(cString: host)
    }

    /// The `ecdsa-sha2-nistp256` public key blob (RFC 5656 §3.1): three SSH strings.
    static func blob(_ point: Data) -> Data {
        var blob = Data()
        for field in [Data("ecdsa-sha2-nistp256".utf8), Data("nistp256".utf8), point] {
            withUnsafeBytes(of: UInt32(field.count).bigEndian) { blob.append(contentsOf: $0) }
            blob.append(field)
        }
        return blob
    }
}
