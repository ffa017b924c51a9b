import DBusWire
import Foundation
import KeychainAgent
import KeychainLibc
import Synchronization
import Testing

/// ``BusNameBirths``: when each unique name appeared, from the bus's own announcements only, and
/// the check that the process behind a pid is no younger than its connection.
@Suite("Bus name births")
struct BusNameBirthsTests {
    /// A clock the test moves.
    final class Clock: Sendable {
        let tick = Atomic<UInt64>(100)
        func now() -> UInt64 { tick.load(ordering: .relaxed) }
    }

    static func nameOwnerChanged(_ name: String, _ old: String, _ new: String, sender: String) -> DBusMessage {
        var signal = DBusMessage.signal(
            path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus", member: "NameOwnerChanged",
            body: [.string(name), .string(old), .string(new)])
        signal.sender = sender
        return signal
    }

    @Test("names appear and leave only by the bus's own NameOwnerChanged; unknown names date from the watch's start")
    func birthsFromTheBusOnly() {
        let clock = Clock()
        let births = BusNameBirths(now: { clock.now() })
        #expect(births.latestBirth(of: ":1.5") == nil, "nothing is known before watching")
        births.startWatching()
        clock.tick.store(200, ordering: .relaxed)
        births.record(Self.nameOwnerChanged(":1.7", "", ":1.7", sender: DBusMessage.busDriverName))
        // Another connection cannot announce, or retire, a name.
        clock.tick.store(300, ordering: .relaxed)
        births.record(Self.nameOwnerChanged(":1.8", "", ":1.8", sender: ":1.9"))
        births.record(Self.nameOwnerChanged(":1.7", ":1.7", "", sender: ":1.9"))
        // Well-known names are not unique names.
        births.record(Self.nameOwnerChanged("org.example.X", "", ":1.7", sender: DBusMessage.busDriverName))
        #expect(births.latestBirth(of: ":1.7") == 200)
        #expect(births.latestBirth(of: ":1.8") == 100, "never announced: before the watch began")
        #expect(births.latestBirth(of: "org.example.X") == 100)
        births.record(Self.nameOwnerChanged(":1.7", ":1.7", "", sender: DBusMessage.busDriverName))
        #expect(births.latestBirth(of: ":1.7") == 100, "gone: forgotten")
    }

    @Test("a process no younger than the name passes; one started after it is refused")
    func youngerProcessRefused() throws {
        let started = try #require(
            (try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8)).flatMap { text -> UInt64? in
                guard let close = text.lastIndex(of: ")") else { return nil }
                let fields = text[text.index(after: close)...].split(separator: " ")
                return fields.count > 19 ? UInt64(fields[19]) : nil
            })
        let clock = Clock()
        let births = BusNameBirths(now: { clock.now() })
        try births.requireOriginal(pid: getpid(), of: ":1.1")  // not watching: nothing is checked
        clock.tick.store(started, ordering: .relaxed)
        births.startWatching()
        try births.requireOriginal(pid: getpid(), of: ":1.1")
        clock.tick.store(started + 1, ordering: .relaxed)
        births.appeared(":1.2")
        try births.requireOriginal(pid: getpid(), of: ":1.2")
        clock.tick.store(started - 1, ordering: .relaxed)
        births.appeared(":1.3")
        #expect(throws: AgentError.self) { try births.requireOriginal(pid: getpid(), of: ":1.3") }
        #expect(BusNameBirths.bootTicks() >= started, "the boot clock counts as /proc does")
    }
}
