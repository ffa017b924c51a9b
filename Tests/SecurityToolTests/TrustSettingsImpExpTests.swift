import Foundation
import KeychainLibc
import Testing

/// `trust-settings-export` and `trust-settings-import`: Apple's property list, a Linux round trip, a
/// Mac's export (no certificates) matched against the keychain, and refused files that change nothing.
@Suite struct TrustSettingsImpExpTests {
    private let corrupted = "SecTrustSettingsImportExternalRepresentation: The Trust Settings Record was corrupted."

    /// The user's trust settings file of a sandbox.
    private func settingsFile(_ sandbox: Sandbox) -> String { sandbox.configHome + "/keychain/trust-settings.json" }

    /// The bytes of a file (empty when it is missing).
    private func contents(_ path: String) -> Data { FileManager.default.contents(atPath: path) ?? Data() }

    /// A property list file as a dictionary; fails the test when it is not an XML property list.
    private func readPlist(_ path: String) throws -> [String: Any] {
        var format = PropertyListSerialization.PropertyListFormat.binary
        let plist = try PropertyListSerialization.propertyList(from: contents(path), options: [], format: &format)
        #expect(format == .xml)
        return try #require(plist as? [String: Any])
    }

    /// Writes a dictionary as an XML property list.
    private func writePlist(_ plist: [String: Any], to path: String) throws {
        let data = try PropertyListSerialization.data(fromPropertyList: plist, format: .xml, options: 0)
        #expect(FileManager.default.createFile(atPath: path, contents: data))
    }

    /// The DER of a PEM certificate file.
    private func der(_ files: PKIFiles, _ name: String) throws -> Data {
        try files.opensslBytes(["x509", "-in", name, "-outform", "DER"])
    }

    @Test("export, remove, import: dump-trust-settings and verify-cert are as before; the file is Apple's plist")
    func roundTrip() throws {
        let sandbox = try Sandbox()
        let files = try PKIFiles(sandbox)
        try files.chain()
        try files.selfSigned("other", subject: "/CN=Other Root")
        let leaf = files.path("leaf.pem")
        #expect(try sandbox.run(["add-trusted-cert", files.path("root.pem")]).status == 0)
        #expect(try sandbox.run(["add-trusted-cert", "-p", "ssl", "-r", "deny", files.path("other.pem")]).status == 0)
        let dumpBefore = try sandbox.run(["dump-trust-settings"])
        #expect(dumpBefore.status == 0 && dumpBefore.out.contains("Cert 1: Test Root CA"), "\(dumpBefore)")

        let plistPath = files.path("trust.plist")
        let exported = try sandbox.run(["trust-settings-export", plistPath])
        #expect(exported.status == 0 && exported.err.isEmpty, "\(exported)")
        #expect(exported.out == "...Trust Settings exported successfully.\n")
        var info = stat()
        #expect(stat(plistPath, &info) == 0 && info.st_mode & 0o777 == 0o600)
        try checkApplesFormat(plistPath, files)
        try checkWithPython(plistPath)

        #expect(try sandbox.run(["remove-trusted-cert", files.path("root.pem")]).status == 0)
        #expect(try sandbox.run(["remove-trusted-cert", files.path("other.pem")]).status == 0)
        #expect(try sandbox.run(["verify-cert", "-c", leaf]).status == 1)
        #expect(try sandbox.run(["dump-trust-settings"]).status == 1)

        let imported = try sandbox.run(["trust-settings-import", plistPath])
        #expect(imported.status == 0 && imported.err.isEmpty, "\(imported)")
        #expect(imported.out == "...Trust Settings imported successfully.\n")
        let dumpAfter = try sandbox.run(["dump-trust-settings"])
        #expect(dumpAfter.out == dumpBefore.out, "\(dumpAfter)")
        let verify = try sandbox.run(["verify-cert", "-c", leaf])
        #expect(verify.status == 0 && verify.out == "...certificate verification successful.\n", "\(verify)")

        // Exported again, the settings are the same, modification dates included.
        let again = files.path("again.plist")
        #expect(try sandbox.run(["-q", "trust-settings-export", again]).out.isEmpty)
        #expect(NSDictionary(dictionary: try readPlist(again)) == NSDictionary(dictionary: try readPlist(plistPath)))
    }

