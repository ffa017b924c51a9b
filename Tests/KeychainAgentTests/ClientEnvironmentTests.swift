import Foundation
import KeychainCore
import KeychainTestSupport
import KeychainLibc
import Testing

@testable import KeychainClient

/// The agent one process starts serves every later process of the user, so nothing in the
/// environment of the process that happened to start it decides what it does for the others:
/// a process's `KEYCHAIN_DEFAULT_PATH` and `KEYCHAIN_ACCESS_GROUPS` travel with its own
/// requests, and `KEYCHAIN_UNSAFE_TEST_KDF` is never handed down.
@Suite("A client's environment is its own, not the agent's")
struct ClientEnvironmentTests {
    typealias Home = LibraryStartTests.Home

    /// The home's login keychain and a keychain beside it.
    private func keychains(_ home: Home) -> (login: String, other: String) {
        let directory = home.directory.path + "/home/data/keychains"
        return (directory + "/login.keychain-db", directory + "/other.keychain-db")
    }

    @Test("KEYCHAIN_DEFAULT_PATH of the process that started the agent is not a later process's default")
    func defaultPathOfTheStarterStaysItsOwn() throws {
        let home = try Home()
        let (login, other) = keychains(home)
        let starter = try home.library(
            "add", "starter", mode: "auto", input: "in other", changing: ["KEYCHAIN_DEFAULT_PATH": other])
        #expect(starter.last == "ok", "\(starter)")
        #expect(home.agentPid != nil)
        let later = try home.library("add", "later", mode: "auto", input: "in login")
        #expect(later.last == "ok", "\(later)")

        // Read back from the files themselves, in process: each item is in its process's default.
        let fromLogin = try home.library("find", "later", mode: "off")
        #expect(fromLogin == ["agent none", "found in login"], "the later process wrote into \(login)")
        let starterFromOther = try home.library(
            "find", "starter", mode: "off", changing: ["KEYCHAIN_DEFAULT_PATH": other])
        #expect(starterFromOther == ["agent none", "found in other"])
        let laterNotInOther = try home.library("find", "later", mode: "off", changing: ["KEYCHAIN_DEFAULT_PATH": other])
        #expect(laterNotInOther == ["agent none", "error \(KeychainError.Code.itemNotFound.rawValue)"])
    }

    @Test("a process that sets KEYCHAIN_DEFAULT_PATH gets that keychain from an agent started without it")
    func defaultPathOfALaterProcessIsHonoured() throws {
        let home = try Home()
        let (_, other) = keychains(home)
        #expect(try home.library("add", "first", mode: "auto", input: "in login").last == "ok")
        let pid = try #require(home.agentPid)
        let elsewhere = try home.library(
            "add", "elsewhere", mode: "auto", input: "in other", changing: ["KEYCHAIN_DEFAULT_PATH": other])
        #expect(elsewhere == ["agent \(pid)", "ok"], "the same agent served it")
        // Through the agent, and from the file itself.
        let found = try home.library(
            "find", "elsewhere", mode: "auto", changing: ["KEYCHAIN_DEFAULT_PATH": other])
        #expect(found == ["agent \(pid)", "found in other"])
        let inFile = try home.library("find", "elsewhere", mode: "off", changing: ["KEYCHAIN_DEFAULT_PATH": other])
        #expect(inFile == ["agent none", "found in other"], "the item is in \(other)")
        let notInLogin = try home.library("find", "elsewhere", mode: "auto")
        #expect(notInLogin == ["agent \(pid)", "error \(KeychainError.Code.itemNotFound.rawValue)"])
    }

