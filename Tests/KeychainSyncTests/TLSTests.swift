import Foundation
import Logging
import PostgresNIO
import PostgresScratchServer
import Testing

@testable import KeychainSync

/// TLS between a device and the server, as `psql` users know it (`sslmode`, `sslrootcert`),
/// against real PostgreSQL servers with certificates made by the real `openssl`.
extension SyncIntegration {
    @Suite("TLS to the sync server", .serialized, .timeLimit(.minutes(10)))
    struct TLSTests {
        @Test(
            "init, invite, join and sync over verify-full with sslrootcert, then in the background: every login used TLS"
        )
        func syncOverVerifiedTLS() async throws {
            let (pki, cluster) = (try TLSFixture.pki.get(), try TLSFixture.tlsOnly.get())
            let a = try TestMachine()
            _ = try await SyncSetup.initialize(
                keychain: a.keychain, adminURL: cluster.superuserURL(sslmode: "verify-full", root: pki.rootA),
                deviceName: "a")
            let code = try await SyncSetup.invite(keychain: a.keychain)
            let invitation = try Invitation(code: code)
            #expect(invitation.server == "postgresql://127.0.0.1:\(cluster.port)/postgres?sslmode=verify-full")
            let rootA = try SyncServerAddress.rootFingerprint(ofFile: pki.rootA)
            #expect(invitation.serverRootFingerprint == rootA)

            let b = try TestMachine()
            let missing = await #expect(throws: SyncError.self) {
                try await SyncSetup.join(keychain: b.keychain, code: code, deviceName: "b")
            }
            #expect(missing?.message.contains("--server-root") == true)
            let wrong = await #expect(throws: SyncError.self) {
                try await SyncSetup.join(keychain: b.keychain, code: code, deviceName: "b", serverRoot: pki.rootB)
            }
            #expect(wrong?.message.contains("not the inviting machine's") == true)
            let copy = try pki.copy(pki.rootA, as: "server-root.pem")
            _ = try await SyncSetup.join(keychain: b.keychain, code: code, deviceName: "b", serverRoot: copy)
            #expect(try await SyncSetup.approve(keychain: a.keychain).count == 1)

