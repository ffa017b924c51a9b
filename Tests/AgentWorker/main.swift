// The helper process of KeychainAgentTests: a client, a hardened key holder, a memory reader.
//
//   keychain-agent-test-worker connect <socket>               connect, say "connected" (or
//       "connect-failed <errno>"), then obey stdin lines: "exec <path> <args…>" execs (the socket
//       stays open), end of input exits
//   keychain-agent-test-worker fake-flatpak <dir> <socket> <app-id>
//                                                               write <dir>/.flatpak-info, chdir
//                                                               there, then act as connect
//   keychain-agent-test-worker secret harden|plain            fill a SecureBuffer with 0x5A, harden
//       or not, say "<pid> <address-hex> <dumpable 0|1> <core-limit>", wait for end of input
//   keychain-agent-test-worker readmem <pid> <address-hex> <count>
//                                                               say "ok <hex>" or "denied <errno>"
//   keychain-agent-test-worker many <socket> <count>   keep <count> connections to the agent open,
//       two calls on each; prints `ok N` with the calls answered (and `; first error: …` if any failed)
//   keychain-agent-test-worker write <socket> <keychain> <count>   add items through the agent,
//       printing `ok N` for each acknowledged one (KeychaindTests kill the agent meanwhile)
//   keychain-agent-test-worker serve <dir> <groups> [<pid>]   serve keychains in <dir> on
//       <dir>/agent.sock (AgentService; every caller gets the comma-separated <groups>, or, with
//       <pid>, "mine" for that process and "theirs" for others), say "ready", exit at end of input
//   keychain-agent-test-worker serve-identified <dir> <manifests> <groups>
//                                                               keychaind in small: the socket systemd
//       passed (SystemdActivation) or an AgentListener's at <dir>/run/keychain/agent.sock, served
//       by DBusServer.serve; each caller gets what CallerDirectory says (manifests in <manifests>,
//       default groups <groups>); say "ready activated|listener set|unset" (whether any LISTEN_*
//       variable is left), exit at
//       end of input
//   keychain-agent-test-worker library add|find <service>     the default keychain as a library
//       gets it from Keychains (KEYCHAIN_AGENT and the rest from the environment): add a
//       generic password (secret on stdin) or find it; say "agent <pid>|none", then "ok",
//       "found <secret>" or "error <OSStatus>"
//   keychain-agent-test-worker status <socket>                 call Status over D-Bus, say
//       "groups <comma-separated>" or "error <OSStatus>"
import CKeychainAgent
import DBusNIO
import DBusWire
import Foundation
import KeychainAgent
import KeychainAgentProtocol
import KeychainCore
import KeychainLibc

func say(_ line: String) {
    let text = line + "\n"
    _ = text.withCString { write(1, $0, strlen($0)) }
}

func readLine(from fd: Int32) -> String? {
    var bytes: [UInt8] = []
    var byte: UInt8 = 0
    while true {
        let count = read(fd, &byte, 1)
        if count <= 0 { return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self) }
        if byte == 10 { return String(decoding: bytes, as: UTF8.self) }
        bytes.append(byte)
    }
}

func connectTo(_ path: String) -> Int32 {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
        let bytes = Array(path.utf8)
        raw.copyBytes(from: bytes)
        raw[bytes.count] = 0
    }
    let result = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
        }
    }
    return result == 0 ? fd : -errno
}

func clientLoop(_ socketPath: String) -> Never {
    let fd = connectTo(socketPath)
    guard fd >= 0 else {
        say("connect-failed \(-fd)")
        exit(3)
    }
    say("connected")
    while let line = readLine(from: 0) {
        let words = line.split(separator: " ").map(String.init)
        if words.first == "exec", words.count >= 2 {
            var arguments = Array(words.dropFirst()).map { strdup($0) }
            arguments.append(nil)
            execv(words[1], &arguments)
            say("exec-failed \(errno)")
        }
    }
    exit(0)
}

func secret(harden: Bool) -> Never {
    do {
        var buffer = try SecureBuffer(count: 64)
        buffer.withUnsafeMutableBytes { _ = $0.initializeMemory(as: UInt8.self, repeating: 0x5A) }
        if harden { try ProcessHardening.apply() }
        let state = try ProcessHardening.current()
        // Everything happens inside the buffer's access scope: a non-copyable value may be
        // destroyed right after its last use.
        buffer.withUnsafeBytes { bytes in
            let address = String(UInt(bitPattern: bytes.baseAddress), radix: 16)
            say("\(getpid()) \(address) \(state.isNonDumpable ? 0 : 1) \(state.coreLimit.soft)")
            while readLine(from: 0) != nil {}
        }
        exit(0)
    } catch {
        say("error \(error)")
        exit(4)
    }
}

func readMemory(pid: String, address: String, count: Int) -> Never {
    let fd = open("/proc/\(pid)/mem", O_RDONLY)
    guard fd >= 0 else {
        say("denied \(errno)")
        exit(0)
    }
    var bytes = [UInt8](repeating: 0, count: count)
    let got = pread(fd, &bytes, count, off_t(Int64(address, radix: 16) ?? 0))
    guard got == count else {
        say("denied \(errno)")
        exit(0)
    }
    say("ok " + bytes.map { String($0, radix: 16) }.joined())
    exit(0)
}

