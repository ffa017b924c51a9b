import Foundation
import KeychainClient
import KeychainModel
import KeychainLibc

/// macOS's System keychain, `/Library/Keychains/System.keychain`, which
/// `sudo security add-trusted-cert -d -k /Library/Keychains/System.keychain rootCA.pem` names
/// (mkcert's install, the usual "trust my development CA" recipe).
///
/// On Linux it is a keychain of root's, `/var/lib/keychain/System.keychain-db`, under a device key
/// of its own beside it (`/var/lib/keychain/device-key`), so that it does not depend on whose home
/// `sudo` left in `HOME`. As on macOS it always exists: naming it creates it, without a password.
/// This process opens it itself, never through a session agent (a user's agent is not root's).
/// Only root may use it; anyone else is told to use `sudo`. Its names and file are
/// ``KeychainClient/KeychainSelection``'s (`KEYCHAIN_SYSTEM_DIRECTORY` names another directory,
/// for tests).
enum SystemKeychain {
    /// Opens it, creating its directory, device key and file on first use.
    /// - Throws: ``CommandFailure`` for anyone but root; the engine's errors otherwise.
    static func open(configuration: KeychainConfiguration, selection: KeychainSelection) throws -> any KeychainHandle {
        guard geteuid() == 0 else {
            throw CommandFailure.failure(
                "the System keychain (/Library/Keychains/System.keychain) is root's on Linux: run the command with sudo"
            )
        }
        let directory = selection.systemDirectory
        if mkdir(directory, 0o700) != 0 && errno != EEXIST {
            throw CommandFailure.failure("cannot create \(directory): \(String(cString: strerror(errno)))")
        }
        var configuration = configuration
        configuration.deviceKey = .file(at: directory + "/device-key")
        let path = selection.systemKeychain
        return try Keychains.openInProcessCreatingIfMissing(at: selection.systemKeychain, configuration: configuration)
    }
}
