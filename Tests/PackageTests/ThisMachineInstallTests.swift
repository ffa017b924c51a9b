import Foundation
import Testing

/// The package installed on this machine itself: its own root file system, dpkg database, PAM
/// stacks and accounts, with every write the installation makes kept in memory and dropped
/// afterwards (an overlay over `/` in a mount namespace of the test's own). Unlike the throwaway
/// root, nothing is forced: dpkg checks the dependencies against what this machine has installed,
/// and `pam-auth-update` really edits the login stacks (a root other than `/` skips it).
extension DebianPackageTests {
    @Test(
        "installed on this machine: dependencies met, the module in the login stack, a login unlocks the login keychain; removed and purged: the stack as before, the keychain kept"
    )
    func installedOnThisMachine() async throws {
        let package = try await Self.builtPackage()
        let machine = try await ThisMachine.start(package: package)
        defer { machine.stop() }
        let stacks = ["common-auth", "common-session", "common-password"]
        let before = stacks.map { machine.contents(of: "/etc/pam.d/" + $0) }
        #expect(!before.contains { $0.contains("pam_keychain.so") }, "the machine's stacks start without the module")

        let installed = try await machine.run(["dpkg", "--install", ThisMachine.packagePath])
        #expect(installed.status == 0, "\(installed.output)\(installed.errors)")
        for stack in stacks {
            #expect(machine.contents(of: "/etc/pam.d/" + stack).contains("pam_keychain.so"), "\(stack)")
        }
        #expect(
            !machine.contents(of: "/etc/pam.d/common-session-noninteractive").contains("pam_keychain.so"),
            "cron's and other non-interactive sessions are left alone")
        let enabled = try await machine.run(["systemctl", "--global", "is-enabled", "keychaind.socket"])
        #expect(enabled.output.trimmingCharacters(in: .whitespacesAndNewlines) == "enabled", "\(enabled)")

        // A person logs in through the machine's own stacks, with the installed module and helper.
        let user = "keychain-machine"
        let password = "Pw-" + UUID().uuidString.prefix(12)
        try await machine.addAccount(user, password: password)
        let login = try await machine.run(
            ["pamtester", ThisMachine.service, user, "authenticate", "open_session"], input: password + "\n")
        #expect(login.status == 0, "\(login.output)\(login.errors)")
        let keychain = "/home/\(user)/.local/share/keychains/login.keychain-db"
        #expect(machine.exists(keychain), "the first login made the login keychain")
        // Unlocked for the rest of the session: the installed `security` adds and reads with no password.
        let add = try await machine.run(
            as: user, ["security", "add-generic-password", "-s", "machine", "-a", user, "-w", "kept"])
        #expect(add.status == 0, "\(add.output)\(add.errors)")
        let found = try await machine.run(as: user, ["security", "find-generic-password", "-s", "machine", "-w"])
        #expect(found.status == 0 && found.output == "kept\n", "\(found.errors)")

        let removed = try await machine.run(["dpkg", "--remove", "keychain-linux"])
        #expect(removed.status == 0, "\(removed.output)\(removed.errors)")
        let after = stacks.map { machine.contents(of: "/etc/pam.d/" + $0) }
        #expect(after == before, "the stacks are as they were")
        // With the module gone, the same login still goes through.
        let again = try await machine.run(
            ["pamtester", ThisMachine.service, user, "authenticate"], input: password + "\n")
        #expect(again.status == 0, "\(again.output)\(again.errors)")

        let purged = try await machine.run(["dpkg", "--purge", "keychain-linux"])
        #expect(purged.status == 0, "\(purged.output)\(purged.errors)")
        #expect(!machine.exists("/usr/bin/keychaind") && !machine.exists("/usr/share/pam-configs/keychain"))
        let state = try await machine.run(["systemctl", "--global", "is-enabled", "keychaind.socket"])
        #expect(state.status != 0, "no unit is left enabled: \(state.output)")
        #expect(machine.exists(keychain), "keychains are never deleted")
    }
}

/// This machine's root, writable in a mount namespace of its own: an overlay over `/` whose
/// changes live in memory, with the machine's `/proc`, `/sys` and `/dev`. A process chrooted
/// into it holds the namespace; commands join it with `nsenter`, and its files are read through
/// `/proc/PID/root`. Stopping kills every process in the namespace, which drops the overlay.
final class ThisMachine {
    /// Where the package is inside the overlay.
    static let packagePath = "/tmp/keychain-linux.deb"
    /// A PAM service of the test's own that is what Debian's login services include: the common
    /// stacks `pam-auth-update` writes.
    static let service = "keychain-machine-login"

    let holder: Process
    var root: String { "/proc/\(holder.processIdentifier)/root" }

    private init(holder: Process) { self.holder = holder }