let arguments = CommandLine.arguments
switch arguments.count > 1 ? arguments[1] : "" {
case "connect" where arguments.count == 3:
    clientLoop(arguments[2])
case "fake-flatpak" where arguments.count == 5:
    let info = "[Application]\nname=\(arguments[4])\nruntime=runtime/org.freedesktop.Platform/x86_64/24.08\n"
    let fd = open(arguments[2] + "/.flatpak-info", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    _ = info.withCString { write(fd, $0, strlen($0)) }
    close(fd)
    chdir(arguments[2])
    clientLoop(arguments[3])
case "secret" where arguments.count == 3:
    secret(harden: arguments[2] == "harden")
case "readmem" where arguments.count == 5:
    readMemory(pid: arguments[2], address: arguments[3], count: Int(arguments[4]) ?? 0)
case "many" where arguments.count == 4:
    runManyClients(socket: arguments[2], count: Int(arguments[3]) ?? 0)
case "write" where arguments.count == 5:
    runWriter(socket: arguments[2], keychain: arguments[3], count: Int(arguments[4]) ?? 0)
case "serve" where arguments.count == 4 || arguments.count == 5:
    let directory = arguments[2]
    let fixed = AccessGroups(arguments[3].split(separator: ",").map(String.init))
    let mine = arguments.count == 5 ? Int32(arguments[4]) : nil
    var configuration = KeychainConfiguration.testing(deviceKey: .file(at: directory + "/config/device-key"))
    configuration.accessGroups = .standard
    let paths = KeychainPaths(environment: [
        "HOME": directory, "XDG_DATA_HOME": directory + "/data", "XDG_CONFIG_HOME": directory + "/config",
    ])
    let service = AgentService(configuration: configuration, paths: paths) { peer in
        guard let mine else { return fixed }
        return AccessGroups([peer?.pid == mine ? "mine" : "theirs"])
    }
    let objects = DBusObjectTree()
    try objects.register(service.interface, at: AgentInterface.objectPath)
    let server = try await DBusServer.bind(unixPath: directory + "/agent.sock", objects: objects)
    say("ready")
    while readLine(from: 0) != nil {}
    try? await server.close()
    exit(0)
case "serve-identified" where arguments.count == 5:
    let directory = arguments[2]
    let resolver = IdentityResolver(
        manifests: ManifestDirectory(path: arguments[3]),
        defaultGroups: AccessGroups(arguments[4].split(separator: ",").map(String.init)))
    let callers = CallerDirectory(resolver: resolver)
    var configuration = KeychainConfiguration.testing(deviceKey: .file(at: directory + "/config/device-key"))
    configuration.accessGroups = .standard
    let paths = KeychainPaths(environment: [
        "HOME": directory, "XDG_DATA_HOME": directory + "/data", "XDG_CONFIG_HOME": directory + "/config",
    ])
    let service = AgentService(configuration: configuration, paths: paths, callers: callers)
    let objects = DBusObjectTree()
    try objects.register(service.interface, at: AgentInterface.objectPath)
    let socketPath = directory + "/run/keychain/agent.sock"
    var listener: AgentListener?
    let descriptor: Int32
    if let activated = SystemdActivation.listeningSocket(environment: ProcessInfo.processInfo.environment) {
        descriptor = activated
    } else {
        mkdir(directory + "/run", 0o700)
        let bound = try AgentListener(location: AgentSocketLocation(socketPath: socketPath))
        listener = bound
        descriptor = bound.fileDescriptor
    }
    let server = try await DBusServer.serve(listeningSocket: descriptor, unixPath: socketPath, objects: objects)
    let cleared = SystemdActivation.variables.allSatisfy { getenv($0) == nil }
    say("ready \(listener == nil ? "activated" : "listener") \(cleared ? "unset" : "set")")
    while readLine(from: 0) != nil {}
    try? await server.close()
    listener = nil
    exit(0)
case "library" where arguments.count == 4 && (arguments[2] == "add" || arguments[2] == "find"):
    runLibrary(arguments[2], service: arguments[3])
case "status" where arguments.count == 3:
    do {
        let connection = try await DBusConnection.connect(to: .unixPath(arguments[2]))
        let reply = try await connection.call(
            .methodCall(
                path: AgentInterface.objectPath, interface: AgentInterface.name,
                member: AgentInterface.status.name, body: [.string("")]))
        var groups = reply.body.first?.stringKeyedEntries?["accessGroups"]
        if case .variant(let inner) = groups { groups = inner }
        guard case .array(_, let values) = groups else {
            say("error unexpected reply")
            exit(1)
        }
        let names = values.compactMap { value -> String? in
            if case .string(let name) = value { return name }
            return nil
        }
        say("groups " + names.joined(separator: ","))
        await connection.close()
    } catch let error as DBusError {
        say("error \(AgentCodec.keychainError(error)?.osStatus ?? 0)")
    } catch {
        say("error \(error)")
    }
    exit(0)
default:
    say("usage: keychain-agent-test-worker connect|fake-flatpak|secret|readmem|serve|serve-identified|library|status …")
    exit(2)
}
