// SecTrust verdicts compared with `openssl verify` on the same chains, made by openssl at test time.

import Foundation
import Security
import Testing

/// Root ← intermediate ← leaf, and the odd certificates the failure cases need, as PEM files in a directory
/// kept for the run (openssl verify reads them) and as `SecCertificate`s.
private struct TrustFixtures: Sendable {
    let directory: URL
    let certificates: [String: Data]

    static let shared: Result<TrustFixtures, SecKeyTestFailure> = {
        do { return .success(try make()) } catch let failure as SecKeyTestFailure {
            return .failure(failure)
        } catch { return .failure(SecKeyTestFailure(description: "trust fixtures: \(error)")) }
    }()

    private static func make() throws -> TrustFixtures {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("sectrust-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try directory.write(
            Data(
                """
                [ca]
                basicConstraints = critical, CA:TRUE
                keyUsage = critical, keyCertSign, cRLSign
                [leaf]
                basicConstraints = CA:FALSE
                keyUsage = critical, digitalSignature
                extendedKeyUsage = serverAuth
                subjectAltName = DNS:a.test, DNS:*.wild.test, IP:10.0.0.1
                [notca]
                basicConstraints = critical, CA:FALSE
                [tldwild]
                basicConstraints = CA:FALSE
                extendedKeyUsage = serverAuth
                subjectAltName = DNS:*.test
                [critical]
                subjectAltName = DNS:a.test
                1.2.3.4 = critical, DER:05:00
                """.utf8), "ext.cnf")
        func run(_ arguments: [String]) throws { try OpenSSL.run(arguments, in: directory) }
        func key(_ name: String) throws {
            try run(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "\(name).key"])
        }
        func issue(
            _ name: String, _ subject: String, by issuer: String, _ section: String, digest: String = "-sha256"
        ) throws {
            try key(name)
            try run(["req", "-new", "-key", "\(name).key", "-subj", subject, "-out", "\(name).csr"])
            try run([
                "x509", "-req", "-in", "\(name).csr", "-CA", "\(issuer).pem", "-CAkey", "\(issuer).key",
                "-set_serial", String(Int.random(in: 2...1_000_000)), "-days", "30", "-extfile", "ext.cnf",
                "-extensions", section, digest, "-out", "\(name).pem",
            ])
        }
        for root in ["root", "other"] {
            try key(root)
            try run([
                "req", "-x509", "-key", "\(root).key", "-subj", "/CN=\(root) CA", "-days", "30",
                "-addext", "basicConstraints=critical,CA:TRUE", "-addext",
                "keyUsage=critical,keyCertSign,cRLSign", "-out", "\(root).pem",
            ])
        }
        try issue("inter", "/CN=Intermediate", by: "root", "ca")
        try issue("leaf", "/CN=a.test", by: "inter", "leaf")
        try issue("notca", "/CN=Not A CA", by: "root", "notca")
        try issue("victim", "/CN=Victim", by: "notca", "leaf")
        try issue("critical", "/CN=Critical", by: "inter", "critical")
        try issue("tldwild", "/CN=Wildcard over a top-level domain", by: "inter", "tldwild")
        try issue("sha1leaf", "/CN=a.test", by: "inter", "leaf", digest: "-sha1")
        var certificates: [String: Data] = [:]
        for name in ["root", "other", "inter", "leaf", "notca", "victim", "critical", "tldwild", "sha1leaf"] {
            certificates[name] = try OpenSSL.run(["x509", "-in", "\(name).pem", "-outform", "DER"], in: directory)
        }
        // The leaf with one signature byte changed.
        guard var bad = certificates["leaf"] else { throw SecKeyTestFailure(description: "no leaf") }
        bad[bad.count - 5] ^= 0x01
        certificates["badsig"] = bad
        try OpenSSL.run(["x509", "-inform", "DER", "-out", "badsig.pem"], in: directory, input: bad)
        return TrustFixtures(directory: directory, certificates: certificates)
    }

    func certificate(_ name: String) throws -> SecCertificate {
        let der = try #require(certificates[name])
        return try #require(SecCertificateCreateWithData(nil, der as CFData))
    }
}

/// One trust case: the chain given, the anchors, the policy's host, the date, and Apple's status.
struct TrustCase: Sendable, CustomTestStringConvertible {
    var name: String
    var chain: [String]
    var anchors: [String]
    var host: String?
    var daysFromNow: Int = 0
    var status: OSStatus
    /// What `openssl verify` needs besides the chain to apply the same rule.
    var opensslOptions: [String] = []
    var testDescription: String { name }
}

