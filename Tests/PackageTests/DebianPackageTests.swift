import Foundation
import Testing

/// The Debian package as `scripts/make-deb` builds it (debug configuration here, to share the
/// build's time; the script is the same), inspected with `dpkg-deb` and `lintian`, and installed,
/// upgraded, removed and purged in a throwaway root by the real `dpkg` with its real maintainer
/// scripts (`--force-script-chrootless`: they run here with `DPKG_ROOT` set, as dpkg runs them
/// for a root without a shell).
@Suite(.serialized, .timeLimit(.minutes(30)))
struct DebianPackageTests {
    /// The repository: three directories up from this file.
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path

    /// The package, built once for the suite, on a thread of its own: the build takes minutes, and
    /// a test that waited for it on one of the test process's two pooled threads would stall every
    /// other suite behind it.
    static let package = Task<Result<String, PackageFailure>, Never> {
        let output = NSTemporaryDirectory() + "keychain-deb-" + UUID().uuidString.prefix(8)
        do {
            // At the lowest priority: the other suites run meanwhile, and their timing matters more.
            let built = try await run(
                "/usr/bin/nice",
                [
                    "-n", "19", repository + "/scripts/make-deb", "--configuration", "debug", "--output", output,
                    "--scratch-path", repository + "/.build/deb-test",
                ], directory: repository)
            guard built.status == 0 else {
                return .failure(PackageFailure(text: "make-deb exited \(built.status): \(built.errors.suffix(3000))"))
            }
            return .success(built.output.trimmingCharacters(in: .whitespacesAndNewlines))
        } catch {
            return .failure(PackageFailure(text: "\(error)"))
        }
    }

    struct PackageFailure: Error, CustomStringConvertible {
        var text: String
        var description: String { text }
    }

    struct Outcome {
        var status: Int32
        var output: String
        var errors: String
    }

