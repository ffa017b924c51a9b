import Foundation
import SwiftASN1
import SeededRandom
import Testing

@testable import KeychainPKI

/// Seeded mutations of real certificates and `.p12` files: every input either parses or throws
/// a `PKIError`; nothing crashes, hangs or throws anything else.
@Suite struct FuzzTests {
    /// How many mutated certificates one run parses.
    static let certificateRounds = 64_000

    /// One random change: bit flips, a random byte, a truncation, an insertion, a duplicated
    /// slice, or a length octet turned huge.
    static func mutate(_ input: [UInt8], _ random: inout SplitMix64) -> [UInt8] {
        var bytes = input
        guard !bytes.isEmpty else { return [UInt8.random(in: 0...255, using: &random)] }
        let at = Int.random(in: 0..<bytes.count, using: &random)
        switch Int.random(in: 0..<7, using: &random) {
        case 0:
            for _ in 0..<Int.random(in: 1...4, using: &random) {
                let index = Int.random(in: 0..<bytes.count, using: &random)
                bytes[index] ^= 1 << UInt8.random(in: 0..<8, using: &random)
            }
        case 1: bytes[at] = UInt8.random(in: 0...255, using: &random)
        case 2: bytes = Array(bytes.prefix(at))
        case 3:
            bytes.insert(
                contentsOf: (0..<Int.random(in: 1...8, using: &random)).map { _ in
                    UInt8.random(in: 0...255, using: &random)
                }, at: at)
        case 4:
            let end = min(bytes.count, at + Int.random(in: 1...64, using: &random))
            bytes.insert(contentsOf: bytes[at..<end], at: at)
        case 5: bytes[at] = [0x80, 0x84, 0x88, 0xff, 0x00, 0x7f].randomElement(using: &random)!
        default:
            bytes.replaceSubrange(at..<min(bytes.count, at + 5), with: [0x84, 0x7f, 0xff, 0xff, 0xff])
        }
        return bytes
    }

    struct Tally: Sendable {
        var accepted = 0
        /// Errors that are not a `PKIError`, by round.
        var unexpected: [String] = []
        var refused = 0
        var codes: [String: Int] = [:]
        mutating func refuse(_ error: PKIError) {
            refused += 1
            codes[error.code.rawValue, default: 0] += 1
        }
    }

    @Test func certificateMutations() async throws {
        let openssl = try OpenSSL()
        defer { openssl.cleanUp() }
        let ca = try X509Certificate(
            derEncoded: openssl.selfSigned(
                "ca", key: .p256, subject: "/CN=Fuzz CA", extensions: ["basicConstraints=critical,CA:TRUE"]))
        let seeds = [
            try openssl.issued(
                "ec", by: "ca", subject: "/CN=fuzz.test/O=Fuzz/emailAddress=f@fuzz.test",
                extensions: [
                    "subjectAltName=DNS:fuzz.test,IP:10.0.0.1,email:s@fuzz.test", "keyUsage=critical,digitalSignature",
                    "extendedKeyUsage=serverAuth", "basicConstraints=critical,CA:FALSE", "authorityKeyIdentifier=keyid",
                ]),
            try openssl.issued("rsa", by: "ca", key: .rsa2048, subject: "/CN=rsa/OU=Unit"),
        ]
        let tally = try await offThePool { Self.parseMutatedCertificates(seeds: seeds, ca: ca) }
        #expect(tally.unexpected.isEmpty, "\(tally.unexpected.prefix(5))")
        #expect(tally.accepted + tally.refused == Self.certificateRounds)
        #expect(tally.refused > Self.certificateRounds / 2)
    }

    /// Parses ``certificateRounds`` mutations of `seeds` and reads every field of those that parse.
    static func parseMutatedCertificates(seeds: [[UInt8]], ca: X509Certificate) -> Tally {
        var random = SplitMix64(seed: 0x5eed_0001)
        var tally = Tally()
        // With the 16,000 `.p12` inputs below and the 20,400 of `Security`'s fuzz tests,
        // more than 10^5 malformed inputs in every run.
        for round in 0..<certificateRounds {
            let input = mutate(seeds[round % seeds.count], &random)
            do {
                let certificate = try X509Certificate(derEncoded: input)
                tally.accepted += 1
                _ = certificate.subjectSummary
                _ = certificate.commonName
                _ = certificate.emailAddresses
                _ = certificate.normalizedIssuerSequence
                _ = certificate.keychainAttributes
                // The signature check costs most; one accepted input in eight runs it.
                if tally.accepted.isMultiple(of: 8) { _ = try? certificate.isSignatureValid(issuedBy: ca) }
            } catch let error as PKIError {
                tally.refuse(error)
            } catch {
                tally.unexpected.append("round \(round): \(type(of: error)) is not a PKIError")
            }
        }
        return tally
    }