    /// The exported file: trustVersion 1, trustList keyed by the uppercase SHA-1 (as openssl prints it),
    /// Apple's per-entry keys, the SSL policy's OID and name, and the certificate's DER.
    private func checkApplesFormat(_ path: String, _ files: PKIFiles) throws {
        #expect(String(decoding: contents(path).prefix(5), as: UTF8.self) == "<?xml")
        let plist = try readPlist(path)
        #expect((plist["trustVersion"] as? NSNumber)?.intValue == 1)
        let list = try #require(plist["trustList"] as? [String: Any])
        let rootSHA1 = try files.sha1(files.path("root.pem"))
        let otherSHA1 = try files.sha1(files.path("other.pem"))
        #expect(Set(list.keys) == [rootSHA1, otherSHA1])
        let root = try #require(list[rootSHA1] as? [String: Any])
        #expect(root["certificate"] as? Data == (try der(files, "root.pem")))
        #expect(root["issuerName"] is Data && root["serialNumber"] is Data && root["modDate"] is Date)
        #expect(root["trustSettings"] == nil)
        let other = try #require(list[otherSHA1] as? [String: Any])
        let settings = try #require(other["trustSettings"] as? [[String: Any]])
        #expect(settings.count == 1)
        let ssl = Data([0x2A, 0x86, 0x48, 0x86, 0xF7, 0x63, 0x64, 0x01, 0x03])
        #expect(settings.first?["kSecTrustSettingsPolicy"] as? Data == ssl)
        #expect(settings.first?["kSecTrustSettingsPolicyName"] as? String == "sslServer")
        #expect((settings.first?["kSecTrustSettingsResult"] as? NSNumber)?.intValue == 3)
    }

