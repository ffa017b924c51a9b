import Crypto
import Foundation
import NIOSSL
import PostgresNIO

// TLS to the server, with libpq's `sslmode` and `sslrootcert`: the parameters' rules, and the
// NIOSSL context postgres-nio opens each connection with. No certificate code of our own: the
// chain and host name checks are swift-nio-ssl's (BoringSSL).

extension SyncServerAddress {
    /// libpq's `sslmode`: whether the link uses TLS and what it checks of the server's certificate.
    ///
    /// `disable` and `allow` connect in plaintext; `prefer` (the default) tries TLS first and
    /// falls back to plaintext only when the server offers no TLS, as libpq's does; `require`,
    /// `verify-ca` and `verify-full` insist on TLS.
    public enum SSLMode: String, Sendable, CaseIterable {
        /// Plaintext.
        case disable
        /// Plaintext (libpq falls back to TLS; a server that insists on TLS refuses this client).
        case allow
        /// TLS when the server offers it, its certificate unchecked; else plaintext (libpq's
        /// default). The records are end-to-end encrypted either way; TLS also hides which
        /// records move and keeps the server's password exchange off the wire.
        case prefer
        /// TLS, the certificate unchecked (its chain checked when a root file is given).
        case require
        /// TLS, the certificate's chain checked against the root.
        case verifyCA = "verify-ca"
        /// TLS, the chain checked and the certificate naming the host.
        case verifyFull = "verify-full"

        /// Whether the connection must use TLS.
        public var usesTLS: Bool { self == .require || self == .verifyCA || self == .verifyFull }

        /// Whether the connection tries TLS: always, or first (`prefer`).
        public var triesTLS: Bool { usesTLS || self == .prefer }

        /// What the mode does, in a few words (`security sync status`).
        public var summary: String {
            switch self {
            case .disable, .allow: "plaintext"
            case .prefer: "TLS when the server offers it, else plaintext; the certificate is not checked"
            case .require: "TLS; the certificate is not checked unless a root file is given"
            case .verifyCA: "TLS; the certificate's chain is checked"
            case .verifyFull: "TLS; the certificate's chain and host name are checked"
            }
        }
    }

    /// The value of `sslrootcert` that names the system's trust store (libpq 16's spelling).
    static let systemRoot = "system"

    /// `sslmode` and `sslrootcert` from a URL's parameters; any other parameter is refused.
    static func parseTLS(_ items: [URLQueryItem]) throws -> (mode: SSLMode, root: String?) {
        var mode: SSLMode?
        var root: String?
        for item in items {
            switch item.name {
            case "sslmode":
                guard mode == nil else { throw SyncServerError(.invalidConfiguration, "sslmode is given twice") }
                guard let value = item.value.flatMap(SSLMode.init(rawValue:)) else {
                    throw SyncServerError(
                        .invalidConfiguration,
                        "sslmode must be disable, allow, prefer, require, verify-ca or verify-full")
                }
                mode = value
            case "sslrootcert":
                guard root == nil else { throw SyncServerError(.invalidConfiguration, "sslrootcert is given twice") }
                guard let value = item.value, !value.isEmpty else {
                    throw SyncServerError(.invalidConfiguration, "sslrootcert needs a file (or system)")
                }
                root = value
            default:
                throw SyncServerError(
                    .invalidConfiguration, "unsupported URL parameter \(item.name) (only sslmode and sslrootcert)")
            }
        }
        return try checkRoot(root, mode: mode ?? .prefer)
    }

    /// Refuses a root with a plaintext mode, and `system` with less than `verify-full`; makes a
    /// root file's path absolute.
    private static func checkRoot(_ root: String?, mode: SSLMode) throws -> (mode: SSLMode, root: String?) {
        guard let root else { return (mode, nil) }
        guard mode.usesTLS else {
            throw SyncServerError(
                .invalidConfiguration,
                "sslrootcert needs sslmode=require, verify-ca or verify-full (sslmode=\(mode.rawValue) is plaintext)")
        }
        if root == systemRoot {
            guard mode == .verifyFull else {
                throw SyncServerError(
                    .invalidConfiguration, "sslrootcert=system needs sslmode=verify-full, as in libpq")
            }
            return (mode, nil)
        }
        let url = URL(fileURLWithPath: root, relativeTo: URL(fileURLWithPath: FileManager.default.currentDirectoryPath))
        return (mode, url.standardizedFileURL.path)
    }