    /// Runs `program` with `arguments` and waits for it on a thread of its own, never on the
    /// cooperative pool; its output and errors captured.
    static func run(
        _ program: String, _ arguments: [String], directory: String? = nil, environment: [String: String]? = nil,
        input: String? = nil
    ) async throws -> Outcome {
        try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(
                    with: Result {
                        try runWaiting(
                            program, arguments, directory: directory, environment: environment, input: input)
                    })
            }.start()
        }
    }

    /// Runs `program` with `arguments`, blocking the calling thread until it exits.
    private static func runWaiting(
        _ program: String, _ arguments: [String], directory: String?, environment: [String: String]?,
        input: String?
    ) throws -> Outcome {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        process.environment = environment ?? ProcessInfo.processInfo.environment
        // Errors to a file, output through a pipe read to its end: neither can fill and stall.
        let errorsFile = NSTemporaryDirectory() + "keychain-deb-errors-" + UUID().uuidString
        _ = FileManager.default.createFile(atPath: errorsFile, contents: nil)
        defer { try? FileManager.default.removeItem(atPath: errorsFile) }
        let errors = try FileHandle(forWritingTo: URL(fileURLWithPath: errorsFile))
        let output = Pipe()
        process.standardOutput = output
        process.standardError = errors
        let inputPipe = input.map { _ in Pipe() }
        process.standardInput = inputPipe ?? FileHandle.nullDevice
        try process.run()
        if let inputPipe, let input {
            // Small (a password and a newline): fits in the pipe, so writing cannot stall.
            inputPipe.fileHandleForWriting.write(Data(input.utf8))
            try inputPipe.fileHandleForWriting.close()
        }
        let outputBytes = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        try errors.close()
        let errorBytes = (try? Data(contentsOf: URL(fileURLWithPath: errorsFile))) ?? Data()
        return Outcome(
            status: process.terminationStatus, output: String(decoding: outputBytes, as: UTF8.self),
            errors: String(decoding: errorBytes, as: UTF8.self))
    }

    static func builtPackage() async throws -> String { try await package.value.get() }

    static let multiarch = "x86_64-linux-gnu"

    @Test(
        "the package holds the programs, units, activation files, portal file, PAM module, completions and manual pages"
    )
    func contents() async throws {
        let package = try await Self.builtPackage()
        let listing = try await Self.run("/usr/bin/dpkg-deb", ["-c", package])
        #expect(listing.status == 0, "\(listing.errors)")
        for path in [
            "./usr/bin/security", "./usr/bin/security-linux", "./usr/bin/keychaind",
            "./usr/lib/\(Self.multiarch)/security/pam_keychain.so", "./usr/share/pam-configs/keychain",
            "./usr/lib/systemd/user/keychaind.socket", "./usr/lib/systemd/user/keychaind.service",
            "./usr/lib/systemd/user/keychaind-secret-service.service",
            "./usr/share/keychain/dbus-1/services/org.freedesktop.secrets.service", "./usr/share/keychain/apps.d/",
            "./usr/share/dbus-1/services/org.freedesktop.impl.portal.desktop.keychain.service",
            "./usr/share/xdg-desktop-portal/portals/keychain.portal",
            "./usr/share/polkit-1/actions/org.keychainlinux.authenticate.policy",
            "./usr/share/bash-completion/completions/security", "./usr/share/zsh/vendor-completions/_security",
            "./usr/share/fish/vendor_completions.d/security.fish", "./usr/share/man/man1/security.1.gz",
            "./usr/share/man/man1/security-linux.1.gz", "./usr/share/man/man8/keychaind.8.gz",
            "./usr/share/doc/keychain-linux/copyright", "./usr/share/doc/keychain-linux/changelog.gz",
        ] {
            #expect(listing.output.contains(" " + path + "\n"), "\(path) in the package")
        }
        let fields = try await Self.run("/usr/bin/dpkg-deb", ["-f", package, "Package", "Version", "Depends"])
        #expect(fields.output.contains("Package: keychain-linux"))
        #expect(fields.output.contains("libc6") && fields.output.contains("libpam0g"), "\(fields.output)")
    }

    @Test("lintian finds no error in it")
    func lintian() async throws {
        let package = try await Self.builtPackage()
        let lintian = try await Self.run("/usr/bin/lintian", ["--fail-on", "error", "--no-tag-display-limit", package])
        #expect(lintian.status == 0, "\(lintian.output)\(lintian.errors)")
        #expect(!lintian.output.split(separator: "\n").contains { $0.hasPrefix("E: ") }, "\(lintian.output)")
    }

    @Test("the programs carry the Swift runtime: no Swift library and no run path is needed beside them")
    func staticSwiftRuntime() async throws {
        let package = try await Self.builtPackage()
        let root = try ThrowawayRoot()
        let extracted = try await Self.run("/usr/bin/dpkg-deb", ["-x", package, root.path])
        #expect(extracted.status == 0)
        for program in ["security", "security-linux", "keychaind"] {
            let dynamic = try await Self.run("/usr/bin/readelf", ["-d", root.path + "/usr/bin/" + program])
            #expect(dynamic.status == 0)
            #expect(!dynamic.output.contains("libswift") && !dynamic.output.contains("libFoundation"), "\(program)")
            #expect(!dynamic.output.contains("RUNPATH") && !dynamic.output.contains("RPATH"), "\(dynamic.output)")
        }
        // The PAM profile: optional in each stack, and sessions of cron and other non-interactive
        // services left alone.
        let profile = try String(contentsOfFile: root.path + "/usr/share/pam-configs/keychain", encoding: .utf8)
        #expect(profile.contains("Session-Interactive-Only: yes") && profile.contains("optional\tpam_keychain.so"))
        // They run, with no toolchain on the library path.
        let help = try await Self.run(
            root.path + "/usr/bin/keychaind", ["--help"], environment: ["PATH": "/usr/bin:/bin"])
        #expect(help.status == 0 && help.output.contains("Usage: keychaind"), "\(help.errors)")
        let home = try root.make("home")
        let environment = [
            "HOME": home, "PATH": "/usr/bin:/bin", "KEYCHAIN_AGENT": "off", "XDG_RUNTIME_DIR": home,
        ]
        let security = root.path + "/usr/bin/security"
        let add = try await Self.run(
            security, ["add-generic-password", "-a", "me", "-s", "pkg", "-w", "v1"], environment: environment)
        #expect(add.status == 0, "\(add.errors)")
        let find = try await Self.run(
            security, ["find-generic-password", "-a", "me", "-s", "pkg", "-w"], environment: environment)
        #expect(find.status == 0 && find.output == "v1\n", "\(find.errors)")
    }

    @Test(
        "installed, upgraded, removed and purged by dpkg: the socket is enabled once, a user's choice is kept, nothing stays enabled and no keychain is deleted"
    )
    func lifecycle() async throws {
        let package = try await Self.builtPackage()
        let root = try ThrowawayRoot()
        try root.prepareDpkgDatabase()
        let wanted = root.path + "/etc/systemd/user/sockets.target.wants/keychaind.socket"
        // A user's keychain in the root, which no step may touch.
        let keychains = try root.make("home/u/.local/share/keychains")
        let keychain = keychains + "/login.keychain-db"
        try Data("a keychain".utf8).write(to: URL(fileURLWithPath: keychain))

        var installed = try await root.dpkg(["--install", package])
        #expect(installed.status == 0, "\(installed.output)\(installed.errors)")
        #expect(FileManager.default.isExecutableFile(atPath: root.path + "/usr/bin/keychaind"))
        #expect(root.isLink(wanted), "the socket is enabled for every user")
        let enabled = try await root.systemctl(["--global", "is-enabled", "keychaind.socket"])
        #expect(enabled.output.trimmingCharacters(in: .whitespacesAndNewlines) == "enabled", "\(enabled)")
        #expect(root.status.contains("Status: install ok installed"))

        // The administrator turns the socket off; an upgrade keeps that choice.
        #expect(try await root.systemctl(["--global", "disable", "keychaind.socket"]).status == 0)
        #expect(!root.isLink(wanted))
        installed = try await root.dpkg(["--install", package])
        #expect(installed.status == 0, "\(installed.output)\(installed.errors)")
        #expect(!root.isLink(wanted), "an upgrade does not enable what was turned off")
        // Turned on again, it stays on through the next upgrade.
        #expect(try await root.systemctl(["--global", "enable", "keychaind.socket"]).status == 0)
        installed = try await root.dpkg(["--install", package])
        #expect(installed.status == 0)
        #expect(root.isLink(wanted))

        let removed = try await root.dpkg(["--remove", "keychain-linux"])
        #expect(removed.status == 0, "\(removed.output)\(removed.errors)")
        #expect(!FileManager.default.fileExists(atPath: root.path + "/usr/bin/keychaind"))
        // As Debian's packages leave a removed unit: masked (systemd will not start it) until purged.
        let state = try await root.systemctl(["--global", "is-enabled", "keychaind.socket"])
        #expect(state.output.trimmingCharacters(in: .whitespacesAndNewlines) == "masked", "\(state)")

        let purged = try await root.dpkg(["--purge", "keychain-linux"])
        #expect(purged.status == 0, "\(purged.output)\(purged.errors)")
        #expect(root.filesUnder("etc/systemd").isEmpty, "\(root.filesUnder("etc/systemd"))")
        #expect(root.filesUnder("usr").isEmpty, "\(root.filesUnder("usr"))")
        #expect(
            try Data(contentsOf: URL(fileURLWithPath: keychain)) == Data("a keychain".utf8),
            "keychains are never deleted")
    }
}

