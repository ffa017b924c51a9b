import Foundation
import PostgresNIO

/// A failure of the shared store or of the way to it.
///
/// The message never holds a password, a SCRAM verifier or a URL with its password: it is the
/// transport's own wording, or PostgreSQL's primary message (never its detail, which can quote
/// row values, nor the statement).
public struct SyncServerError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure it is.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's name.
        public let rawValue: String
        private init(_ rawValue: String) { self.rawValue = rawValue }

        /// The server URL or configuration cannot be used.
        public static let invalidConfiguration = Code("invalidConfiguration")
        /// An argument the server would refuse (a role name, a channel, a commit's sequence numbers).
        public static let invalidArgument = Code("invalidArgument")
        /// The zone, device or invitation does not exist, or the login may not see it.
        public static let notFound = Code("notFound")
        /// The login is not allowed to do this (SQLSTATE class 42501, row-level security).
        public static let permissionDenied = Code("permissionDenied")
        /// The server refused the login (wrong password, revoked device, expired invitation).
        public static let authenticationFailed = Code("authenticationFailed")
        /// The connection could not be made or was lost.
        public static let connectionFailed = Code("connectionFailed")
        /// The row already exists (a zone, a login name, a key of the same identity).
        public static let conflict = Code("conflict")
        /// A concurrent transaction won (SQLSTATE 40001 or 40P01).
        public static let serializationFailure = Code("serializationFailure")
        /// The transport was shut down.
        public static let closed = Code("closed")
        /// Any other server error.
        public static let server = Code("server")

        /// The code's name.
        public var description: String { rawValue }
    }

    /// What kind of failure it is.
    public var code: Code
    /// A human-readable explanation without secrets.
    public var message: String
    /// PostgreSQL's SQLSTATE, when the server reported the error.
    public var sqlState: String?

    /// Creates an error.
    public init(_ code: Code, _ message: String, sqlState: String? = nil) {
        self.code = code
        self.message = message
        self.sqlState = sqlState
    }

    /// `code: message (SQLSTATE)`.
    public var description: String {
        if let sqlState { return "\(code): \(message) (SQLSTATE \(sqlState))" }
        return "\(code): \(message)"
    }
}

extension SyncServerError {
    /// Maps any error from postgres-nio (or passes a ``SyncServerError`` through).
    init(postgres error: any Error) {
        if let error = error as? SyncServerError {
            self = error
        } else if let error = error as? PSQLError {
            self.init(psql: error)
        } else if let error = error as? PostgresTransactionError {
            let inner = error.closureError ?? error.commitError ?? error.beginError ?? error.rollbackError
            self = inner.map { SyncServerError(postgres: $0) } ?? SyncServerError(.server, "transaction failed")
        } else if error is CancellationError {
            self.init(.connectionFailed, "cancelled")
        } else if error is PostgresDecodingError {
            self.init(.server, "unexpected column type in the server's reply")
        } else {
            self.init(.connectionFailed, "\(type(of: error))")
        }
    }

    private init(psql error: PSQLError) {
        guard let info = error.serverInfo, let state = info[.sqlState] else {
            self.init(Self.code(forClient: error.code), "\(error.code)")
            return
        }
        self.init(Self.code(forSQLState: state), info[.message] ?? "server error", sqlState: state)
    }

    private static func code(forClient code: PSQLError.Code) -> Code {
        switch code {
        case .clientClosedConnection, .poolClosed: .closed
        case .unsupportedAuthMechanism, .authMechanismRequiresPassword, .saslError: .authenticationFailed
        default: .connectionFailed
        }
    }

    /// The code for a SQLSTATE (PostgreSQL's Appendix A classes).
    static func code(forSQLState state: String) -> Code {
        switch state {
        case "42501": .permissionDenied
        case "40001", "40P01": .serializationFailure
        case "P0002", "02000": .notFound
        case "23505", "42710": .conflict
        case "22023", "23514", "23502", "23503", "22001": .invalidArgument
        case "57P01", "57P02", "57P03": .connectionFailed
        default: state.hasPrefix("28") ? .authenticationFailed : (state.hasPrefix("08") ? .connectionFailed : .server)
        }
    }
}
