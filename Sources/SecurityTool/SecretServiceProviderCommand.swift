import ArgumentParser
import Foundation
import KeychainModel

/// `security secret-service enable|disable|status`: which program the session bus starts for
/// `org.freedesktop.secrets` (the Secret Service of secret-tool, libsecret and python keyring),
/// chosen by each user (docs/packaging.md).
///
/// The bus reads activation files from the user's directory before the system's
/// (<https://dbus.freedesktop.org/doc/dbus-daemon.1.html>, `<standard_session_servicedirs/>`), and
/// the first file that names a bus name wins: `enable` writes keychaind's there, `disable` removes
/// it (and only it), so that the system's provider (gnome-keyring's, oo7's) applies again.
struct SecretServiceProvider: ToolCommand {
    static let name = "secret-service"
    static let configuration = CommandConfiguration(
        commandName: Self.name,
        _superCommandName: "security",
        abstract: "Choose the program that provides the Secret Service for you (Linux only).",
        usage: "security secret-service enable | disable | status",
        discussion: HelpText.wrapped(
            """
            enable: the session bus starts keychaind for org.freedesktop.secrets from now on (at \
            the next start of a provider: a provider already running keeps the name until it \
            ends or you log out). It writes \
            $XDG_DATA_HOME/dbus-1/services/org.freedesktop.secrets.service, which the bus reads \
            before the system's files.

            A GNOME session also starts GNOME Keyring's Secret Service at every login, whatever \
            the bus would start (its autostart entry gnome-keyring-secrets.desktop): enable \
            turns that entry off for you with a file of the same name in \
            $XDG_CONFIG_HOME/autostart (Hidden=true). GNOME Keyring's login daemon and its SSH \
            and PKCS#11 parts still start.

            disable: removes those files if enable made them; the system's provider \
            (gnome-keyring, oo7) applies again.

            status: which file the bus would start, and its program.
            """))

    @Argument(help: ArgumentHelp("enable, disable or status.", valueName: "action"))
    var action: String

    func execute(in session: Session) throws -> Int32 {
        let environment = ProcessInfo.processInfo.environment
        let directories = ActivationDirectories(environment: environment)
        let autostart = AutostartDirectories(environment: environment)
        switch action {
        case "enable":
            try enable(directories)
            try turnOffAutostartedProviders(autostart)
        case "disable":
            try disable(directories)
            try turnOnAutostartedProviders(autostart)
        case "status":
            status(directories)
            autostartStatus(autostart)
        default: throw CommandFailure.usage("The action is enable, disable or status.")
        }
        return 0
    }