    /// Python's plistlib reads the file as well (when python3 is installed).
    private func checkWithPython(_ path: String) throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") else { return }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [
            "-c",
            "import plistlib,sys; d=plistlib.load(open(sys.argv[1],'rb')); print(d['trustVersion'], len(d['trustList']))",
            path,
        ]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let printed = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(String(decoding: printed, as: UTF8.self) == "1 2\n")
    }

    @Test("a Mac's export (no certificates) imports once the certificate is in a keychain; before, nothing changes")
    func macExportMatchedInKeychain() throws {
        let sandbox = try Sandbox()
        let files = try PKIFiles(sandbox)
        try files.chain()
        try files.selfSigned("other", subject: "/CN=Other Root")
        let root = files.path("root.pem")
        #expect(try sandbox.run(["add-trusted-cert", root]).status == 0)
        let full = files.path("full.plist")
        #expect(try sandbox.run(["trust-settings-export", full]).status == 0)
        #expect(try sandbox.run(["remove-trusted-cert", root]).status == 0)
        var plist = try readPlist(full)
        var list = try #require(plist["trustList"] as? [String: [String: Any]])
        for key in list.keys { list[key]?["certificate"] = nil }
        plist["trustList"] = list
        let mac = files.path("mac.plist")
        try writePlist(plist, to: mac)

        // Settings there before, which a failed import must leave alone.
        #expect(try sandbox.run(["add-trusted-cert", files.path("other.pem")]).status == 0)
        let before = contents(settingsFile(sandbox))
        let sha1 = try files.sha1(root)
        let missing = try sandbox.run(["trust-settings-import", mac])
        #expect(missing.status == 1 && missing.out.isEmpty, "\(missing)")
        #expect(
            missing.err == """
                SecTrustSettingsImportExternalRepresentation: The specified item could not be found in the keychain.
                security: 1 certificate of the trust settings is in no keychain of the search list and among no \
                system roots: \(sha1); add it to a keychain (security add-certificates) and import again; nothing \
                was imported

                """, "\(missing)")
        #expect(contents(settingsFile(sandbox)) == before)
        #expect(try sandbox.run(["verify-cert", "-c", files.path("leaf.pem")]).status == 1)

        let added = try sandbox.run(["add-certificates", root])
        #expect(added.status == 0, "\(added)")
        let imported = try sandbox.run(["trust-settings-import", mac])
        #expect(imported.status == 0, "\(imported)")
        // The import replaced the domain: Other Root's setting is gone.
        let dump = try sandbox.run(["dump-trust-settings"])
        #expect(dump.out == "Number of trusted certs = 1\nCert 0: Test Root CA\n   Number of trust settings : 0\n")
        let verify = try sandbox.run(["verify-cert", "-c", files.path("leaf.pem")])
        #expect(verify.status == 0, "\(verify)")
    }

    @Test("a file whose certificate does not match its SHA-1 is refused and nothing changes")
    func tamperedFileRefused() throws {
        let sandbox = try Sandbox()
        let files = try PKIFiles(sandbox)
        try files.chain()
        let root = files.path("root.pem")
        #expect(try sandbox.run(["add-trusted-cert", root]).status == 0)
        let path = files.path("trust.plist")
        #expect(try sandbox.run(["trust-settings-export", path]).status == 0)
        let sha1 = try files.sha1(root)
        var plist = try readPlist(path)
        var list = try #require(plist["trustList"] as? [String: [String: Any]])
        list[sha1]?["certificate"] = try der(files, "leaf.pem")
        plist["trustList"] = list
        try writePlist(plist, to: path)
        let before = contents(settingsFile(sandbox))

        let run = try sandbox.run(["trust-settings-import", path])
        #expect(run.status == 1, "\(run)")
        #expect(
            run.err == corrupted + "\nsecurity: the trust settings file has an entry \(sha1) whose certificate has "
                + "another SHA-1 (the file was changed)\n", "\(run)")
        #expect(contents(settingsFile(sandbox)) == before)
        #expect(try sandbox.run(["verify-cert", "-c", files.path("leaf.pem")]).status == 0)
    }

    /// Bytes from a fixed seed (SplitMix64), so a failure repeats.
    private func seededBytes(seed: UInt64, count: Int) -> Data {
        var state = seed
        return Data(
            (0..<count).map { _ in
                state &+= 0x9E37_79B9_7F4A_7C15
                var z = state
                z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
                z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
                return UInt8(truncatingIfNeeded: z ^ (z >> 31))
            })
    }

    @Test("garbage and wrong-typed files are refused with Apple's status, exit 1, nothing changed, no crash")
    func malformedFilesRefused() throws {
        let sandbox = try Sandbox()
        let files = try PKIFiles(sandbox)
        try files.chain()
        #expect(try sandbox.run(["add-trusted-cert", files.path("root.pem")]).status == 0)
        let valid = files.path("valid.plist")
        #expect(try sandbox.run(["trust-settings-export", valid]).status == 0)
        let validText = String(decoding: contents(valid), as: UTF8.self)
        let sha1 = try files.sha1(files.path("root.pem"))
        let before = contents(settingsFile(sandbox))
        let entry = try #require((try readPlist(valid)["trustList"] as? [String: Any])?[sha1] as? [String: Any])
        func withEntry(_ change: (inout [String: Any]) -> Void) throws -> Data {
            var changed = entry
            change(&changed)
            let plist: [String: Any] = ["trustVersion": 1, "trustList": [sha1: changed]]
            return try PropertyListSerialization.data(fromPropertyList: plist, format: .xml, options: 0)
        }
        let allowedError: [String: Any] = [
            "kSecTrustSettingsAllowedError": -2_147_408_896, "kSecTrustSettingsResult": 4,
        ]
        let cases: [(String, Data, String)] = [
            ("empty", Data(), corrupted),
            ("seeded garbage", seededBytes(seed: 0x5EED, count: 512), corrupted),
            ("truncated", Data(validText.prefix(validText.count / 2).utf8), corrupted),
            (
                "an array", try PropertyListSerialization.data(fromPropertyList: [1], format: .xml, options: 0),
                corrupted
            ),
            (
                "trustVersion 2",
                try PropertyListSerialization.data(
                    fromPropertyList: ["trustVersion": 2, "trustList": [String: Any]()], format: .xml, options: 0),
                corrupted
            ),
            ("modDate a string", try withEntry { $0["modDate"] = "yesterday" }, corrupted),
            ("trustSettings a dictionary", try withEntry { $0["trustSettings"] = ["a": 1] }, corrupted),
            (
                "result a string", try withEntry { $0["trustSettings"] = [["kSecTrustSettingsResult": "3"]] },
                corrupted
            ),
            (
                "an allowed error", try withEntry { $0["trustSettings"] = [allowedError] },
                "SecTrustSettingsImportExternalRepresentation: Function or operation not implemented."
            ),
        ]
        for (name, data, firstLine) in cases {
            let path = files.path("bad.plist")
            #expect(FileManager.default.createFile(atPath: path, contents: data))
            let run = try sandbox.run(["trust-settings-import", path])
            #expect(run.status == 1, "\(name): \(run)")
            #expect(run.err.hasPrefix(firstLine + "\nsecurity: "), "\(name): \(run)")
            #expect(contents(settingsFile(sandbox)) == before, "\(name)")
        }
    }

    @Test("an empty domain exports nothing (exit 1); usage, file errors, -s and -d as on macOS")
    func emptyDomainUsageAndOtherDomains() throws {
        let sandbox = try Sandbox()
        let files = try PKIFiles(sandbox)
        try files.chain()
        let path = files.path("trust.plist")
        let empty = try sandbox.run(["trust-settings-export", path])
        #expect(empty.status == 1 && empty.out.isEmpty, "\(empty)")
        #expect(empty.err == "SecTrustSettingsCreateExternalRepresentation: No Trust Settings were found.\n")
        #expect(!FileManager.default.fileExists(atPath: path))

        #expect(try sandbox.run(["trust-settings-export"]).status == 2)
        #expect(try sandbox.run(["trust-settings-import", "a", "b"]).status == 2)
        #expect(try sandbox.run(["trust-settings-import", "-s", path]).status == 2)
        let unreadable = try sandbox.run(["trust-settings-import", files.path("missing.plist")])
        #expect(unreadable.status == 1 && unreadable.err == "Error (2) reading \(files.path("missing.plist")).\n")

        let system = try sandbox.run(["trust-settings-export", "-s", path])
        #expect(system.status == 0, "\(system)")
        #expect(((try readPlist(path)["trustList"] as? [String: Any])?.count ?? 0) > 0)
        let unwritable = try sandbox.run(["trust-settings-export", "-s", files.path("no/such/dir.plist")])
        #expect(unwritable.status == 2 && unwritable.err == "Error (2) writing \(files.path("no/such/dir.plist")).\n")

        // The admin domain: its own file (0644), imported and exported like the user's.
        let admin = ["KEYCHAIN_ADMIN_TRUST_SETTINGS": sandbox.root + "/etc/keychain/trust-settings.json"]
        #expect(try sandbox.run(["add-trusted-cert", files.path("root.pem")]).status == 0)
        #expect(try sandbox.run(["trust-settings-export", path]).status == 0)
        let imported = try sandbox.run(["trust-settings-import", "-d", path], environment: admin)
        #expect(imported.status == 0, "\(imported)")
        var info = stat()
        #expect(stat(admin.values.first!, &info) == 0 && info.st_mode & 0o777 == 0o644)
        let dump = try sandbox.run(["dump-trust-settings", "-d"], environment: admin)
        #expect(dump.out == "Number of trusted certs = 1\nCert 0: Test Root CA\n   Number of trust settings : 0\n")
        let adminExport = files.path("admin.plist")
        #expect(try sandbox.run(["trust-settings-export", "-d", adminExport], environment: admin).status == 0)
        #expect(NSDictionary(dictionary: try readPlist(adminExport)) == NSDictionary(dictionary: try readPlist(path)))
    }
}
