import Foundation
import PostgresNIO

/// Where the shared store is, which login to use and how to protect the link: a `postgresql://`
/// URL, parsed.
///
/// TLS follows libpq's `sslmode` and `sslrootcert` (see ``SSLMode``), so a URL that works with
/// `psql` works here:
///
///     postgresql://user@db.example.net/keychain?sslmode=verify-full&sslrootcert=/etc/keychain/root.crt
///
/// The password stays out of ``description``, so an address may be logged.
public struct SyncServerAddress: Sendable, Equatable, CustomStringConvertible {
    /// The server's host name or address.
    public var host: String
    /// The server's TCP port.
    public var port: Int
    /// The database (the login's name when the URL has none, as libpq does).
    public var database: String
    /// The login role.
    public var username: String
    /// The login's password.
    public var password: String?
    /// Whether and how the connection uses TLS (libpq's `sslmode`; `prefer` when the URL has none).
    public var sslMode: SSLMode
    /// The PEM file of the root certificates that vouch for the server (libpq's `sslrootcert`),
    /// an absolute path; `nil`: the system's trust store.
    public var sslRootCertificate: String?

    /// Creates an address from its parts.
    public init(
        host: String, port: Int = 5432, database: String, username: String, password: String? = nil,
        sslMode: SSLMode = .prefer, sslRootCertificate: String? = nil
    ) {
        self.host = host
        self.port = port
        self.database = database
        self.username = username
        self.password = password
        self.sslMode = sslMode
        self.sslRootCertificate = sslRootCertificate
    }

    /// Parses `postgresql://user:password@host:port/database` (also `postgres://`), with the
    /// optional parameters `sslmode` and `sslrootcert`.
    ///
    /// - `sslmode=disable` or `allow`: plaintext. The records stay end-to-end encrypted, but the
    ///   login exchange and the rows' metadata do not, and nothing proves the server's identity.
    /// - `prefer` (the default): TLS when the server offers it, the certificate unchecked, else
    ///   plaintext, as libpq's `prefer`.
    /// - `require`: TLS without checking the certificate (checking its chain, as libpq does,
    ///   when `sslrootcert` is given).
    /// - `verify-ca`: TLS with the certificate's chain checked against `sslrootcert` (a PEM file)
    ///   or, without it, the system's trust store.
    /// - `verify-full`: as `verify-ca`, and the certificate must name the host (a DNS name or
    ///   an IP address in its subject alternative names).
    /// - `sslrootcert=system` means the system's trust store and, as in libpq, needs `verify-full`.
    ///   A relative path is taken from the current directory and kept absolute.
    ///
    /// - Throws: ``SyncServerError/Code/invalidConfiguration`` for another parameter or value, a
    ///   root file with a plaintext mode, or a URL without host or user; the message never
    ///   quotes the URL.
    public init(url: String) throws {
        try self.init(url: url, requiresUser: true)
    }

    /// Parses a URL; without `requiresUser`, a URL without a user names the login `""` (the
    /// caller sets it) and, without a path, the database `postgres`.
    init(url: String, requiresUser: Bool) throws {
        guard let parts = URLComponents(string: url), let scheme = parts.scheme?.lowercased(),
            scheme == "postgresql" || scheme == "postgres"
        else { throw SyncServerError(.invalidConfiguration, "not a postgresql:// URL") }
        guard let host = parts.host, !host.isEmpty else {
            throw SyncServerError(.invalidConfiguration, "the server URL has no host")
        }
        let user = parts.user ?? ""
        guard !user.isEmpty || !requiresUser else {
            throw SyncServerError(.invalidConfiguration, "the server URL has no user name")
        }
        let tls = try Self.parseTLS(parts.queryItems ?? [])
        let path = parts.path.hasPrefix("/") ? String(parts.path.dropFirst()) : parts.path
        self.init(
            host: host, port: parts.port ?? 5432, database: path.isEmpty ? (user.isEmpty ? "postgres" : user) : path,
            username: user, password: parts.password, sslMode: tls.mode, sslRootCertificate: tls.root)
    }

    /// The same address with another login.
    public func with(username: String, password: String?) -> SyncServerAddress {
        var copy = self
        copy.username = username
        copy.password = password
        return copy
    }

    /// `postgresql://user@host:port/database?sslmode=…`, without the password.
    public var description: String {
        "postgresql://\(username)@\(host):\(port)/\(database)?" + Self.query(sslMode, sslRootCertificate)
    }

    /// The server alone, without a login, with its TLS parameters (none for libpq's default,
    /// `prefer`): what a device keeps to reach it with its own.
    var serverURL: String {
        let query = sslMode == .prefer && sslRootCertificate == nil ? "" : "?" + Self.query(sslMode, sslRootCertificate)
        return "postgresql://\(host):\(port)/\(database)" + query
    }

    /// The configuration of one postgres-nio connection, its TLS context made from
    /// ``sslMode`` and ``sslRootCertificate`` (the root file is read now).
    func connectionConfiguration() throws -> PostgresConnection.Configuration {
        var configuration = PostgresConnection.Configuration(
            host: host, port: port, username: username, password: password, database: database,
            tls: try connectionTLS())
        // postgres-nio bounds the whole opening with it, startup and login included: a peer that
        // accepts the connection and then says nothing (a half-open link) fails it after 10 s.
        configuration.options.connectTimeout = .seconds(10)
        return configuration
    }

    /// Opens one connection to the address, with TLS as ``sslMode`` says.
    ///
    /// - Throws: ``SyncServerError``: `.invalidConfiguration` when the root file cannot be read,
    ///   `.connectionFailed` when the server refuses TLS or its certificate fails the checks,
    ///   `.authenticationFailed` when it refuses the login.
    public func connect(id: Int, logger: Logger) async throws -> PostgresConnection {
        let configuration = try connectionConfiguration()
        do {
            return try await PostgresConnection.connect(configuration: configuration, id: id, logger: logger)
        } catch {
            throw SyncServerError(postgres: error, host: host, sslMode: sslMode)
        }
    }
}