private let trustCases: [TrustCase] = [
    TrustCase(name: "good chain", chain: ["leaf", "inter"], anchors: ["root"], host: "a.test", status: errSecSuccess),
    TrustCase(name: "no host", chain: ["leaf", "inter"], anchors: ["root"], host: nil, status: errSecSuccess),
    TrustCase(name: "wrong host", chain: ["leaf", "inter"], anchors: ["root"], host: "b.test", status: -67602),
    TrustCase(name: "wildcard", chain: ["leaf", "inter"], anchors: ["root"], host: "x.wild.test", status: 0),
    TrustCase(
        name: "wildcard, two labels", chain: ["leaf", "inter"], anchors: ["root"], host: "y.x.wild.test",
        status: -67602),
    TrustCase(name: "IP address", chain: ["leaf", "inter"], anchors: ["root"], host: "10.0.0.1", status: 0),
    TrustCase(name: "wrong IP address", chain: ["leaf", "inter"], anchors: ["root"], host: "10.0.0.2", status: -67602),
    TrustCase(
        name: "expired", chain: ["leaf", "inter"], anchors: ["root"], host: "a.test", daysFromNow: 60, status: -67818),
    TrustCase(
        name: "not yet valid", chain: ["leaf", "inter"], anchors: ["root"], host: "a.test", daysFromNow: -2,
        status: -67819),
    TrustCase(
        name: "root given but not an anchor", chain: ["leaf", "inter", "root"], anchors: ["other"], host: "a.test",
        status: -67843),
    TrustCase(
        name: "wrong host and untrusted root", chain: ["leaf", "inter", "root"], anchors: ["other"],
        host: "b.test", status: -67843),
    TrustCase(name: "missing intermediate", chain: ["leaf"], anchors: ["root"], host: "a.test", status: -25318),
    TrustCase(name: "CA:FALSE as issuer", chain: ["victim", "notca"], anchors: ["root"], host: nil, status: -67605),
    TrustCase(
        name: "unknown critical extension", chain: ["critical", "inter"], anchors: ["root"], host: nil,
        status: -67603),
    TrustCase(name: "bad signature", chain: ["badsig", "inter"], anchors: ["root"], host: "a.test", status: -25318),
    TrustCase(name: "anchor itself", chain: ["root"], anchors: ["root"], host: nil, status: errSecSuccess),
    // The defects: `*.test` matched `bank.test`, and SHA-1-signed TLS leaves were accepted.
    TrustCase(
        name: "wildcard over a top-level domain", chain: ["tldwild", "inter"], anchors: ["root"], host: "bank.test",
        status: -67602),
    // OpenSSL accepts SHA-1 signatures at its default authentication level.
    TrustCase(
        name: "SHA-1 signed leaf", chain: ["sha1leaf", "inter"], anchors: ["root"], host: "a.test", status: -67815,
        opensslOptions: ["-auth_level", "1"]),
]

@Suite("SecTrust against openssl verify")
struct SecTrustTests {
    @Test("same verdict as openssl verify, Apple's status for each failure", arguments: trustCases)
    func verdicts(_ row: TrustCase) throws {
        let fixtures = try TrustFixtures.shared.get()
        let certificates = try row.chain.map(fixtures.certificate)
        let anchors = try row.anchors.map(fixtures.certificate)
        var trust: SecTrust?
        let policy = SecPolicyCreateSSL(true, row.host.map { $0 as CFString })
        #expect(SecTrustCreateWithCertificates(certificates as CFArray, policy, &trust) == errSecSuccess)
        let evaluated = try #require(trust)
        #expect(SecTrustSetAnchorCertificates(evaluated, anchors as CFArray) == errSecSuccess)
        let date = Date().addingTimeInterval(Double(row.daysFromNow) * 86_400)
        SecTrustSetVerifyDate(evaluated, date as CFDate)
        var error: CFError?
        let trusted = SecTrustEvaluateWithError(evaluated, &error)
        #expect(trusted == (row.status == errSecSuccess))
        #expect((error.map { OSStatus($0.code) } ?? errSecSuccess) == row.status)

        // openssl verify on the same inputs.
        var arguments = [
            "verify", "-CAfile", "\(row.anchors[0]).pem", "-attime", String(Int(date.timeIntervalSince1970)),
        ]
        if row.chain.count > 1 {
            try fixtures.directory.write(
                Data(
                    try row.chain.dropFirst().map {
                        try String(contentsOf: fixtures.directory.appendingPathComponent("\($0).pem"), encoding: .utf8)
                    }.joined().utf8),
                "untrusted-\(row.name.hashValue).pem")
            arguments += ["-untrusted", "untrusted-\(row.name.hashValue).pem"]
        }
        if let host = row.host {
            arguments += host.first!.isNumber ? ["-verify_ip", host] : ["-verify_hostname", host]
        }
        arguments += row.opensslOptions
        arguments.append("\(row.chain[0]).pem")
        #expect(try OpenSSL.succeeds(arguments, in: fixtures.directory) == trusted, "openssl disagrees")
    }

