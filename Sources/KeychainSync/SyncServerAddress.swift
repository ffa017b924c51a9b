import Foundation
import PostgresNIO

/// Where the shared store is and which login to use: a `postgresql://` URL, parsed.
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

    /// Creates an address from its parts.
    public init(host: String, port: Int = 5432, database: String, username: String, password: String? = nil) {
        self.host = host
        self.port = port
        self.database = database
        self.username = username
        self.password = password
    }

    /// Parses `postgresql://user:password@host:port/database` (also `postgres://`).
    ///
    /// `sslmode` may be absent, `disable`, `allow` or `prefer`: this transport speaks TLS-less
    /// PostgreSQL only for now (confidentiality rests on the end-to-end encryption; server
    /// authentication will need TLS). Other query parameters are refused.
    ///
    /// - Throws: ``SyncServerError/Code/invalidConfiguration``; the message never quotes the URL.
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
        try Self.checkQuery(parts.queryItems ?? [])
        let path = parts.path.hasPrefix("/") ? String(parts.path.dropFirst()) : parts.path
        self.init(
            host: host, port: parts.port ?? 5432, database: path.isEmpty ? (user.isEmpty ? "postgres" : user) : path,
            username: user,
            password: parts.password)
    }

    private static func checkQuery(_ items: [URLQueryItem]) throws {
        for item in items {
            guard item.name == "sslmode" else {
                throw SyncServerError(.invalidConfiguration, "unsupported URL parameter \(item.name)")
            }
            guard ["disable", "allow", "prefer"].contains(item.value ?? "") else {
                throw SyncServerError(.invalidConfiguration, "TLS (sslmode=\(item.value ?? "")) is not supported yet")
            }
        }
    }

    /// The same address with another login.
    public func with(username: String, password: String?) -> SyncServerAddress {
        var copy = self
        copy.username = username
        copy.password = password
        return copy
    }

    /// `postgresql://user@host:port/database`, without the password.
    public var description: String { "postgresql://\(username)@\(host):\(port)/\(database)" }

    /// The server alone, without a login: what a device keeps to reach it with its own.
    var serverURL: String { "postgresql://\(host):\(port)/\(database)" }

    /// The configuration of one postgres-nio connection (TLS disabled).
    var connectionConfiguration: PostgresConnection.Configuration {
        var configuration = PostgresConnection.Configuration(
            host: host, port: port, username: username, password: password, database: database, tls: .disable)
        // postgres-nio bounds the whole opening with it, startup and login included: a peer that
        // accepts the connection and then says nothing (a half-open link) fails it after 10 s.
        configuration.options.connectTimeout = .seconds(10)
        return configuration
    }

    /// Opens one connection to the address (TLS off: loopback and private networks only).
    public func connect(id: Int, logger: Logger) async throws -> PostgresConnection {
        do {
            return try await PostgresConnection.connect(configuration: connectionConfiguration, id: id, logger: logger)
        } catch {
            throw SyncServerError(postgres: error)
        }
    }
}
