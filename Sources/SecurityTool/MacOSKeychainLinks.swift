import Foundation
import KeychainModel
import KeychainLibc

/// The names macOS gives keychains on disk, kept as links in `~/Library/Keychains` for the
/// keychains a script creates by such a path (issue 56): fastlane looks for the file itself
/// (`FastlaneCore::Helper.keychain_path` tries `NAME-db`, `NAME.keychain-db`, `NAME` and
/// `NAME.keychain` there) before it runs `security`. The link points at the keychain's real
/// file in the keychains directory; the tool always resolves a `~/Library/Keychains` path to
/// that file first, so the engine, which refuses a link at a keychain's path, never opens one.
extension Session {
    /// After `create-keychain NAME` made the keychain at `path`: when NAME is a path in
    /// `~/Library/Keychains`, the link macOS's file name would be (`NAME-db`, as macOS adds `-db`
    /// to a name without it) made to point at `path`. Nothing is replaced; a failure to make the
    /// link leaves the keychain as it is.
    func linkMacOSName(_ name: String, to path: String) {
        guard paths.macOSKeychainName(name) != nil else { return }
        let file = (name as NSString).lastPathComponent
        let link = paths.macOSKeychainsDirectory + "/" + (file.hasSuffix("-db") ? file : file + "-db")
        try? FileManager.default.createDirectory(
            atPath: paths.macOSKeychainsDirectory, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        _ = symlink(path, link)
    }

    /// After the keychain at `path` was deleted: the links in `~/Library/Keychains` that
    /// pointed at it are removed (no other file there is touched).
    func unlinkMacOSNames(of path: String) {
        let directory = paths.macOSKeychainsDirectory
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
        for entry in entries {
            let link = directory + "/" + entry
            if (try? FileManager.default.destinationOfSymbolicLink(atPath: link)) == path { unlink(link) }
        }
    }
}
