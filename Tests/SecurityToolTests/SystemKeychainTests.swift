import Foundation
import KeychainLibc
import Testing

/// mkcert's install and uninstall on macOS (`truststore_darwin.go`), command line for command
/// line: `sudo security add-trusted-cert -d -k /Library/Keychains/System.keychain rootCA.pem`,
/// then the admin trust settings exported, changed and imported back, then
/// `sudo security remove-trusted-cert -d rootCA.pem` (issue 56, item 4). The System keychain is
/// root's (`KEYCHAIN_SYSTEM_DIRECTORY` and `KEYCHAIN_ADMIN_TRUST_SETTINGS` keep this test's
/// files in its sandbox).
@Suite("The System keychain")
struct SystemKeychainTests {
    @Test(
        "mkcert's install: the CA goes into the System keychain and the admin's trust; its uninstall removes the trust")
    func mkcertInstallAndUninstall() throws {
        #expect(getuid() == 0, "the System keychain is root's: these steps run with sudo on macOS")
        let sandbox = try Sandbox()
        let files = try PKIFiles(sandbox)
        _ = try files.openssl([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-keyout", "rootCA-key.pem",
            "-out", "rootCA.pem", "-days", "30", "-nodes", "-subj", "/O=mkcert development CA/CN=mkcert root@ci",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign",
        ])
        let system = [
            "KEYCHAIN_SYSTEM_DIRECTORY": sandbox.root + "/system",
            "KEYCHAIN_ADMIN_TRUST_SETTINGS": sandbox.root + "/admin-trust-settings.json",
        ]
        func run(_ arguments: [String]) throws -> RunResult { try sandbox.run(arguments, environment: system) }
        let added = try run(
            ["add-trusted-cert", "-d", "-k", "/Library/Keychains/System.keychain", files.path("rootCA.pem")])
        #expect(added.status == 0, "\(added)")
        let found = try run(["find-certificate", "-c", "mkcert root@ci", "-a", "/Library/Keychains/System.keychain"])
        #expect(found.status == 0 && found.out.contains("mkcert root@ci"), "\(found)")
        let verified = try run(["verify-cert", "-c", files.path("rootCA.pem")])
        #expect(verified.status == 0, "trusted for every user by the admin's settings: \(verified)")
        let plist = sandbox.root + "/trust-settings.plist"
        #expect(try run(["trust-settings-export", "-d", plist]).status == 0)
        #expect(try run(["trust-settings-import", "-d", plist]).status == 0)
        let removed = try run(["remove-trusted-cert", "-d", files.path("rootCA.pem")])
        #expect(removed.status == 0, "\(removed)")
        #expect(try run(["verify-cert", "-c", files.path("rootCA.pem")]).status != 0, "no longer trusted")
        // The keychain is root's, under its own device key.
        var info = stat()
        #expect(stat(sandbox.root + "/system/System.keychain-db", &info) == 0 && info.st_uid == 0)
        #expect(info.st_mode & 0o077 == 0)
        #expect(FileManager.default.fileExists(atPath: sandbox.root + "/system/device-key"))
    }

    @Test("anyone but root is told the System keychain needs sudo")
    func otherUsersAreToldToUseSudo() throws {
        let sandbox = try Sandbox()
        try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: sandbox.root)
        let refused = try sandbox.run(
            [
                "--reuid=65534", "--regid=65534", "--clear-groups", securityPath, "find-certificate", "-a",
                "/Library/Keychains/System.keychain",
            ], environment: ["KEYCHAIN_SYSTEM_DIRECTORY": sandbox.root + "/system", "HOME": "/tmp"],
            executable: "/usr/bin/setpriv")
        #expect(refused.status == 1, "\(refused)")
        #expect(refused.err.contains("is root's on Linux: run the command with sudo"), "\(refused)")
        #expect(!FileManager.default.fileExists(atPath: sandbox.root + "/system"))
    }
}