/// A directory that a test installs into, removed after it.
final class ThrowawayRoot {
    let path: String

    init() throws {
        path = NSTemporaryDirectory() + "keychain-root-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    func make(_ relative: String) throws -> String {
        let directory = path + "/" + relative
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return directory
    }

    /// An empty dpkg database, as a fresh system has.
    func prepareDpkgDatabase() throws {
        let admin = try make("var/lib/dpkg")
        _ = try make("var/lib/dpkg/info")
        _ = try make("var/lib/dpkg/updates")
        for file in ["status", "available"] {
            _ = FileManager.default.createFile(atPath: admin + "/" + file, contents: Data())
        }
    }

    /// `dpkg --root` with the maintainer scripts run here (`DPKG_ROOT` set), and the package's
    /// dependencies taken as present (this root has no libc package to satisfy them).
    func dpkg(_ arguments: [String]) async throws -> DebianPackageTests.Outcome {
        try await DebianPackageTests.run(
            "/usr/bin/dpkg",
            ["--root=" + path, "--force-script-chrootless", "--force-depends", "--force-not-root"] + arguments,
            environment: ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin"])
    }

    /// `systemctl --root` on this root, as an administrator would run it.
    func systemctl(_ arguments: [String]) async throws -> DebianPackageTests.Outcome {
        try await DebianPackageTests.run(
            "/usr/bin/systemctl", ["--root=" + path] + arguments, environment: ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin"]
        )
    }

    var status: String { (try? String(contentsOfFile: path + "/var/lib/dpkg/status", encoding: .utf8)) ?? "" }

    func isLink(_ file: String) -> Bool {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: file)) != nil
    }

    /// Every file and link under `relative`, as paths relative to the root.
    func filesUnder(_ relative: String) -> [String] {
        guard let walker = FileManager.default.enumerator(atPath: path + "/" + relative) else { return [] }
        var found: [String] = []
        while let entry = walker.nextObject() as? String {
            var isDirectory: ObjCBool = false
            let full = path + "/" + relative + "/" + entry
            if isLink(full)
                || (FileManager.default.fileExists(atPath: full, isDirectory: &isDirectory) && !isDirectory.boolValue)
            {
                found.append(relative + "/" + entry)
            }
        }
        return found
    }
}