    @Test("chain order, certificate count, key, result type, type identifiers")
    func chainAndKey() throws {
        let fixtures = try TrustFixtures.shared.get()
        let leaf = try fixtures.certificate("leaf")
        var trust: SecTrust?
        SecTrustCreateWithCertificates([leaf, try fixtures.certificate("inter")] as CFArray, nil, &trust)
        let evaluated = try #require(trust)
        var result = SecTrustResultType.invalid
        SecTrustSetAnchorCertificates(evaluated, [try fixtures.certificate("root")] as CFArray)
        #expect(SecTrustEvaluateWithError(evaluated, nil))
        SecTrustGetTrustResult(evaluated, &result)
        #expect(result == .unspecified)
        let chain = try #require(SecTrustCopyCertificateChain(evaluated) as? [SecCertificate])
        #expect(
            chain.map { SecCertificateCopyData($0) as Data }
                == ["leaf", "inter", "root"].map { fixtures.certificates[$0] })
        #expect(SecTrustGetCertificateCount(evaluated) == 3)
        #expect(SecTrustCopyKey(evaluated) == SecCertificateCopyKey(leaf))
        #expect(CFGetTypeID(evaluated) == SecTrustGetTypeID())
        #expect(CFGetTypeID(SecPolicyCreateBasicX509()) == SecPolicyGetTypeID())
        // Without custom anchors the system store is used, and it does not hold this root.
        SecTrustSetAnchorCertificates(evaluated, nil)
        #expect(!SecTrustEvaluateWithError(evaluated, nil))
        SecTrustGetTrustResult(evaluated, &result)
        #expect(result == .recoverableTrustFailure)
        var none: SecTrust?
        #expect(SecTrustCreateWithCertificates([] as CFArray, nil, &none) == errSecParam)
        #expect(SecTrustCreateWithCertificates("x" as CFString, nil, &none) == errSecParam)
    }

    @Test("a .p12 import carries a trust object for the identity's certificate")
    func importTrust() throws {
        let fixtures = try CertificateFixtures.get()
        let imported = importPKCS12(fixtures.leafP12, [kSecImportExportPassphrase: "secret"])
        let trust = try #require(imported.1.first?[kSecImportItemTrust as String] as? SecTrust)
        SecTrustSetAnchorCertificates(trust, [try certificate(fixtures.ca.der)] as CFArray)
        #expect(SecTrustEvaluateWithError(trust, nil))
        #expect(SecTrustGetCertificateCount(trust) == 2)
    }
}

/// The symbols third-party libraries compile against beside SecTrustEvaluateWithError (the
/// defect: they were missing, so those libraries did not build).
@Suite("SecTrust's policies, revocation and deprecated calls, shared web credentials")
struct SecTrustLegacySurfaceTests {
    static func trust(_ chain: [String], host: String?) throws -> SecTrust {
        let fixtures = try TrustFixtures.shared.get()
        var trust: SecTrust?
        let policy = SecPolicyCreateSSL(true, host.map { $0 as CFString })
        #expect(SecTrustCreateWithCertificates(try chain.map(fixtures.certificate) as CFArray, policy, &trust) == 0)
        let made = try #require(trust)
        SecTrustSetAnchorCertificates(made, [try fixtures.certificate("root")] as CFArray)
        return made
    }

