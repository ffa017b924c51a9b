import Foundation
import PostgresScratchServer
import Synchronization

/// Certificates made with the real `openssl` command line, in a scratch directory: two
/// unrelated roots (A and B), and two server certificates signed by A, one for `localhost` and
/// 127.0.0.1 and one for `otherhost` only. Test data: the keys sit in the scratch directory.
struct TestPKI: Sendable {
    /// The scratch directory (removed at exit).
    let directory: String

    /// Root A, which signs both server certificates.
    var rootA: String { directory + "/root-a.crt" }
    /// Root B, which signs nothing the servers present.
    var rootB: String { directory + "/root-b.crt" }

    /// Makes the roots and the server certificates.
    ///
    /// - Throws: when `openssl` is missing (never a skip) or a step fails.
    init() throws {
        var template = Array("/tmp/kc-tls-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw PostgresCluster.Failure(description: "mkdtemp failed") }
        directory = String(cString: made)
        try makeRoot("root-a", commonName: "Keychain Test Root A")
        try makeRoot("root-b", commonName: "Keychain Test Root B")
        try makeServer("server", names: "DNS:localhost,IP:127.0.0.1", root: "root-a")
        try makeServer("other", names: "DNS:otherhost", root: "root-a")
    }

    /// A server certificate and its key, by name (`server` or `other`).
    func server(_ name: String) -> (certificate: String, key: String) {
        (directory + "/\(name).crt", directory + "/\(name).key")
    }

    /// A copy of `file` in a directory of its own (what another machine holds).
    func copy(_ file: String, as name: String) throws -> String {
        let folder = directory + "/copies-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: file, toPath: folder + "/" + name)
        return folder + "/" + name
    }

    private func makeRoot(_ name: String, commonName: String) throws {
        try Self.openssl([
            "req", "-x509", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", "\(directory)/\(name).key", "-out", "\(directory)/\(name).crt", "-days", "2",
            "-subj", "/CN=\(commonName)", "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        ])
    }

    private func makeServer(_ name: String, names: String, root: String) throws {
        let base = "\(directory)/\(name)"
        try Self.openssl([
            "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", base + ".key", "-out", base + ".csr", "-subj", "/CN=\(name)",
        ])
        let extensions = """
            subjectAltName=\(names)
            basicConstraints=critical,CA:FALSE
            keyUsage=critical,digitalSignature
            extendedKeyUsage=serverAuth

            """
        try Data(extensions.utf8).write(to: URL(fileURLWithPath: base + ".ext"))
        try Self.openssl([
            "x509", "-req", "-in", base + ".csr", "-CA", "\(directory)/\(root).crt", "-CAkey",
            "\(directory)/\(root).key", "-set_serial", String(UInt32.random(in: 1...UInt32.max)), "-days", "2",
            "-extfile", base + ".ext", "-out", base + ".crt",
        ])
    }

    /// Runs `openssl` from `PATH`.
    static func openssl(_ arguments: [String]) throws {
        let path = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
            .map { $0 + "/openssl" }.first { FileManager.default.isExecutableFile(atPath: $0) }
        guard let path else {
            throw PostgresCluster.Failure(description: "openssl is not installed: apt-get install -y openssl")
        }
        let result = try PostgresCluster.run(path, arguments)
        guard result.status == 0 else {
            throw PostgresCluster.Failure(description: "openssl \(arguments[0]) failed: \(result.output)")
        }
    }
}

/// A value made on first use and shared by the tests that follow (a failure too, so that
/// every test reports it).
final class SharedFixture<Value: Sendable>: Sendable {
    private let slot = Mutex<Result<Value, PostgresCluster.Failure>?>(nil)
    private let make: @Sendable () throws -> Value

    init(_ make: @escaping @Sendable () throws -> Value) { self.make = make }

    func get() throws -> Value {
        try slot.withLock { slot in
            if slot == nil {
                slot = Result { try make() }.mapError { PostgresCluster.Failure(description: "\($0)") }
            }
            return try slot!.get()
        }
    }

    /// The value, if it was made.
    var made: Value? { slot.withLock { try? $0?.get() } }
}

/// The TLS suite's certificates and servers, made once for the test process.
enum TLSFixture {
    static let pki = SharedFixture {
        let pki = try TestPKI()
        atexit { TLSFixture.removeAtExit() }
        return pki
    }

    /// A server that refuses plaintext logins (`hostssl` only), certified for localhost and
    /// 127.0.0.1 by root A, logging every login (with its TLS) to its log.
    static let tlsOnly = SharedFixture {
        let (certificate, key) = try pki.get().server("server")
        return try PostgresCluster(
            logConnections: true, tls: PostgresCluster.TLS(certificateFile: certificate, keyFile: key))
    }

    /// A server certified for `otherhost` only, by root A; it accepts TLS and plaintext.
    static let otherHost = SharedFixture {
        let (certificate, key) = try pki.get().server("other")
        return try PostgresCluster(
            tls: PostgresCluster.TLS(certificateFile: certificate, keyFile: key, required: false))
    }

    private static func removeAtExit() {
        tlsOnly.made?.stop()
        otherHost.made?.stop()
        if let directory = pki.made?.directory { try? FileManager.default.removeItem(atPath: directory) }
    }
}

extension PostgresCluster {
    /// The superuser's URL on 127.0.0.1 with TLS parameters (`sslrootcert` when `root` is given).
    func superuserURL(sslmode: String, root: String? = nil) -> String {
        superuserURL + "?sslmode=\(sslmode)" + (root.map { "&sslrootcert=\($0)" } ?? "")
    }
}