    /// A PFX rebuilt around `authSafe` with a valid HMAC-SHA-256 MAC (1 iteration), so the
    /// mutations reach the parser beneath the MAC.
    static func pfx(authSafe: [UInt8], passphrase: String) -> [UInt8] {
        let salt: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8]
        let key = PKCS12Digest.sha256.macKey(
            password: PKCS12KeyDerivation.bmpPassword(passphrase), salt: salt, iterations: 1)
        let mac = PKCS12Digest.sha256.hmac(authSafe, key: key)
        let digestInfo = derTLV(0x30, derTLV(0x30, DERWriter.oid(OID.sha256) + [5, 0]) + derTLV(0x04, mac))
        let macData = derTLV(0x30, digestInfo + derTLV(0x04, salt) + DERWriter.integer(1))
        let info = derTLV(0x30, DERWriter.oid(OID.data) + DERWriter.explicit(0, derTLV(0x04, authSafe)))
        return derTLV(0x30, DERWriter.integer(3) + info + macData)
    }

    @Test func pkcs12Mutations() async throws {
        let fixture = try PKCS12Tests.Fixture()
        defer { fixture.openssl.cleanUp() }
        let encrypted = try fixture.p12(["-iter", "1"], chain: true)
        let plain = try fixture.p12(
            ["-iter", "1", "-certpbe", "NONE", "-keypbe", "NONE", "-name", "n"], name: "plain.p12")
        let authSafes = try [encrypted, plain].map {
            try BERRewriter.innerOctets(Array(DER.parse($0).content.children)[1])
        }
        #expect(
            try PKCS12.parse(Self.pfx(authSafe: authSafes[1], passphrase: "pw"), passphrase: "pw").identities.count == 1
        )

        let (whole, inner) = try await offThePool { Self.parseMutatedFiles(encrypted, plain, authSafes: authSafes) }
        #expect(whole.unexpected.isEmpty && inner.unexpected.isEmpty, "\(whole.unexpected + inner.unexpected)")
        #expect(whole.accepted + whole.refused == 10_000)
        #expect(inner.accepted + inner.refused == 6_000)
        // The MAC catches almost every whole-file change; beneath it, the parser refuses most.
        #expect((whole.codes["wrongPassphrase"] ?? 0) > 1_000)
        #expect((inner.codes["malformed"] ?? 0) > 1_000)
    }

    /// Parses mutations of two whole files, then of their contents beneath a valid MAC.
    static func parseMutatedFiles(_ encrypted: [UInt8], _ plain: [UInt8], authSafes: [[UInt8]]) -> (Tally, Tally) {
        var random = SplitMix64(seed: 0x5eed_0012)
        var whole = Tally()
        var inner = Tally()
        for round in 0..<10_000 {
            let input = mutate(round.isMultiple(of: 2) ? encrypted : plain, &random)
            parse(input, round: round, into: &whole)
        }
        for round in 0..<6_000 {
            let authSafe = mutate(authSafes[round % 2], &random)
            parse(pfx(authSafe: authSafe, passphrase: "pw"), round: round, into: &inner)
        }
        return (whole, inner)
    }

    static func parse(_ input: [UInt8], round: Int, into tally: inout Tally) {
        do {
            _ = try PKCS12.parse(input, passphrase: "pw")
            tally.accepted += 1
        } catch let error as PKIError {
            tally.refuse(error)
        } catch {
            tally.unexpected.append("round \(round): \(type(of: error)) is not a PKIError")
        }
    }
}

extension ASN1Node.Content {
    var children: ASN1NodeCollection {
        if case .constructed(let children) = self { return children }
        fatalError("test: not constructed")
    }
}