            try a.add(service: "tls", account: "me", secret: "over TLS")
            #expect(try await a.syncNow().pushed == 1)
            _ = try await b.syncNow()
            #expect(try b.syncedItems() == ["tls|me|over TLS"])
            // What b keeps to reconnect (keychaind's SyncRunner too): the mode and its own copy.
            #expect(
                try SyncSetup.status(of: b.keychain).server
                    == "postgresql://127.0.0.1:\(cluster.port)/postgres?sslmode=verify-full&sslrootcert=\(copy)")
            // keychaind's runner connects from those settings: its LISTEN connection uses TLS too.
            let runners = [a, b].map { SyncRunner(keychain: $0.keychain, pollInterval: .seconds(600)) }
            for runner in runners { runner.start() }
            try a.add(service: "tls", account: "live", secret: "by LISTEN")
            let arrived = try await timeUntil(within: .seconds(20)) {
                try b.syncedItems().contains("tls|live|by LISTEN")
            }
            for runner in runners { await runner.stop() }
            #expect(arrived != nil, "\(runners.compactMap(\.lastError))")
            try expectEveryLoginUsedTLS(cluster)
            let admin = try SyncServerAddress(url: cluster.superuserURL(sslmode: "verify-full", root: pki.rootA))
            #expect(try await usesTLS(admin))
        }

        @Test("a certificate for another host fails verify-full; another root fails verify-ca; require connects")
        func certificateChecks() async throws {
            let (pki, cluster) = (try TLSFixture.pki.get(), try TLSFixture.otherHost.get())
            let otherName = try await connectionError(cluster.superuserURL(sslmode: "verify-full", root: pki.rootA))
            #expect(otherName?.code == .connectionFailed)
            #expect(otherName?.message.contains("does not name 127.0.0.1") == true, "\(String(describing: otherName))")
            #expect(
                try await usesTLS(
                    try SyncServerAddress(url: cluster.superuserURL(sslmode: "verify-ca", root: pki.rootA))))

            let otherRoot = try await connectionError(cluster.superuserURL(sslmode: "verify-ca", root: pki.rootB))
            #expect(
                otherRoot?.message.contains("not signed by a trusted root") == true, "\(String(describing: otherRoot))")
            // The system's trust store does not know the test root; libpq's `require` checks the
            // chain when given a root file.
            #expect(try await connectionError(cluster.superuserURL(sslmode: "verify-full"))?.code == .connectionFailed)
            #expect(
                try await connectionError(cluster.superuserURL(sslmode: "require", root: pki.rootB))?.code
                    == .connectionFailed)
            #expect(try await usesTLS(try SyncServerAddress(url: cluster.superuserURL(sslmode: "require"))))
        }

        @Test("a TLS-only server refuses plaintext logins; a plaintext-only server refuses sslmode=require")
        func plaintextRefused() async throws {
            let tlsOnly = try TLSFixture.tlsOnly.get()
            let refused = try await connectionError(tlsOnly.superuserURL(sslmode: "disable"))
            #expect(refused?.code == .authenticationFailed, "\(String(describing: refused))")
            #expect(refused?.message.contains("no encryption") == true)
            #expect(try await usesTLS(try SyncServerAddress(url: tlsOnly.superuserURL(sslmode: "require"))))

            let plain = try SharedCluster.get()
            let noTLS = try await connectionError(plain.superuserURL(sslmode: "require"))
            #expect(noTLS?.message == "the server does not accept TLS (sslmode=require)")
        }

        /// The defect: `prefer`, the default, never tried TLS, even against a TLS server; libpq's
        /// tries TLS first and falls back to plaintext only when the server offers none.
        @Test func preferTheDefaultTriesTLSFirstAndFallsBackToPlaintext() async throws {
            let (tlsOnly, plain) = (try TLSFixture.tlsOnly.get(), try SharedCluster.get())
            for url in [tlsOnly.superuserURL(sslmode: "prefer"), tlsOnly.superuserURL] {
                #expect(try await usesTLS(try SyncServerAddress(url: url)), "\(url)")
            }
            for url in [plain.superuserURL(sslmode: "prefer"), plain.superuserURL] {
                #expect(try await !usesTLS(try SyncServerAddress(url: url)), "\(url)")
            }
        }

        @Test("security sync init, invite, join --server-root, now and status over verify-full")
        func commandLine() async throws {
            typealias Home = SyncCommandTests.Home
            let (pki, cluster) = (try TLSFixture.pki.get(), try TLSFixture.tlsOnly.get())
            let (a, b) = (Home(), Home())
            let server = "postgresql://postgres@127.0.0.1:\(cluster.port)/postgres?sslmode=verify-full&sslrootcert="
            let initialized = try await a.run(
                ["sync", "init", "--server", server + pki.rootA, "--name", "alpha"],
                extra: ["PGPASSWORD": cluster.superuserPassword])
            #expect(initialized.status == 0, "\(initialized.err)")
            let invited = try await a.run(["sync", "invite"])
            #expect(invited.out.contains("--server-root FILE"), "\(invited)")
            let code = try #require(invited.out.split(separator: "\n").last.map(String.init))
            let refused = try await b.run(["sync", "join", "-", "--name", "beta"], stdin: code + "\n")
            #expect(refused.status != 0)
            #expect(refused.err.contains("--server-root"), "\(refused.err)")
            let copy = try pki.copy(pki.rootA, as: "root.crt")
            let joined = try await b.run(
                ["sync", "join", "-", "--name", "beta", "--server-root", copy], stdin: code + "\n")
            #expect(joined.status == 0, "\(joined.err)")
            #expect(try await a.run(["sync", "approve"]).out.contains("beta"))
            let status = try await b.run(["sync", "status"])
            #expect(status.out.contains("sslmode=verify-full&sslrootcert=\(copy)"), "\(status)")
            #expect(
                status.out.contains(
                    "\nsslmode: verify-full (TLS; the certificate's chain and host name are checked)\n"),
                "\(status)")
            #expect(try await b.run(["sync", "now"]).status == 0)
        }

        /// The server's log: every login (the devices', the invitation's, the administrator's) over TLS.
        private func expectEveryLoginUsedTLS(_ cluster: PostgresCluster) throws {
            let log = try String(contentsOf: cluster.logFile, encoding: .utf8)
            let logins = log.split(separator: "\n").filter { $0.contains("connection authorized:") }
            #expect(logins.contains { $0.contains("user=kc_dev_") })
            #expect(logins.contains { $0.contains("user=kc_inv_") })
            #expect(
                logins.allSatisfy { $0.contains("SSL enabled") }, "\(logins.filter { !$0.contains("SSL enabled") })")
        }

        /// Whether the server sees this connection as TLS (`pg_stat_ssl`).
        private func usesTLS(_ address: SyncServerAddress) async throws -> Bool {
            let logger = Logger(label: "test.tls")
            let connection = try await address.connect(id: 1, logger: logger)
            do {
                let rows = try await connection.query(
                    "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()", logger: logger)
                var ssl = false
                for try await value in rows.decode(Bool.self) { ssl = value }
                try await connection.close()
                return ssl
            } catch {
                try? await connection.close()
                throw error
            }
        }

        /// The error connecting with `url` fails with (`nil` if it connects).
        private func connectionError(_ url: String) async throws -> SyncServerError? {
            let address = try SyncServerAddress(url: url)
            do {
                let connection = try await address.connect(id: 1, logger: Logger(label: "test.tls"))
                try? await connection.close()
                return nil
            } catch let error as SyncServerError {
                #expect(!error.description.contains(address.password ?? "-"))
                return error
            }
        }
    }
}