    static func start(package: String) async throws -> ThisMachine {
        // /mnt is the overlay's scratch space in the new namespace only; the machine's stays as it was.
        let script = """
            set -eu
            mount -t tmpfs -o mode=0755 keychain-machine /mnt
            mkdir /mnt/upper /mnt/work /mnt/root
            mount -t overlay keychain-machine -o lowerdir=/,upperdir=/mnt/upper,workdir=/mnt/work /mnt/root
            for d in proc sys dev; do mount --rbind "/$d" "/mnt/root/$d"; done
            cp "$1" /mnt/root\(packagePath)
            printf '%s\\n' '@include common-auth' '@include common-account' '@include common-session' \\
                '@include common-password' > /mnt/root/etc/pam.d/\(service)
            # "ready" is said from inside the overlay: no command may join before the chroot.
            exec chroot /mnt/root /bin/sh -c 'echo ready; exec /bin/sleep 3600'
            """
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
        holder.arguments = ["--mount", "--propagation", "private", "/bin/bash", "-c", script, "machine", package]
        let output = Pipe()
        holder.standardOutput = output
        holder.standardInput = FileHandle.nullDevice
        try holder.run()
        let machine = ThisMachine(holder: holder)
        // The first line says the overlay is in place (or the script failed and the pipe ends).
        let ready = try await DebianPackageTests.readLine(output.fileHandleForReading)
        guard ready == "ready", holder.isRunning, machine.isOverlay else {
            machine.stop()
            throw DebianPackageTests.PackageFailure(
                text: "could not lay an overlay over / (this test needs root and overlayfs): \(ready ?? "no output")")
        }
        return machine
    }

    /// Whether the holder's root is the overlay, not this machine's own `/` (another file system).
    var isOverlay: Bool {
        var overlay = stat()
        var host = stat()
        return stat(root + "/", &overlay) == 0 && stat("/", &host) == 0 && overlay.st_dev != host.st_dev
    }

    /// Runs `command` as root in the overlay, with a clean environment; never on this machine's
    /// own root.
    func run(_ command: [String], input: String? = nil) async throws -> DebianPackageTests.Outcome {
        guard isOverlay else {
            throw DebianPackageTests.PackageFailure(text: "the overlay is gone: \(command[0]) not run")
        }
        return try await DebianPackageTests.run(
            "/usr/bin/nsenter",
            ["--target", "\(holder.processIdentifier)", "--mount", "--root", "--wd=/", "--"]
                + ["/usr/bin/env", "-i", "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "DEBIAN_FRONTEND=noninteractive"]
                + command,
            environment: [:], input: input)
    }

    /// Runs `command` as `user` in the overlay, with the environment a login session gives it.
    func run(as user: String, _ command: [String]) async throws -> DebianPackageTests.Outcome {
        let ids = try await run(["id", "-u", user]).output.trimmingCharacters(in: .whitespacesAndNewlines)
        return try await run(
            ["setpriv", "--reuid=\(user)", "--regid=\(user)", "--init-groups", "--"]
                + ["env", "HOME=/home/\(user)", "USER=\(user)", "XDG_RUNTIME_DIR=/run/user/\(ids)"] + command)
    }

    /// An account with `password` and the runtime directory systemd-logind would make for it.
    func addAccount(_ user: String, password: String) async throws {
        let steps: [([String], String?)] = [
            (["useradd", "--create-home", "--shell", "/bin/sh", user], nil),
            (["chpasswd"], "\(user):\(password)\n"),
            (["sh", "-c", "d=/run/user/$(id -u \(user)); mkdir -p $d && chown \(user): $d && chmod 0700 $d"], nil),
        ]
        for (command, input) in steps {
            let done = try await run(command, input: input)
            guard done.status == 0 else {
                throw DebianPackageTests.PackageFailure(text: "\(command[0]) failed: \(done.errors)")
            }
        }
    }

    func contents(of path: String) -> String {
        (try? String(contentsOfFile: root + path, encoding: .utf8)) ?? ""
    }

    func exists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: root + path) }

    /// Kills every process in the overlay's namespace (the holder and anything a login started
    /// there, such as the user's agent), which unmounts it.
    func stop() {
        let namespace = try? FileManager.default.destinationOfSymbolicLink(
            atPath: "/proc/\(holder.processIdentifier)/ns/mnt")
        if let namespace, let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") {
            for entry in entries {
                guard let pid = Int32(entry), pid != holder.processIdentifier else { continue }
                if (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(entry)/ns/mnt")) == namespace {
                    kill(pid, SIGKILL)
                }
            }
        }
        if holder.isRunning { kill(holder.processIdentifier, SIGKILL) }
        holder.waitUntilExit()
    }
}

extension DebianPackageTests {
    /// The first line `handle` gives, read on a thread of its own; `nil` when it ends first.
    static func readLine(_ handle: FileHandle) async throws -> String? {
        await withCheckedContinuation { continuation in
            Thread {
                var line = Data()
                while true {
                    let byte = handle.readData(ofLength: 1)
                    if byte.isEmpty || byte == Data("\n".utf8) { break }
                    line.append(byte)
                }
                continuation.resume(returning: line.isEmpty ? nil : String(decoding: line, as: UTF8.self))
            }.start()
        }
    }
}