    private func enable(_ directories: ActivationDirectories) throws {
        let file = directories.userFile
        if let existing = try? String(contentsOfFile: file, encoding: .utf8), !existing.contains(Self.marker) {
            throw CommandFailure.failure(
                "\(file) exists and was not made by this command; move it away first")
        }
        let keychaind = Self.keychaindPath()
        let contents = """
            \(Self.marker)
            # Undo: security secret-service disable
            [D-BUS Service]
            Name=org.freedesktop.secrets
            Exec=\(keychaind) --secret-service

            """
        try FileManager.default.createDirectory(
            atPath: (file as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data(contents.utf8).write(to: URL(fileURLWithPath: file), options: .atomic)
        Console.out("org.freedesktop.secrets: keychaind (\(keychaind)), from \(file)\n")
    }

    private func disable(_ directories: ActivationDirectories) throws {
        let file = directories.userFile
        guard let existing = try? String(contentsOfFile: file, encoding: .utf8), existing.contains(Self.marker) else {
            Console.out("keychaind was not enabled for you; nothing to do\n")
            return
        }
        try FileManager.default.removeItem(atPath: file)
        status(directories)
    }

    private func status(_ directories: ActivationDirectories) {
        guard let (file, exec) = directories.provider(of: "org.freedesktop.secrets") else {
            Console.out("org.freedesktop.secrets: no provider; clients fail at once\n")
            return
        }
        Console.out("org.freedesktop.secrets: \(exec), from \(file)\n")
    }

    /// Turns off, for this user, each autostart entry of the system that starts another Secret
    /// Service at login (``AutostartDirectories/providerEntries``), with an entry of the same name
    /// in the user's autostart directory that says `Hidden=true` (the XDG Autostart
    /// specification's way). A file of that name the user made is left alone.
    private func turnOffAutostartedProviders(_ autostart: AutostartDirectories) throws {
        for entry in autostart.systemProviderEntries() {
            let file = autostart.userDirectory + "/" + entry
            if let existing = try? String(contentsOfFile: file, encoding: .utf8) {
                if !existing.contains(Self.marker) {
                    Console.out("\(file) is yours: left as it is\n")
                }
                continue
            }
            let contents = """
                \(Self.marker)
                # Undo: security secret-service disable
                [Desktop Entry]
                Type=Application
                Name=\(entry) (turned off: keychaind provides the Secret Service)
                Hidden=true

                """
            try FileManager.default.createDirectory(atPath: autostart.userDirectory, withIntermediateDirectories: true)
            try Data(contents.utf8).write(to: URL(fileURLWithPath: file), options: .atomic)
            Console.out("\(entry): not started at login any more, by \(file)\n")
        }
    }

    /// Removes the autostart entries ``turnOffAutostartedProviders(_:)`` made, and only them.
    private func turnOnAutostartedProviders(_ autostart: AutostartDirectories) throws {
        for entry in AutostartDirectories.providerEntries {
            let file = autostart.userDirectory + "/" + entry
            guard let existing = try? String(contentsOfFile: file, encoding: .utf8), existing.contains(Self.marker)
            else { continue }
            try FileManager.default.removeItem(atPath: file)
            Console.out("\(entry): started at login again\n")
        }
    }

    private func autostartStatus(_ autostart: AutostartDirectories) {
        for entry in autostart.systemProviderEntries() {
            let file = autostart.userDirectory + "/" + entry
            if let existing = try? String(contentsOfFile: file, encoding: .utf8),
                existing.split(separator: "\n").contains(where: {
                    $0.trimmingCharacters(in: .whitespaces) == "Hidden=true"
                })
            {
                Console.out("\(entry): not started at login, by \(file)\n")
            } else {
                Console.out("\(entry): started at login, and takes org.freedesktop.secrets first\n")
            }
        }
    }

    /// The first line of the files `enable` writes: what `disable` removes, and only them.
    static let marker = "# Made by `security secret-service enable` (Keychain for Linux)."

    /// keychaind beside this program (a build directory, /usr/bin), else /usr/bin/keychaind.
    static func keychaindPath() -> String {
        let own = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? ""
        let beside = (own as NSString).deletingLastPathComponent + "/keychaind"
        return FileManager.default.isExecutableFile(atPath: beside) ? beside : "/usr/bin/keychaind"
    }
}

/// The directories a session bus reads activation files from, in its order
/// (`<standard_session_servicedirs/>`): `$XDG_RUNTIME_DIR/dbus-1/services`,
/// `$XDG_DATA_HOME/dbus-1/services`, each of `$XDG_DATA_DIRS`, then `/usr/share/dbus-1/services`.
struct ActivationDirectories {
    var directories: [String]
    /// Where `enable` writes: the user's data directory's.
    var userFile: String

    init(environment: [String: String]) {
        let home = environment["HOME"] ?? NSHomeDirectory()
        let dataHome = environment["XDG_DATA_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? home + "/.local/share"
        let dataDirs = (environment["XDG_DATA_DIRS"].flatMap { $0.isEmpty ? nil : $0 } ?? "/usr/local/share:/usr/share")
            .split(separator: ":").map(String.init).filter { $0.hasPrefix("/") }
        var directories: [String] = []
        if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") {
            directories.append(runtime + "/dbus-1/services")
        }
        directories.append(dataHome + "/dbus-1/services")
        directories += dataDirs.map { $0 + "/dbus-1/services" }
        directories.append("/usr/share/dbus-1/services")
        self.directories = directories
        userFile = dataHome + "/dbus-1/services/org.freedesktop.secrets.service"
    }

    /// The first activation file that names `name`, and its `Exec` line.
    func provider(of name: String) -> (file: String, exec: String)? {
        for directory in directories {
            let files = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
                .filter { $0.hasSuffix(".service") }.sorted()
            for file in files {
                let path = directory + "/" + file
                guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { continue }
                let lines = text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
                guard lines.contains("Name=" + name) else { continue }
                let exec = lines.first { $0.hasPrefix("Exec=") }.map { String($0.dropFirst(5)) } ?? "(no Exec)"
                return (path, exec)
            }
        }
        return nil
    }
}

/// The directories of XDG autostart entries (the XDG Autostart specification,
/// <https://specifications.freedesktop.org/autostart-spec/latest/>): the user's
/// (`$XDG_CONFIG_HOME/autostart`), whose entries replace the system's of the same name, then each
/// of `$XDG_CONFIG_DIRS` (`/etc/xdg/autostart`).
struct AutostartDirectories {
    /// The entries of other providers that a desktop session starts at login and that take
    /// `org.freedesktop.secrets` before any client asks: GNOME Keyring's Secret Service part
    /// (gnome-keyring's `gnome-keyring-secrets.desktop`, run by gnome-session).
    static let providerEntries = ["gnome-keyring-secrets.desktop"]

    var userDirectory: String
    var systemDirectories: [String]

    init(environment: [String: String]) {
        let home = environment["HOME"] ?? NSHomeDirectory()
        let configHome = environment["XDG_CONFIG_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? home + "/.config"
        userDirectory = configHome + "/autostart"
        systemDirectories = (environment["XDG_CONFIG_DIRS"].flatMap { $0.isEmpty ? nil : $0 } ?? "/etc/xdg")
            .split(separator: ":").map(String.init).filter { $0.hasPrefix("/") }.map { $0 + "/autostart" }
    }

    /// The ``providerEntries`` this machine has in a system directory.
    func systemProviderEntries() -> [String] {
        Self.providerEntries.filter { entry in
            systemDirectories.contains { FileManager.default.fileExists(atPath: $0 + "/" + entry) }
        }
    }
}