@Suite("TLS settings: URLs and invitations")
struct TLSSettingsTests {
    static let password = "s3cret-Pa55word"

    @Test(
        "accepted sslmode and sslrootcert combinations",
        arguments: [
            ("", SyncServerAddress.SSLMode.prefer, nil),
            ("?sslmode=disable", .disable, nil),
            ("?sslmode=allow", .allow, nil),
            ("?sslmode=prefer", .prefer, nil),
            ("?sslmode=require", .require, nil),
            ("?sslmode=require&sslrootcert=/etc/root.crt", .require, "/etc/root.crt"),
            ("?sslmode=verify-ca", .verifyCA, nil),
            ("?sslrootcert=/a/b/../root%20ca.pem&sslmode=verify-ca", .verifyCA, "/a/root ca.pem"),
            ("?sslmode=verify-full", .verifyFull, nil),
            ("?sslmode=verify-full&sslrootcert=system", .verifyFull, nil),
            ("?sslmode=verify-full&sslrootcert=/etc/root.crt", .verifyFull, "/etc/root.crt"),
        ] as [(String, SyncServerAddress.SSLMode, String?)])
    func accepted(query: String, mode: SyncServerAddress.SSLMode, root: String?) throws {
        let address = try SyncServerAddress(
            url: "postgresql://kc:\(Self.password)@db.example.net:5433/keychain" + query)
        #expect(address.sslMode == mode)
        #expect(address.sslRootCertificate == root)
        #expect(address.description.contains("sslmode=\(mode.rawValue)"))
        #expect(!address.description.contains(Self.password))
        // What a device keeps: the same TLS settings, read back.
        let kept = try SyncServerAddress(url: address.serverURL, requiresUser: false)
        #expect(kept.sslMode == mode && kept.sslRootCertificate == root && kept.password == nil)
    }

    @Test("a relative sslrootcert is kept absolute")
    func relativeRoot() throws {
        let address = try SyncServerAddress(url: "postgresql://kc@h/db?sslmode=verify-ca&sslrootcert=certs/root.crt")
        #expect(address.sslRootCertificate == FileManager.default.currentDirectoryPath + "/certs/root.crt")
    }

