import Foundation
import KeychainTestSupport
import Testing

/// keychaind's SSH agent signs with a Secure Enclave key made by `security create-ssh-key -p
/// presence`: each signature asks for the person, through the real polkit. `ssh-keygen` cannot
/// start an authentication agent of its own, and none runs here, so keychaind registers its own
/// with polkit for that process and asks with pinentry on its terminal; the password goes to
/// polkit's setuid helper, which runs the `polkit-1` PAM stack (in ``PolkitTests``, one at a time).
extension PolkitTests {
    /// keychaind run by the account, with pinentry-curses as its dialog, and its SSH socket.
    func sshAgent(_ polkit: PolkitFixture) throws -> (TestDaemon, socket: String) {
        let pinentry = "/usr/bin/pinentry-curses"
        guard FileManager.default.isExecutableFile(atPath: pinentry) else {
            throw TestDaemonFailure(description: "\(pinentry) is missing (.ci/run installs pinentry-curses)")
        }
        let environment = Backend.keychaind.environment(polkit)
        let daemon = try polkit.startAsUser(
            polkit.root + "/keychaind", ["--socket", environment["KEYCHAIN_AGENT_SOCK"]!],
            environment: environment.merging(["KEYCHAIN_PINENTRY": pinentry]) { $1 })
        let socket = polkit.home + "/run/ssh-agent.sock"
        for _ in 0..<600 where !FileManager.default.fileExists(atPath: socket) { usleep(50_000) }
        guard FileManager.default.fileExists(atPath: socket) else {
            daemon.stop()
            throw TestDaemonFailure(description: "keychaind's SSH socket never appeared: \(daemon.errors)")
        }
        return (daemon, socket)
    }

    @Test(
        "ssh-keygen signs through keychaind's SSH agent with a key made with create-ssh-key -p presence: each signature asks for the password on its terminal (keychaind's own polkit agent), a wrong one is asked again, no terminal is refused"
    )
    func sshAgentAsksForAKeyThatAsks() throws {
        let polkit = try PolkitFixture()
        let password = try polkit.newPassword()
        let (daemon, socket) = try sshAgent(polkit)
        defer { daemon.stop() }
        let environment = Backend.keychaind.environment(polkit)
        let made = try polkit.runAsUser(
            polkit.securityTool, ["create-ssh-key", "-p", "presence", "-C", "asks"], environment: environment)
        try #require(made.status == 0 && made.output.hasPrefix("ecdsa-sha2-nistp256 "), "\(made)")
        let publicKey = try polkit.accountFile("asks.pub", made.output)
        let data = try polkit.accountFile("data", "signed through keychaind")
        let ssh = ["SSH_AUTH_SOCK": socket, "TERM": "xterm"]
        let listed = try polkit.runAsUser("/usr/bin/ssh-add", ["-L"], environment: ssh)
        #expect(listed.output.contains(made.output.split(separator: " ")[1]), "listing asks nothing: \(listed)")

        let signed = try polkit.onTerminal(
            ["-Y", "sign", "-n", "file", "-f", publicKey, data],
            steps: [("wants to use an SSH key", "not-the-password"), ("Authentication failed", password)],
            environment: ssh, program: "/usr/bin/ssh-keygen")
        #expect(signed.status == 0, "\(signed) \(daemon.errors)")
        #expect(!signed.output.contains(password) && !daemon.errors.contains(password), "the password is never shown")
        let allowed = try polkit.accountFile("allowed", "me \(made.output)")
        let verified = try polkit.runAsUser(
            "/usr/bin/ssh-keygen", ["-Y", "verify", "-f", allowed, "-I", "me", "-n", "file", "-s", data + ".sig"],
            input: "signed through keychaind")
        #expect(verified.output.contains("Good \"file\" signature"), "\(verified)")

        // keychaind's access log says who used the key, and what allowed it.
        let log = try polkit.runAsUser(polkit.securityTool, ["access-log"], environment: environment)
        #expect(
            log.output.contains("used keys \"asks\"") && log.output.contains("/usr/bin/ssh-keygen")
                && log.output.contains("the owner's authentication"), "\(log)")

        // The next signature asks again: nothing is kept between two.
        try FileManager.default.removeItem(atPath: data + ".sig")
        let again = try polkit.onTerminal(
            ["-Y", "sign", "-n", "file", "-f", publicKey, data], steps: [("wants to use an SSH key", password)],
            environment: ssh, program: "/usr/bin/ssh-keygen")
        #expect(again.status == 0 && again.output.contains("wants to use an SSH key"), "\(again) \(daemon.errors)")

        // No terminal and no display: nobody can be asked, and the signature is refused at once.
        try? FileManager.default.removeItem(atPath: data + ".sig")
        let alone = try polkit.runAsUser(
            "/usr/bin/ssh-keygen", ["-Y", "sign", "-n", "file", "-f", publicKey, data], environment: ssh)
        #expect(alone.status != 0 && !FileManager.default.fileExists(atPath: data + ".sig"), "\(alone)")
    }
}
