import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The user's keychain preferences: the search list and the default keychain.
///
/// macOS keeps these in the user's preference domain; here they live in one small JSON file,
/// `${XDG_CONFIG_HOME:-$HOME/.config}/keychain/preferences.json`, mode 0600 in a 0700
/// directory, replaced atomically on every change:
///
/// ```json
/// {
///   "defaultKeychain" : "/home/me/.local/share/keychains/build.keychain-db",
///   "searchList" : ["/home/me/.local/share/keychains/login.keychain-db"],
///   "version" : 1
/// }
/// ```
///
/// A missing key means "not set": the default keychain is then the engine's
/// (`KEYCHAIN_DEFAULT_PATH`, else `login.keychain-db`) and the search list holds the default
/// keychain alone.
struct Preferences: Codable, Equatable {
    /// The format version of the file.
    var version: Int = 1
    /// The absolute path of the default keychain, when one was set with `default-keychain -s`.
    var defaultKeychain: String?
    /// The absolute paths of the keychains searched when a command names none, when set.
    var searchList: [String]?

    /// The file's name inside the configuration directory.
    static let fileName = "preferences.json"

    /// Loads the preferences; a missing file gives empty preferences.
    /// - Throws: ``CommandFailure`` when the file exists but cannot be read or parsed.
    static func load(from path: String) throws -> Preferences {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        if fd < 0 {
            if errno == ENOENT { return Preferences() }
            throw CommandFailure.failure(
                "cannot read the keychain preferences \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            bytes += chunk[0..<count]
            if bytes.count > 1 << 20 { break }
        }
        do {
            return try JSONDecoder().decode(Preferences.self, from: Data(bytes))
        } catch {
            throw CommandFailure.failure(
                "the keychain preferences file \(path) is not valid; fix or remove it")
        }
    }

    /// Writes the preferences atomically with mode 0600, creating the directory (0700).
    /// - Throws: ``CommandFailure`` when the file cannot be written.
    func save(to path: String) throws {
        let directory = (path as NSString).deletingLastPathComponent
        do {
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
        } catch {
            throw CommandFailure.failure("cannot create the directory \(directory)")
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(self) else {
            throw CommandFailure.failure("cannot encode the keychain preferences")
        }
        let temporary = "\(path).\(getpid()).tmp"
        unlink(temporary)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw CommandFailure.failure(
                "cannot write the keychain preferences \(path): \(String(cString: strerror(errno)))")
        }
        var ok = fchmod(fd, 0o600) == 0
        let bytes = [UInt8](data) + [0x0A]
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while ok && offset < buffer.count {
                let written = write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 && errno == EINTR { continue }
                if written <= 0 { ok = false }
                offset += max(written, 0)
            }
        }
        ok = ok && fsync(fd) == 0
        close(fd)
        guard ok, rename(temporary, path) == 0 else {
            unlink(temporary)
            throw CommandFailure.failure("cannot write the keychain preferences \(path)")
        }
    }
}