    @Test func setPoliciesReplacesThePoliciesAndTheVerdict() throws {
        let trust = try Self.trust(["leaf", "inter"], host: "a.test")
        #expect(SecTrustEvaluateWithError(trust, nil))
        #expect(SecTrustSetPolicies(trust, SecPolicyCreateSSL(true, "b.test" as CFString)) == errSecSuccess)
        var error: CFError?
        #expect(!SecTrustEvaluateWithError(trust, &error) && error?.code == -67602)
        #expect(SecTrustSetPolicies(trust, [SecPolicyCreateBasicX509()] as CFArray) == errSecSuccess)
        #expect(SecTrustEvaluateWithError(trust, nil))
        var policies: CFArray?
        SecTrustCopyPolicies(trust, &policies)
        #expect((policies as? [SecPolicy]) == [SecPolicyCreateBasicX509()])
        #expect(SecTrustSetPolicies(trust, ["not a policy"] as CFArray) == errSecParam)
    }

    @Test func revocationIsBestAttemptUnlessAPositiveResponseIsRequired() throws {
        let trust = try Self.trust(["leaf", "inter"], host: "a.test")
        let bestAttempt = try #require(SecPolicyCreateRevocation(kSecRevocationUseAnyAvailableMethod))
        SecTrustSetPolicies(trust, [SecPolicyCreateSSL(true, "a.test" as CFString), bestAttempt] as CFArray)
        #expect(SecTrustEvaluateWithError(trust, nil))
        let required = try #require(
            SecPolicyCreateRevocation(kSecRevocationOCSPMethod | kSecRevocationRequirePositiveResponse))
        SecTrustSetPolicies(trust, [SecPolicyCreateSSL(true, "a.test" as CFString), required] as CFArray)
        var error: CFError?
        #expect(!SecTrustEvaluateWithError(trust, &error))
        #expect(error?.code == Int(errSecIncompleteCertRevocationCheck))
    }

    @Test func deprecatedEvaluateAndAccessorsAnswerAsTheirReplacements() throws {
        try DeprecatedTrustCalls().check()
    }

    @Test func sharedWebCredentialsAnswerAsOnAPlatformWithoutThem() async throws {
        let added: Int? = await withCheckedContinuation { done in
            SecAddSharedWebCredential("example.com" as CFString, "me" as CFString, "pw" as CFString) {
                done.resume(returning: $0?.code)
            }
        }
        #expect(added == Int(errSecParam))
        let (none, code): (Bool, Int?) = await withCheckedContinuation { done in
            SecRequestSharedWebCredential(nil, nil) { done.resume(returning: ($0 == nil, $1?.code)) }
        }
        #expect(none && code == Int(errSecParam))
        #expect(kSecSharedPassword as String == "spwd")
        let fourCharacters: FourCharCode = 0x6161_6161
        #expect(OSType(fourCharacters) == 0x6161_6161)
    }

    @Test func generatedPasswordsHaveApplesFormat() throws {
        var seen = Set<String>()
        for _ in 0..<500 {
            let password = try #require(SecCreateSharedWebCredentialPassword() as String?)
            let groups = password.split(separator: "-", omittingEmptySubsequences: false)
            #expect(groups.count == 4 && groups.allSatisfy { $0.count == 3 }, "\(password)")
            let letters = password.filter { $0 != "-" }
            #expect(letters.allSatisfy { "abcdefghkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789".contains($0) })
            #expect(letters.contains(where: \.isLowercase) && letters.contains(where: \.isUppercase))
            #expect(letters.contains(where: { ("3"..."9").contains($0) }), "\(password)")
            seen.insert(password)
        }
        #expect(seen.count == 500)
    }
}

/// Apple's deprecated trust calls, made where their deprecation is no warning.
@available(*, deprecated)
private struct DeprecatedTrustCalls {
    func check() throws {
        let fixtures = try TrustFixtures.shared.get()
        let trusted = try SecTrustLegacySurfaceTests.trust(["leaf", "inter"], host: "a.test")
        var result = SecTrustResultType.invalid
        #expect(SecTrustEvaluate(trusted, &result) == errSecSuccess && result == .unspecified)
        #expect(SecTrustGetCertificateAtIndex(trusted, 0) == (try fixtures.certificate("leaf")))
        #expect(SecTrustGetCertificateAtIndex(trusted, 2) == (try fixtures.certificate("root")))
        #expect(SecTrustGetCertificateAtIndex(trusted, 3) == nil)
        #expect(SecTrustCopyPublicKey(trusted) != nil)
        let untrusted = try SecTrustLegacySurfaceTests.trust(["leaf", "inter"], host: "b.test")
        #expect(SecTrustEvaluate(untrusted, &result) == errSecSuccess && result == .recoverableTrustFailure)
    }
}
