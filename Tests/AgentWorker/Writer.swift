import Foundation
import KeychainAgentProtocol
import KeychainAgent
import KeychainClient
import KeychainCore
import KeychainLibc

/// `write <socket> <keychain> <count>`: adds `count` items to the agent's keychain one by one
/// on one connection, printing `ok N` after the agent acknowledged item N, and `stop N` at the
/// first failure (the agent was killed): what a test compares with the keychain afterwards.
func runWriter(socket: String, keychain path: String, count: Int) -> Never {
    guard let connection = try? AgentConnection(socketPath: socket) else {
        say("no agent")
        exit(1)
    }
    let keychain = connection.keychain(at: path)
    for index in 0..<count {
        let item = Item(
            class: .genericPassword, attributes: [.account: .string("item-\(index)"), .service: .string("crash")],
            data: Data("secret-\(index)".utf8))
        do {
            _ = try keychain.add(item)
        } catch {
            say("stop \(index)")
            exit(0)
        }
        say("ok \(index)")
    }
    say("done")
    exit(0)
}

/// `many <socket> <count>`: opens `count` connections to the agent and keeps them all open,
/// asking each for the default keychain's status, then asks each once more; prints
/// `ok N` with how many of the 2 × `count` calls were answered.
func runManyClients(socket: String, count: Int) -> Never {
    var limit = rlimit()
    if getrlimit(RLIMIT_NOFILE_VALUE, &limit) == 0 {
        limit.rlim_cur = limit.rlim_max
        _ = setrlimit(RLIMIT_NOFILE_VALUE, &limit)
    }
    var connections: [AgentConnection] = []
    var answered = 0
    var firstError: String?
    func status(_ connection: AgentConnection) {
        do {
            _ = try connection.call(AgentInterface.status, .init(keychain: ""))
            answered += 1
        } catch {
            firstError = firstError ?? "\(error)"
        }
    }
    for _ in 0..<count {
        guard let connection = try? AgentConnection(socketPath: socket) else { continue }
        connections.append(connection)
        status(connection)
    }
    for connection in connections { status(connection) }
    say("ok \(answered)" + (firstError.map { "; first error: " + $0 } ?? ""))
    exit(0)
}

private var RLIMIT_NOFILE_VALUE: __rlimit_resource_t { __rlimit_resource_t(RLIMIT_NOFILE.rawValue) }
/// `library add|find <service>`: what a library (`Security`, `Keychain`, …) does on its first
/// need of the default keychain, through `Keychains`: add a generic password of `service` with
/// the secret read from standard input, or find it and print it. Says `agent <pid>` (the agent
/// that served, by `SO_PEERCRED`) or `agent none`, then `ok`, `found <secret>` or
/// `error <OSStatus>`.
func runLibrary(_ action: String, service: String) -> Never {
    do {
        let keychain = try Keychains.current()
        if let agent = try Keychains.agent() {
            let fd = try AgentConnection.connect(agent.socketPath, timeout: .seconds(5))
            let peer = try? PeerCredentials(socket: fd)
            close(fd)
            say("agent \(peer.map { String($0.pid) } ?? "unknown")")
        } else {
            say("agent none")
        }
        let query = ItemQuery(class: .genericPassword, attributes: [.service: .string(service)])
        if action == "add" {
            let secret = readLine(from: 0) ?? ""
            _ = try keychain.add(
                Item(class: .genericPassword, attributes: [.service: .string(service)], data: Data(secret.utf8)))
            say("ok")
        } else {
            guard let found = try keychain.findFirst(query, includeData: true) else {
                say("error \(KeychainError.Code.itemNotFound.rawValue)")
                exit(0)
            }
            say("found " + String(decoding: found.data ?? Data(), as: UTF8.self))
        }
    } catch let error as KeychainError {
        say("error \(error.code.rawValue)")
    } catch {
        say("error unexpected")
    }
    exit(0)
}
