import Foundation
import KeychainLibc

/// The login unlock as a login runs it: a PAM transaction (`authenticate`, then `open_session`)
/// through `pam_keychain.so`, driven by `pamtester` under Debian's `libpam-wrapper` (a private
/// PAM service directory, as the module's tests use), for the user running the benchmark.
///
/// The stack: `pam_exec.so expose_authtok` asks for the password (from `pamtester`'s standard
/// input) and sets it as the stack's password, standing in for `pam_unix`, which would check the
/// account's real password; `pam_keychain.so` keeps it; at the session, `pam_env.so` gives the
/// benchmark's directories and agent socket as the PAM environment (as `pam_systemd` gives
/// `XDG_RUNTIME_DIR` at a login), and `pam_keychain.so` hands the password to `keychaind --pam
/// login` as the user.
struct PAMLogin {
    let pamtester: String
    let wrapper: String
    let serviceDirectory: String
    let user: String
    let input: Data

    /// The service's name in ``serviceDirectory``.
    static let service = "keychain-bench-login"

    /// Sets up the service under `directory` for the module beside `keychaind`, with
    /// `environment`'s directories and agent socket as the PAM environment.
    /// - Throws: ``BenchmarkFailure`` naming what is missing (pamtester, libpam-wrapper, the
    ///   `pam_keychain` product).
    init(keychaind: String, directory: String, environment: [String: String], password: Data) throws {
        let module = (keychaind as NSString).deletingLastPathComponent + "/libpam_keychain.so"
        guard FileManager.default.fileExists(atPath: module) else {
            throw BenchmarkFailure("no libpam_keychain.so beside keychaind (build the pam_keychain product)")
        }
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/pamtester") else {
            throw BenchmarkFailure("pamtester is not installed (apt package pamtester)")
        }
        guard let wrapper = Self.libraryPath("libpam_wrapper.so") else {
            throw BenchmarkFailure("libpam_wrapper.so is not installed (apt package libpam-wrapper)")
        }
        guard let user = getpwuid(getuid()).map({ String(cString: $0.pointee.pw_name) }) else {
            throw BenchmarkFailure("this process's user has no name")
        }
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let variables = ["XDG_RUNTIME_DIR", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "KEYCHAIN_AGENT_SOCK"]
        let sessionEnvironment = variables.compactMap { name in environment[name].map { "\(name)=\($0)\n" } }
        let stack = """
            auth     required  pam_exec.so expose_authtok quiet /bin/true
            auth     optional  \(module) helper=\(keychaind)
            account  required  pam_permit.so
            session  required  pam_env.so readenv=1 envfile=\(directory)/environment user_readenv=0
            session  optional  \(module) helper=\(keychaind)

            """
        try sessionEnvironment.joined().write(toFile: directory + "/environment", atomically: true, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: directory + "/pam.d", withIntermediateDirectories: true)
        try stack.write(toFile: directory + "/pam.d/" + Self.service, atomically: true, encoding: .utf8)
        self.pamtester = "/usr/bin/pamtester"
        self.wrapper = wrapper
        self.serviceDirectory = directory + "/pam.d"
        self.user = user
        self.input = password + Data("\n".utf8)
    }

    /// One login: `pamtester SERVICE USER authenticate open_session`, timed from its spawn to
    /// its end; fails unless it succeeds. The module itself never fails a login, so whether the
    /// keychain was unlocked is the caller's to check.
    func login() throws -> UInt64 {
        let outcome = try ChildProcess.run(
            pamtester, [Self.service, user, "authenticate", "open_session"],
            environment: ["LD_PRELOAD": wrapper, "PAM_WRAPPER": "1", "PAM_WRAPPER_SERVICE_DIR": serviceDirectory],
            capture: true, input: input)
        guard outcome.status == 0 else {
            throw BenchmarkFailure(
                "pamtester exited \(outcome.status): \(String(decoding: outcome.standardError, as: UTF8.self))")
        }
        return outcome.nanoseconds
    }

    /// A shared library's path in the machine's library directories, or `nil`.
    private static func libraryPath(_ name: String) -> String? {
        let directories = ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib"]
        return directories.map { $0 + "/" + name }.first { FileManager.default.fileExists(atPath: $0) }
    }
}
