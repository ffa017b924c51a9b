import Foundation

/// Where this project's executables find each other: `keychaind` and `security-linux` are
/// installed beside `security` (and beside any program linking the library, in a build
/// directory).
package enum Executables {
    /// The path `name` has beside the running executable (`/proc/self/exe`, links resolved), or
    /// `nil` when that path cannot be read. Whether a file is there is the caller's to check.
    package static func besideThisOne(_ name: String) -> String? {
        guard let running = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") else {
            return nil
        }
        return URL(fileURLWithPath: running).deletingLastPathComponent().path + "/" + name
    }
}