    @Test(
        "refused parameters and values, in messages that never quote the password",
        arguments: [
            ("?sslmode=verify_full", "sslmode must be"),
            ("?sslmode=", "sslmode must be"),
            ("?sslmode=REQUIRE", "sslmode must be"),
            ("?sslmode=require&sslmode=disable", "given twice"),
            ("?sslrootcert=/etc/root.crt", "sslrootcert needs sslmode=require"),
            ("?sslmode=prefer&sslrootcert=/etc/root.crt", "sslmode=prefer is plaintext"),
            ("?sslmode=disable&sslrootcert=/etc/root.crt", "sslmode=disable is plaintext"),
            ("?sslmode=verify-ca&sslrootcert=system", "needs sslmode=verify-full"),
            ("?sslmode=require&sslrootcert=", "sslrootcert needs a file"),
            ("?sslmode=require&sslcert=/etc/client.crt", "unsupported URL parameter sslcert"),
            ("?password=\(TLSSettingsTests.password)", "unsupported URL parameter password"),
            ("?connect_timeout=10", "unsupported URL parameter connect_timeout"),
        ])
    func refused(query: String, message: String) throws {
        let error = #expect(throws: SyncServerError.self) {
            try SyncServerAddress(url: "postgresql://kc:\(Self.password)@db.example.net/keychain" + query)
        }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.message.contains(message) == true, "\(String(describing: error))")
        #expect(error?.description.contains(Self.password) == false)
    }

    @Test("a missing or empty root file is a clear configuration error")
    func unreadableRoot() throws {
        let missing = try SyncServerAddress(
            url: "postgresql://kc@h/db?sslmode=verify-ca&sslrootcert=/nonexistent/root.crt")
        let error = #expect(throws: SyncServerError.self) { try missing.connectionTLS() }
        #expect(error?.message == "cannot read the root certificate file /nonexistent/root.crt")
        #expect(try SyncServerAddress(url: "postgresql://kc@h/db?sslmode=verify-full").connectionTLS().isEnforced)
        let prefer = try SyncServerAddress(url: "postgresql://kc@h/db?sslmode=prefer").connectionTLS()
        #expect(prefer.isAllowed && !prefer.isEnforced)
        #expect(try !SyncServerAddress(url: "postgresql://kc@h/db?sslmode=disable").connectionTLS().isAllowed)
    }

    @Test("an invitation carries the sslmode and the root's fingerprint, never the root's path")
    func invitationRoundTrip() throws {
        let sponsor = CryptoTestDevice()
        let server = "postgresql://db.example.net:5432/keychain?sslmode=verify-full"
        let fingerprint = Data((0..<32).map { UInt8($0) })
        let made = try Invitation.make(
            server: server, serverRootFingerprint: fingerprint, zone: .random(), sponsor: sponsor.id,
            sponsorSigningKey: sponsor.signing.publicKey)
        let parsed = try Invitation(code: made.code)
        #expect(parsed.server == server)
        #expect(parsed.serverRootFingerprint == fingerprint)
        #expect(parsed.code == made.code)
        let withoutRoot = try Invitation.make(
            server: server, zone: .random(), sponsor: sponsor.id, sponsorSigningKey: sponsor.signing.publicKey)
        // The fingerprint costs 43 characters at most; the path is not in the code.
        #expect(made.code.count - withoutRoot.code.count <= 43)
        // Version 1 (as before TLS) without a root, 2 with one.
        let versions = [withoutRoot, made].map { Invitation.decodeBase64url(String($0.code.dropFirst(8)))?.first }
        #expect(versions == [1, 2])
        #expect(try Invitation(code: withoutRoot.code).serverRootFingerprint == nil)
        #expect(
            syncErrorCode {
                _ = try Invitation.make(
                    server: server + "&sslrootcert=/etc/root.crt", zone: .random(), sponsor: sponsor.id,
                    sponsorSigningKey: sponsor.signing.publicKey)
            } == .invitation)
    }

    @Test("a code made before TLS (version 1) still decodes")
    func oldCodeDecodes() throws {
        let old =
            "kcsync1-AW8cKk6TsExXjQ4rfwqcHTUNno96GyxNPp9AobLD1OX2BcI84bAEFl93j0Lxe7xLNYYS91_c3gGkvLXFoKHY9XoAAQIDBAUGBwgJ"
            + "CgsMDQ4PAClwb3N0Z3Jlc3FsOi8vZGIuZXhhbXBsZS5uZXQ6NTQzMi9rZXljaGFpbhwJapg"
        let invitation = try Invitation(code: old)
        #expect(invitation.server == "postgresql://db.example.net:5432/keychain")
        #expect(invitation.serverRootFingerprint == nil)
        #expect(invitation.zone.uuid == UUID(uuidString: "6f1c2a4e-93b0-4c57-8d0e-2b7f0a9c1d35"))
        #expect(invitation.secret == Data(0..<16))
        #expect(invitation.code == old)
        #expect(try SyncSetup.serverURL(of: invitation, root: nil) == invitation.server)
    }
}
