import DBusNIO
import DBusWire
import Foundation
import KeychainAgentProtocol
import KeychainClient
import KeychainCore
import Testing

@testable import KeychainAgent

/// The agent keeps each keychain's lock settings in its file, and locks a password keychain
/// left without a request for its lock interval (the agent in a process of its own, as in
/// ``AgentServiceTests``).
@Suite("Agent settings and idle lock")
struct IdleLockTests {
    typealias Running = AgentServiceTests.Running

    /// A password keychain ("P") made through the agent: created, so unlocked.
    static func makeKeychain(_ agent: Running, _ connection: DBusConnection, name: String = "idle") async throws
        -> String
    {
        try FileManager.default.createDirectory(
            atPath: agent.directory + "/data/keychains", withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        let path = agent.directory + "/data/keychains/\(name).keychain-db"
        _ = try await AgentServiceTests.call(
            connection, AgentInterface.create.name, [.string(path)] + AgentServiceTests.password("P"))
        return path
    }

    static func isLocked(_ connection: DBusConnection, _ path: String) async throws -> Bool {
        let status = try await AgentServiceTests.call(connection, AgentInterface.status.name, [.string(path)])[0]
            .stringKeyedEntries
        return status?["isLocked"] != .variant(.boolean(false))
    }

    static func setInterval(_ connection: DBusConnection, _ path: String, _ seconds: Int?) async throws {
        _ = try await AgentServiceTests.call(
            connection, AgentInterface.setSettings.name,
            [.string(path), AgentCodec.encode(KeychainSettings(lockInterval: seconds))])
    }

    /// Asks for the lock state every 100 ms until the keychain is locked or `limit` has passed
    /// since `start`; the time, from `start`, of the first answer that said locked.
    static func pollUntilLocked(
        _ connection: DBusConnection, _ path: String, from start: ContinuousClock.Instant, limit: Duration
    ) async throws -> Duration? {
        while ContinuousClock.now - start < limit {
            if try await isLocked(connection, path) { return ContinuousClock.now - start }
            try await Task.sleep(for: .milliseconds(100))
        }
        return try await isLocked(connection, path) ? ContinuousClock.now - start : nil
    }

    /// Another app's lookups that find none of a keychain's items do not keep it unlocked
    /// (issue 50, item 5): through the agent, lookups that find nothing, every 200 ms, let a
    /// keychain with a 1 s interval lock.
    @Test("lookups that find nothing do not keep a keychain from idling out")
    func lookupsThatFindNothingDoNotCount() async throws {
        let agent = try await Running(groups: ["app", "*"])
        let connection = try await agent.connection()
        let path = try await Self.makeKeychain(agent, connection)
        let handle: any KeychainHandle = try AgentConnection(socketPath: agent.socket).keychain(at: path)
        _ = try handle.add(Item(class: .genericPassword, attributes: [.service: .string("kept")], data: Data("s".utf8)))
        try await Self.setInterval(connection, path, 1)
        let nothing = ItemQuery(class: .genericPassword, attributes: [.service: .string("someone else's")])
        let start = ContinuousClock.now
        var locked = false
        while !locked && ContinuousClock.now - start < .seconds(30) {
            _ = try? handle.find(nothing, includeData: false)
            try await Task.sleep(for: .milliseconds(200))
            locked = try await Self.isLocked(connection, path)
        }
        #expect(locked, "lookups that saw nothing kept the keychain unlocked")
        await connection.close()
        await agent.close()
    }

    /// The rule itself, without a clock to race: a lookup moves the deadline only when it saw items.
    @Test("a lookup moves a keychain's deadline only when it saw items")
    func lookupMovesTheDeadlineOnlyWhenItSawItems() throws {
        let directory = try TemporaryDirectory()
        let configuration = KeychainConfiguration.testing(deviceKey: .file(at: directory.path + "/device-key"))
        let keychain = try KeychainDatabase.create(
            at: directory.path + "/i.keychain-db", password: Data("P".utf8), configuration: configuration)
        try keychain.unlock(password: Data("P".utf8))
        try keychain.setSettings(KeychainSettings(lockInterval: 600))
        let idle = IdleLock()
        idle.reread(keychain)
        let path = try #require(keychain.path)
        let first = try #require(idle.deadline(of: path))
        usleep(20_000)
        idle.around(keychain, .lookup, seen: { (_: Bool) in false }) { false }
        #expect(idle.deadline(of: path) == first, "a lookup that saw nothing left the deadline")
        idle.around(keychain, .lookup, seen: { (_: Bool) in true }) { true }
        #expect(try #require(idle.deadline(of: path)) > first, "a lookup that saw items moved it")
        idle.forget(path)
    }

    @Test("Settings and SetSettings keep the settings in the keychain's file; a locked keychain's cannot change")
    func settingsRoundTripThroughTheAgent() async throws {
        let agent = try await Running(groups: ["app", "*"])
        let connection = try await agent.connection()
        let path = try await Self.makeKeychain(agent, connection)
        let initial = try await AgentServiceTests.call(connection, AgentInterface.settings.name, [.string(path)])
        #expect(try AgentCodec.decodeSettings(initial[0]) == KeychainSettings())

        let chosen = KeychainSettings(lockInterval: 600, locksOnSleep: true)
        _ = try await AgentServiceTests.call(
            connection, AgentInterface.setSettings.name, [.string(path), AgentCodec.encode(chosen)])
        let read = try await AgentServiceTests.call(connection, AgentInterface.settings.name, [.string(path)])
        #expect(try AgentCodec.decodeSettings(read[0]) == chosen)

        _ = try await AgentServiceTests.call(connection, AgentInterface.lock.name, [.string(path)])
        let refused = await AgentServiceTests.failure(
            connection, AgentInterface.setSettings.name, [.string(path), AgentCodec.encode(KeychainSettings())])
        #expect(refused?.code == .interactionNotAllowed)
        // Reading needs no unlock, and the file holds what was set.
        let locked = try await AgentServiceTests.call(connection, AgentInterface.settings.name, [.string(path)])
        #expect(try AgentCodec.decodeSettings(locked[0]) == chosen)
        let configuration = KeychainConfiguration.testing(deviceKey: .file(at: agent.directory + "/config/device-key"))
        #expect(try KeychainDatabase.open(at: path, configuration: configuration).settings == chosen)

        // The client's KeychainHandle reads and writes them through the agent.
        let client = try AgentConnection(socketPath: agent.socket)
        let handle: any KeychainHandle = client.keychain(at: path)
        #expect(try handle.settings == chosen)
        try handle.unlock(password: Data("P".utf8))
        try handle.setSettings(KeychainSettings(lockInterval: 900))
        #expect(try handle.settings == KeychainSettings(lockInterval: 900))
        // LockAll, which names no keychain, locks it and ends its idle timer.
        _ = try await AgentServiceTests.call(connection, AgentInterface.lockAll.name, [])
        #expect(try await Self.isLocked(connection, path))
        client.close()
        await connection.close()
        await agent.close()
    }

    @Test("only a caller with every group changes a keychain's settings; any caller may read them")
    func changingSettingsIsAdministration() async throws {
        let agent = try await Running(groups: ["app"])
        let connection = try await agent.connection()
        let refused = await AgentServiceTests.failure(
            connection, AgentInterface.setSettings.name,
            [.string(""), AgentCodec.encode(KeychainSettings(lockInterval: 5))])
        #expect(refused?.code == .missingEntitlement)
        let read = try await AgentServiceTests.call(connection, AgentInterface.settings.name, [.string("")])
        #expect(try AgentCodec.decodeSettings(read[0]) == KeychainSettings())
        await connection.close()
        await agent.close()
    }

    @Test("an unlocked password keychain with a 2 s lock interval is locked by the agent about 2 s after its last use")
    func idleKeychainIsLocked() async throws {
        let agent = try await Running(groups: ["app", "*"])
        let connection = try await agent.connection()
        let path = try await Self.makeKeychain(agent, connection)
        #expect(try await !Self.isLocked(connection, path))
        let item = Item(
            class: .genericPassword, attributes: [.service: .string("deploy"), .account: .string("ci")],
            data: Data("s3cret".utf8))
        _ = try await AgentServiceTests.call(
            connection, AgentInterface.add.name, [.string(path), AgentCodec.encode(item)])

        let start = ContinuousClock.now
        try await Self.setInterval(connection, path, 2)
        let stillUnlocked = try await !Self.isLocked(connection, path)
        // Only meaningful while well before the deadline: a loaded machine may take longer.
        if ContinuousClock.now - start < .seconds(1) { #expect(stillUnlocked, "locked before its interval passed") }

        let lockedAfter = try await Self.pollUntilLocked(connection, path, from: start, limit: .seconds(3))
        #expect(lockedAfter != nil, "still unlocked 3 s after a 2 s interval was set")
        // The deadline is 2 s after the request that set it, which came after `start`.
        if let lockedAfter { #expect(lockedAfter >= .seconds(2), "locked after \(lockedAfter)") }
        // Locked for real: the items are out of reach until an unlock.
        let query = AgentCodec.encode(ItemQuery(class: .genericPassword, attributes: [.service: .string("deploy")]))
        let find = await AgentServiceTests.failure(
            connection, AgentInterface.find.name, [.string(path), query, .boolean(true)])
        #expect(find?.code == .interactionNotAllowed)
        await connection.close()
        await agent.close()
    }

    @Test("an idle lock keeps after-first-unlock items readable; Lock and LockAll make them unreadable too")
    func afterFirstUnlockItemsLastUntilAnExplicitLock() async throws {
        let agent = try await Running(groups: ["app", "*"])
        let connection = try await agent.connection()
        func add(_ path: String) async throws {
            for (account, accessibility) in [("wu", Accessibility.whenUnlocked), ("afu", .afterFirstUnlock)] {
                var item = Item(
                    class: .genericPassword, attributes: [.service: .string("deploy"), .account: .string(account)],
                    data: Data("secret-\(account)".utf8))
                item.attributes[.accessible] = .string(accessibility.rawValue)
                _ = try await AgentServiceTests.call(
                    connection, AgentInterface.add.name, [.string(path), AgentCodec.encode(item)])
            }
        }
        func find(_ account: String, in path: String) async -> KeychainError? {
            let query = AgentCodec.encode(
                ItemQuery(
                    class: .genericPassword, attributes: [.service: .string("deploy"), .account: .string(account)]))
            return await AgentServiceTests.failure(
                connection, AgentInterface.find.name, [.string(path), query, .boolean(true)])
        }

        // One keychain with a 1 s interval, left to idle out.
        let idling = try await Self.makeKeychain(agent, connection)
        try await add(idling)
        let start = ContinuousClock.now
        try await Self.setInterval(connection, idling, 1)
        #expect(try await Self.pollUntilLocked(connection, idling, from: start, limit: .seconds(5)) != nil)
        #expect(
            await find("wu", in: idling)?.code == .interactionNotAllowed, "the idle lock took the when-unlocked item")
        #expect(
            await find("afu", in: idling) == nil, "the after-first-unlock item is still readable after an idle lock")
        _ = try await AgentServiceTests.call(connection, AgentInterface.lock.name, [.string(idling)])
        #expect(await find("afu", in: idling)?.code == .interactionNotAllowed, "Lock took the after-first-unlock item")

        // Another without an interval, so no idle lock races the unlock and the reads below.
        let kept = try await Self.makeKeychain(agent, connection, name: "kept")
        try await add(kept)
        _ = try await AgentServiceTests.call(connection, AgentInterface.lock.name, [.string(kept)])
        _ = try await AgentServiceTests.call(
            connection, AgentInterface.unlock.name, [.string(kept)] + AgentServiceTests.password("P"))
        let afterUnlock = (await find("afu", in: kept), await find("wu", in: kept))
        #expect(afterUnlock.0 == nil && afterUnlock.1 == nil, "an unlock brings both back")
        _ = try await AgentServiceTests.call(connection, AgentInterface.lockAll.name, [])
        #expect(await find("afu", in: kept)?.code == .interactionNotAllowed, "LockAll took the after-first-unlock item")
        await connection.close()
        await agent.close()
    }

    @Test("a request that uses the keychain starts its interval again; Status, which only looks, does not")
    func useResetsTheTimer() async throws {
        let agent = try await Running(groups: ["app", "*"])
        let connection = try await agent.connection()
        let path = try await Self.makeKeychain(agent, connection)
        // The lookup below finds this item (a lookup that finds nothing does not count as use).
        _ = try AgentConnection(socketPath: agent.socket).keychain(at: path).add(
            Item(class: .genericPassword, attributes: [.service: .string("used")], data: Data("s".utf8)))
        // Before the request: the agent starts the interval when it serves it, so the first
        // deadline is at least 2 s after `set` (taken after the reply, a slow reply on a loaded
        // machine put the deadline before it, and the keychain was rightly locked before the
        // request below).
        let set = ContinuousClock.now
        try await Self.setInterval(connection, path, 2)

        try await Task.sleep(until: set + .milliseconds(1_200), clock: .continuous)
        let used = ContinuousClock.now
        let query = AgentCodec.encode(ItemQuery(class: .genericPassword))
        // On a loaded machine the keychain may already have locked (its first deadline passed
        // before the agent read the request): the lookup is then refused, and only the lock is
        // checked below.
        let found = try? await AgentServiceTests.call(
            connection, AgentInterface.find.name, [.string(path), query, .boolean(false)])
        let answered = ContinuousClock.now

        // Past the first deadline (2 s after `set`, plus a check), before the new one.
        try await Task.sleep(until: set + .milliseconds(2_600), clock: .continuous)
        let unlocked = try await !Self.isLocked(connection, path)
        // Only meaningful when the agent served the request before the first deadline (its
        // answer arrived before it): on a loaded machine the sleep above may wake after it, or
        // the agent may read the request late, and the keychain was then rightly locked already.
        let usedInTime = found != nil && answered - set < .milliseconds(1_900)
        if usedInTime && ContinuousClock.now - used < .milliseconds(1_900) {
            #expect(unlocked, "the request 1.2 s in did not start the 2 s interval again")
        }

        let lockedAfter = try await Self.pollUntilLocked(connection, path, from: used, limit: .seconds(3))
        #expect(lockedAfter != nil, "still unlocked 3 s after its last use")
        if usedInTime, let lockedAfter {
            #expect(lockedAfter >= .seconds(2), "locked \(lockedAfter) after its last use")
        }
        await connection.close()
        await agent.close()
    }

    @Test("the agent watches only unlocked password keychains with a lock interval, and runs no timer otherwise")
    func watchesOnlyKeychainsWithATimeout() throws {
        let idle = IdleLock()
        let passwordless = try TemporaryKeychain()
        try passwordless.keychain.setSettings(KeychainSettings(lockInterval: 1))
        idle.reread(passwordless.keychain)
        #expect(!idle.isWatching(passwordless.path), "a keychain without a password is never locked")

        let temporary = try TemporaryKeychain(password: "pw")
        let keychain = temporary.keychain
        idle.reread(keychain)
        #expect(!idle.isWatching(temporary.path), "a locked keychain is not watched")
        try keychain.unlock(password: "pw")
        idle.reread(keychain)
        #expect(!idle.isWatching(temporary.path), "a keychain without a timeout is not watched")
        try keychain.setSettings(KeychainSettings(lockInterval: 60))
        idle.reread(keychain)
        #expect(idle.isWatching(temporary.path))
        try keychain.setSettings(KeychainSettings(lockInterval: nil, locksOnSleep: true))
        idle.reread(keychain)
        #expect(!idle.isWatching(temporary.path), "lock on sleep alone starts no timer")
        try keychain.setSettings(KeychainSettings(lockInterval: 60))
        idle.reread(keychain)
        keychain.lock()
        idle.reread(keychain)
        #expect(!idle.isWatching(temporary.path), "a locked keychain is forgotten")
    }

    @Test("each request's effect on the idle timer: items use it, Status and Settings only look")
    func requestEffects() {
        let service = AgentService(configuration: KeychainConfiguration()) { _ in AccessGroups(["*"]) }
        let effect = { (name: String) in service.served(name)?.effect }
        #expect(effect(AgentInterface.find.name) == .lookup, "counts only when it finds items")
        #expect(effect(AgentInterface.delete.name) == .lookup)
        #expect(effect(AgentInterface.add.name) == .use)
        #expect(effect(AgentInterface.status.name) == IdleLock.Effect.none)
        #expect(effect(AgentInterface.settings.name) == IdleLock.Effect.none)
        #expect(effect(AgentInterface.setSettings.name) == .reread)
        #expect(effect(AgentInterface.unlock.name) == .reread)
        #expect(effect(AgentInterface.lock.name) == .reread)
    }
}
