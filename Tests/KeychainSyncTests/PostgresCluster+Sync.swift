import Foundation
import Logging
import PostgresScratchServer
import PostgresNIO

@testable import KeychainSync

extension PostgresCluster {
    /// The address of `user` with `password` on this server.
    func address(user: String, password: String?) -> SyncServerAddress {
        SyncServerAddress(host: "127.0.0.1", port: port, database: database, username: user, password: password)
    }

    /// Opens a postgres-nio connection as `user` (the superuser when `nil`) for `body`.
    func withConnection<T>(
        user: String? = nil, password: String? = nil, _ body: (PostgresConnection) async throws -> T
    ) async throws -> T {
        let target =
            user.map { address(user: $0, password: password) }
            ?? address(user: "postgres", password: superuserPassword)
        let connection = try await target.connect(id: 1, logger: Logger(label: "test.postgres"))
        do {
            let result = try await body(connection)
            try? await connection.close()
            return result
        } catch {
            try? await connection.close()
            throw error
        }
    }

}
