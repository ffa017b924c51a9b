import DBusNIO
import DBusWire
import Foundation
import KeychainAgentProtocol
import KeychainCore
import Testing

@testable import KeychainAgent

/// The agent serves each method `AgentInterface` declares, once, with the declared signature.
struct AgentMethodsTests {
    static let service = AgentService(configuration: KeychainConfiguration()) { _ in AccessGroups(["*"]) }

    @Test("the agent serves every declared method, and nothing else, with its declared signatures")
    func servesTheDeclarations() {
        let methods = Self.service.interface.methods
        #expect(Self.service.interface.name == AgentInterface.name)
        #expect(methods.map(\.name) == AgentInterface.all.map(\.name))
        for (served, declared) in zip(methods, AgentInterface.all) {
            #expect(served.inputs == declared.inputs, "\(declared.name)")
            #expect(served.outputs == declared.outputs, "\(declared.name)")
            #expect((served.wireHandler != nil) == declared.answersOnEventLoop, "\(declared.name)")
        }
    }

    @Test("introspection lists each declared method with its named, typed arguments")
    func introspectionListsTheDeclarations() {
        let xml = DBusIntrospection.xml(interfaces: [Self.service.interface], children: [])
        #expect(xml.contains("<interface name=\"\(AgentInterface.name)\">"))
        for method in AgentInterface.all {
            var expected = "<method name=\"\(method.name)\">"
            for argument in method.inputs {
                expected +=
                    "<arg name=\"\(argument.name ?? "")\" type=\"\(argument.type.signature)\" direction=\"in\"/>"
            }
            for argument in method.outputs {
                expected +=
                    "<arg name=\"\(argument.name ?? "")\" type=\"\(argument.type.signature)\" direction=\"out\"/>"
            }
            if method.inputs.isEmpty && method.outputs.isEmpty { expected = "<method name=\"\(method.name)\"/>" }
            let compact = xml.replacingOccurrences(of: "\n", with: "").replacingOccurrences(of: "  ", with: "")
            let closing = method.inputs.isEmpty && method.outputs.isEmpty ? "" : "</method>"
            #expect(compact.contains(expected + closing), "\(method.name)")
        }
    }

    @Test("who may call each method: managing keychains is for the user's own programs")
    func accessClasses() {
        let administration = Set(
            Self.service.served.filter { $0.access == .administration }.map(\.description.name))
        #expect(
            administration == [
                "Create", "DeleteKeychain", "LockAll", "Lock", "ChangePassword", "RotateKeys", "SetSettings",
                "MakeRecoveryKey", "SetUnlocksWithBootState", "AccessLog",
            ])
        #expect(Self.service.served("AuthenticateOwner")?.access == .items)
        #expect(Self.service.served("AuthenticateWithFinger")?.access == .items)
        #expect(Self.service.served("UseAccessGroups")?.access == .connection)
        #expect(Self.service.served("Find")?.access == .items)
    }
}