    /// `sslmode=…` and, with a root file, `&sslrootcert=…` (percent-encoded).
    static func query(_ mode: SSLMode, _ root: String?) -> String {
        var query = "sslmode=" + mode.rawValue
        if let root {
            var allowed = CharacterSet.urlQueryAllowed
            allowed.remove(charactersIn: "&=+#;")
            query += "&sslrootcert=" + (root.addingPercentEncoding(withAllowedCharacters: allowed) ?? root)
        }
        return query
    }

    /// What postgres-nio does with TLS: nothing for the plaintext modes, TLS when the server
    /// offers it for `prefer`, else insist on TLS with a context that checks what ``sslMode``
    /// asks for.
    func connectionTLS() throws -> PostgresConnection.Configuration.TLS {
        guard sslMode.triesTLS else { return .disable }
        var configuration = TLSConfiguration.makeClientConfiguration()
        switch sslMode {
        case .verifyFull: configuration.certificateVerification = .fullVerification
        case .verifyCA: configuration.certificateVerification = .noHostnameVerification
        case .prefer:
            // libpq's `prefer` checks nothing of the certificate.
            configuration.certificateVerification = .none
        default:
            // libpq's `require` checks the chain when it has a root file.
            configuration.certificateVerification = sslRootCertificate == nil ? .none : .noHostnameVerification
        }
        if let sslRootCertificate {
            configuration.trustRoots = .certificates(try Self.rootCertificates(at: sslRootCertificate))
        } else {
            configuration.trustRoots = .default
        }
        do {
            let context = try NIOSSLContext(configuration: configuration)
            return sslMode == .prefer ? .prefer(context) : .require(context)
        } catch {
            throw SyncServerError(.invalidConfiguration, "cannot set TLS up: \(error)")
        }
    }

    /// The certificates of a PEM file (one or more).
    ///
    /// - Throws: `.invalidConfiguration` when the file cannot be read or holds no PEM certificate.
    static func rootCertificates(at path: String) throws -> [NIOSSLCertificate] {
        guard let bytes = FileManager.default.contents(atPath: path) else {
            throw SyncServerError(.invalidConfiguration, "cannot read the root certificate file \(path)")
        }
        guard let certificates = try? NIOSSLCertificate.fromPEMBytes(Array(bytes)), !certificates.isEmpty else {
            throw SyncServerError(.invalidConfiguration, "no PEM certificate in the root certificate file \(path)")
        }
        return certificates
    }

    /// SHA-256 of the DER of every certificate in a PEM root file, in order: for a file of one
    /// certificate, its usual fingerprint (`openssl x509 -noout -fingerprint -sha256`).
    ///
    /// - Throws: `.invalidConfiguration` when the file cannot be read or holds no PEM certificate.
    public static func rootFingerprint(ofFile path: String) throws -> Data {
        var hash = SHA256()
        for certificate in try rootCertificates(at: path) {
            guard let der = try? certificate.toDERBytes() else {
                throw SyncServerError(.invalidConfiguration, "cannot encode a certificate of \(path)")
            }
            hash.update(data: der)
        }
        return Data(hash.finalize())
    }
}

extension SyncServerError {
    /// Maps a failure to connect: TLS's own failures in words a user acts on, the others as
    /// ``init(postgres:)``.
    init(postgres error: any Error, host: String, sslMode: SyncServerAddress.SSLMode) {
        let cause = (error as? PSQLError)?.underlying ?? error
        if (error as? PSQLError)?.code == .sslUnsupported {
            self.init(.connectionFailed, "the server does not accept TLS (sslmode=\(sslMode.rawValue))")
        } else if let extra = cause as? NIOSSLExtraError, extra == .failedToValidateHostname {
            self.init(
                .connectionFailed, "TLS: the server's certificate does not name \(host) (sslmode=\(sslMode.rawValue))")
        } else if let tls = cause as? NIOSSLError, case .handshakeFailed(let reason) = tls {
            self.init(.connectionFailed, Self.handshakeMessage("\(reason)", sslMode: sslMode))
        } else {
            self.init(postgres: error)
        }
    }

    /// A failed handshake: an untrusted chain said so, anything else in BoringSSL's words.
    private static func handshakeMessage(_ reason: String, sslMode: SyncServerAddress.SSLMode) -> String {
        if reason.contains("CERTIFICATE_VERIFY_FAILED") {
            return "TLS: the server's certificate is not signed by a trusted root "
                + "(sslrootcert, or the system's trust store; sslmode=\(sslMode.rawValue))"
        }
        return "TLS handshake failed (sslmode=\(sslMode.rawValue)): \(reason)"
    }
}