    @Test("KEYCHAIN_UNSAFE_TEST_KDF of the process that started the agent never weakens a later keychain")
    func unsafeKeyDerivationIsNotHandedDown() throws {
        let home = try Home()
        // The plain keychaind, started by a process with the variable set (the Home sets it).
        let starter = try home.library("add", "starter", mode: "auto", input: "x", cheapAgent: false)
        #expect(starter.last == "ok", "\(starter)")
        let agent = try AgentConnection(socketPath: home.socket, accessGroups: nil)
        let path = home.directory.path + "/home/data/keychains/later.keychain-db"
        _ = try agent.createKeychain(at: path, password: Data("correct horse".utf8))
        agent.close()

        // A keychain made with the cheap derivation opens only where that is allowed: this one,
        // made for a later client, opens with the production configuration.
        var configuration = KeychainConfiguration(
            deviceKey: .file(at: home.directory.path + "/home/config/keychain/device-key"))
        configuration.allowsUnsafeKeyDerivation = false
        let opened = try KeychainDatabase.open(at: path, configuration: configuration)
        try opened.unlock(password: Data("correct horse".utf8))
        #expect(!opened.isLocked)
    }

    @Test("KEYCHAIN_ACCESS_GROUPS of the process that started the agent is not the groups of the others")
    func accessGroupsOfTheStarterStayItsOwn() throws {
        let home = try Home()
        let starter = try home.library(
            "add", "starter", mode: "auto", input: "x", changing: ["KEYCHAIN_ACCESS_GROUPS": "starter.only"])
        #expect(starter.last == "ok", "\(starter)")
        let plain = try AgentConnection(socketPath: home.socket, accessGroups: nil)
        #expect(plain.keychain(at: "").accessGroups.groups == AccessGroups.standard.groups)
        plain.close()
    }

    @Test("a process's KEYCHAIN_ACCESS_GROUPS narrows what the agent lets it do: its adds go to its first group")
    func accessGroupsOfAProcessTravelWithItsConnection() throws {
        let home = try Home()
        #expect(try home.library("add", "first", mode: "auto", input: "x").last == "ok")
        let narrowed = try AgentConnection(
            socketPath: home.socket, accessGroups: ["com.example.app", "com.example.shared"])
        let keychain = narrowed.keychain(at: "")
        #expect(keychain.accessGroups.groups == ["com.example.app", "com.example.shared"])
        let stored = try keychain.add(
            Item(class: .genericPassword, attributes: [.service: .string("narrowed")], data: Data("v".utf8)))
        #expect(stored.accessGroup == "com.example.app")
        // It no longer sees the default group's items.
        let query = ItemQuery(class: .genericPassword, attributes: [.service: .string("first")])
        #expect(try keychain.findFirst(query, includeData: false) == nil)
        // The narrowing is made again on a new connection.
        narrowed.close()
        #expect(try keychain.findFirst(query, includeData: false) == nil)
        #expect(keychain.accessGroups.groups == ["com.example.app", "com.example.shared"])
    }

    @Test("a process cannot name a group its agent does not give it: every call fails, none runs with more")
    func narrowingToAGroupNotGrantedFails() throws {
        let home = try Home()
        // This agent gives unidentified programs the group "default" only (its own configuration).
        let program = try CheapAgentProgram.make(in: home.directory.path, agent: KeychaindTests.program)
        let narrowAgent = home.directory.path + "/keychaind-default-only"
        try ExecutableFile.write(
            "#!/bin/sh\nKEYCHAIN_ACCESS_GROUPS=default exec '\(program)' \"$@\"\n", to: narrowAgent)
        let started = try home.library("add", "first", mode: "auto", program: narrowAgent, input: "x")
        #expect(started.last == "ok", "\(started)")
        let plain = try AgentConnection(socketPath: home.socket, accessGroups: nil)
        #expect(plain.keychain(at: "").accessGroups.groups == ["default"])
        let wider = try AgentConnection(socketPath: home.socket, accessGroups: ["*"])
        let error = #expect(throws: KeychainError.self) { try wider.keychain(at: "").status() }
        #expect(error?.code == .missingEntitlement)
        let other = try AgentConnection(socketPath: home.socket, accessGroups: ["default", "com.example.other"])
        #expect(throws: KeychainError.self) {
            try other.keychain(at: "").findFirst(
                ItemQuery(class: .genericPassword, attributes: [.service: .string("first")]), includeData: true)
        }
        let same = try AgentConnection(socketPath: home.socket, accessGroups: ["default"])
        #expect(same.keychain(at: "").accessGroups.groups == ["default"])
    }
}
