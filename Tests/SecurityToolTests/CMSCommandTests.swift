import Foundation
import Testing

/// `security cms -D`, as iOS build scripts read a provisioning profile: fastlane
/// (`security cms -D -i "<path>" 2> /dev/null`), Flutter and Azure Pipelines
/// (`security cms -D -i <path>`), on CMS files the real `openssl cms -sign` makes, DER and BER
/// (issue 56, item 6).
@Suite("security cms")
struct CMSCommandTests {
    static let profile = """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0">
        <dict>
        \t<key>Name</key>
        \t<string>CI Distribution</string>
        \t<key>UUID</key>
        \t<string>2F1E0C6A-3B7D-4F0E-9A51-6C2D8E4B7A10</string>
        \t<key>TeamIdentifier</key>
        \t<array><string>ABCDE12345</string></array>
        </dict>
        </plist>

        """

    /// A self-signed signer and `profile` signed with it, attached, in DER (`-stream` gives the
    /// BER of indefinite lengths that `cms -sign` streams).
    static func profiles(_ files: PKIFiles) throws -> [String] {
        try files.selfSigned("signer", subject: "/CN=Apple Worldwide Developer Relations Test")
        try Data(profile.utf8).write(to: URL(fileURLWithPath: files.path("profile.plist")))
        var made: [String] = []
        for (name, extra) in [("der.mobileprovision", [String]()), ("ber.mobileprovision", ["-stream"])] {
            _ = try files.openssl(
                [
                    "cms", "-sign", "-binary", "-nodetach", "-in", files.path("profile.plist"), "-signer",
                    files.path("signer.pem"), "-inkey", files.path("signer.key"), "-outform", "DER", "-out",
                    files.path(name),
                ] + extra)
            made.append(files.path(name))
        }
        return made
    }

    @Test("cms -D prints a signed profile's property list, DER or BER, from -i or standard input, or into -o")
    func decodesProvisioningProfiles() throws {
        let sandbox = try Sandbox()
        let files = try PKIFiles(sandbox)
        for path in try Self.profiles(files) {
            let printed = try sandbox.run(["cms", "-D", "-i", path])
            #expect(printed.status == 0, "\(printed)")
            #expect(printed.out == Self.profile, "\(path): \(printed)")
            let piped = try sandbox.run(["cms", "-D"], stdin: try Data(contentsOf: URL(fileURLWithPath: path)))
            #expect(piped.out == Self.profile)
            let written = try sandbox.run(["cms", "-D", "-i", path, "-o", files.path("out.plist")])
            #expect(written.status == 0 && written.stdout.isEmpty, "\(written)")
            #expect(FileManager.default.contents(atPath: files.path("out.plist")) == Data(Self.profile.utf8))
            let quiet = try sandbox.run(["cms", "-D", "-n", "-i", path])
            #expect(quiet.status == 0 && quiet.stdout.isEmpty)
        }
        // fastlane's line, through a shell, then its parse of the plist.
        let fastlane = try sandbox.run(
            ["-c", "\(securityPath) cms -D -i \"\(files.path("der.mobileprovision"))\" 2> /dev/null"],
            executable: "/bin/sh")
        #expect(fastlane.out.contains("<string>CI Distribution</string>"), "\(fastlane)")
        #expect(
            (try? PropertyListSerialization.propertyList(from: fastlane.stdout, format: nil) as? [String: Any])?["UUID"]
                as? String == "2F1E0C6A-3B7D-4F0E-9A51-6C2D8E4B7A10")
    }

    @Test("cms -D refuses what is not a CMS message, and -C/-E/-S, with a message and exit 1")
    func refusesGarbageAndEncoding() throws {
        let sandbox = try Sandbox()
        let files = try PKIFiles(sandbox)
        try Data("not a profile".utf8).write(to: URL(fileURLWithPath: files.path("bad.mobileprovision")))
        let bad = try sandbox.run(["cms", "-D", "-i", files.path("bad.mobileprovision")])
        #expect(bad.status == 1 && bad.err.contains("failed to decode message"), "\(bad)")
        let truncated = try Self.profiles(files)[0]
        let bytes = try Data(contentsOf: URL(fileURLWithPath: truncated))
        let cut = try sandbox.run(["cms", "-D"], stdin: bytes.prefix(bytes.count / 2))
        #expect(cut.status == 1 && cut.stdout.isEmpty, "\(cut)")
        let missing = try sandbox.run(["cms", "-D", "-i", files.path("absent.mobileprovision")])
        #expect(missing.status == 1 && missing.err.contains("Error reading infile"), "\(missing)")
        let sign = try sandbox.run(["cms", "-S", "-i", files.path("profile.plist")])
        #expect(sign.status == 1 && sign.err.contains("not available on Linux"), "\(sign)")
    }
}
