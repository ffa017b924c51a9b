import Foundation
@testable import KeychainAgent
import KeychainTestSupport
import Testing

/// A caller in a system service is named by its unit, from the cgroup the system's service
/// manager put it in; nothing else names a unit.
@Suite("Callers in system services")
struct SystemServiceTests {
    /// `/proc/PID/cgroup` texts and the service each names.
    static let cgroups: [(String, String, String?)] = [
        ("unified, a service", "0::/system.slice/backup.service\n", "backup.service"),
        (
            "unified, a template's instance", "0::/system.slice/system-getty.slice/getty@tty1.service\n",
            "getty@tty1.service"
        ),
        (
            "hybrid: systemd's own hierarchy wins", "12:name=systemd:/system.slice/backup.service\n0::/\n",
            "backup.service"
        ),
        (
            "legacy, with controllers",
            "9:name=systemd:/system.slice/cron.service\n4:memory:/system.slice/cron.service\n",
            "cron.service"
        ),
        ("a sub-cgroup a delegated unit made", "0::/system.slice/podman.service/evil.service\n", "podman.service"),
        ("a slice a delegated unit made", "0::/system.slice/podman.service/x.slice/evil.service\n", "podman.service"),
        (
            "the user's own service manager",
            "0::/user.slice/user-1000.slice/user@1000.service/app.slice/backup.service\n", nil
        ),
        ("a login session", "0::/user.slice/user-1000.slice/session-2.scope\n", nil),
        ("a scope under the system slice", "0::/system.slice/docker-4f2a.scope/backup.service\n", nil),
        ("the root", "0::/\n", nil),
        ("outside the reader's cgroup namespace", "0::/../system.slice/backup.service\n", nil),
        ("a system slice lower down", "0::/user.slice/system.slice/backup.service\n", nil),
        ("not a service", "0::/system.slice/backup.socket\n", nil),
        ("nothing", "", nil),
        ("garbage", "system.slice/backup.service", nil),
    ]

    @Test("the first service below the system slice names a process; nothing else does", arguments: cgroups)
    func cgroupPathsNameServices(_ name: String, text: String, expected: String?) {
        #expect(ProcFS.systemService(cgroup: text) == expected, "\(name)")
    }

    @Test("a process the test puts in a system service's cgroup is named by it at accept; its neighbours are not")
    func aConnectedPeerInAServiceIsNamed() throws {
        let unit = "keychain-test-\(UUID().uuidString.prefix(8).lowercased()).service"
        let service = try ScratchCgroup("system.slice/" + unit)
        let delegated = try ScratchCgroup("user.slice/user-0.slice/user@0.service/app.slice/" + unit)
        let agent = try TestAgent()
        for (cgroup, expected) in [(service, unit), (delegated, nil)] as [(ScratchCgroup, String?)] {
            let arguments = cgroup.running([workerPath, "connect", agent.socketPath])
            let child = try Child(arguments[0], Array(arguments.dropFirst()))
            defer { child.finish() }
            try #require(child.readLine() == "connected")
            let (fd, peer) = try agent.acceptPeer()
            defer { close(fd) }
            #expect(peer.systemService == expected, "\(cgroup.path)")
        }
    }
}
