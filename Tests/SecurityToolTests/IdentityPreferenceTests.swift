import Foundation
import Testing

/// `security set-identity-preference` and `get-identity-preference`, as macOS's
/// `identity_prefs.c` runs them (issue 56, item 6): an identity imported from a `.p12` the real
/// `openssl` made is preferred for a service, read back by name, hash and PEM, and cleared.
@Suite("security identity preferences")
struct IdentityPreferenceTests {
    @Test("set-identity-preference -c/-Z prefers an identity; get-identity-preference prints it; -n clears it")
    func setGetAndClear() throws {
        let sandbox = try Sandbox()
        let files = try PKIFiles(sandbox)
        try files.selfSigned("dev", subject: "/CN=Apple Development: CI (ABCDE12345)")
        _ = try files.openssl([
            "pkcs12", "-export", "-inkey", "dev.key", "-in", "dev.pem", "-passout", "pass:pw", "-out", "dev.p12",
        ])
        #expect(try sandbox.run(["import", files.path("dev.p12"), "-P", "pw"]).status == 0)
        let hash =
            try files.openssl(["x509", "-in", "dev.pem", "-noout", "-fingerprint", "-sha1"])
            .split(separator: "=").last.map { $0.replacingOccurrences(of: ":", with: "") }?
            .trimmingCharacters(in: .whitespacesAndNewlines) ?? ""

        let none = try sandbox.run(["get-identity-preference", "-s", "com.example.signing"])
        #expect(none.status == 44, "\(none)")
        #expect(none.err.contains("SecIdentityCopyPreference: The specified item could not be found in the keychain."))

        let set = try sandbox.run(["set-identity-preference", "-c", "Apple Development", "-s", "com.example.signing"])
        #expect(set.status == 0, "\(set)")
        let got = try sandbox.run(["get-identity-preference", "-s", "com.example.signing", "-c", "-Z"])
        #expect(got.status == 0, "\(got)")
        #expect(
            got.out.hasPrefix("common name: \"Apple Development: CI (ABCDE12345)\"\nSHA-1 hash: \(hash)\n"), "\(got)")
        #expect(got.out.contains("class: 0x80001000"))
        let pem = try sandbox.run(["get-identity-preference", "-s", "com.example.signing", "-p"])
        #expect(
            pem.out
                == String(decoding: try Data(contentsOf: URL(fileURLWithPath: files.path("dev.pem"))), as: UTF8.self))

        // By hash, for another service; then the first is cleared and the second stays.
        #expect(try sandbox.run(["set-identity-preference", "-Z", hash, "-s", "mail@example.com"]).status == 0)
        #expect(try sandbox.run(["set-identity-preference", "-n", "-s", "com.example.signing"]).status == 0)
        #expect(try sandbox.run(["get-identity-preference", "-s", "com.example.signing"]).status == 44)
        #expect(try sandbox.run(["get-identity-preference", "-s", "mail@example.com", "-Z"]).out.contains(hash))

        let missing = try sandbox.run(["set-identity-preference", "-c", "nobody", "-s", "x"])
        #expect(missing.status == 1 && missing.err.contains("No matching identity found for \"nobody\""), "\(missing)")
        #expect(try sandbox.run(["set-identity-preference", "-c", "Apple"]).status == 2, "no service: usage")
    }
}
