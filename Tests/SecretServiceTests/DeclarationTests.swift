import DBusWire
import Foundation
import KeychainAgent
import KeychainCore
import Testing

@testable import SecretService

/// The Secret Service's methods, each declared once (`SecretServiceInterface`): the names,
/// signatures and argument names the specification (and GNOME Keyring) give them, which
/// libsecret, secretstorage and introspecting tools rely on.
struct DeclarationTests {
    typealias I = SecretServiceInterface

    static func signature(_ arguments: [DBusArgument]) -> String { arguments.map(\.type.signature).joined() }

    /// Interface, method, input signature and names, output signature and names.
    static let specified: [(DBusMethodDescription, String, String, [String], String, [String])] = [
        (I.openSession.description, I.service, "sv", ["algorithm", "input"], "vo", ["output", "result"]),
        (
            I.createCollection.description, I.service, "a{sv}s", ["properties", "alias"], "oo",
            ["collection", "prompt"]
        ),
        (I.searchItems.description, I.service, "a{ss}", ["attributes"], "aoao", ["unlocked", "locked"]),
        (I.unlock.description, I.service, "ao", ["objects"], "aoo", ["unlocked", "prompt"]),
        (I.lock.description, I.service, "ao", ["objects"], "aoo", ["locked", "Prompt"]),
        (I.getSecrets.description, I.service, "aoo", ["items", "session"], "a{o(oayays)}", ["secrets"]),
        (I.readAlias.description, I.service, "s", ["name"], "o", ["collection"]),
        (I.setAlias.description, I.service, "so", ["name", "collection"], "", []),
        (I.searchCollection.description, I.collection, "a{ss}", ["attributes"], "ao", ["results"]),
        (
            I.createItem.description, I.collection, "a{sv}(oayays)b", ["properties", "secret", "replace"], "oo",
            ["item", "prompt"]
        ),
        (I.deleteCollection.description, I.collection, "", [], "o", ["prompt"]),
        (I.getSecret.description, I.item, "o", ["session"], "(oayays)", ["secret"]),
        (I.setSecret.description, I.item, "(oayays)", ["secret"], "", []),
        (I.deleteItem.description, I.item, "", [], "o", ["Prompt"]),
        (I.close.description, I.session, "", [], "", []),
        (I.showPrompt.description, I.prompt, "s", ["window-id"], "", []),
        (I.dismiss.description, I.prompt, "", [], "", []),
    ]

    @Test("every declared method has the specification's interface, signatures and argument names")
    func declarationsFollowTheSpecification() {
        for (method, interface, inputs, inputNames, outputs, outputNames) in Self.specified {
            #expect(method.interface == interface, "\(method.name)")
            #expect(Self.signature(method.inputs) == inputs, "\(method.name)")
            #expect(method.inputs.map(\.name) == inputNames.map { Optional($0) }, "\(method.name)")
            #expect(Self.signature(method.outputs) == outputs, "\(method.name)")
            #expect(method.outputs.map(\.name) == outputNames.map { Optional($0) }, "\(method.name)")
        }
        let quick = Self.specified.map(\.0).filter(\.answersOnEventLoop).map(\.name)
        #expect(quick == ["SearchItems", "GetSecrets"])
    }

    @Test("the provider answers on the event loop exactly the methods declared so, from their one body")
    func eventLoopAnswersFollowTheDeclarations() throws {
        let home = FileManager.default.temporaryDirectory.path + "/declarations-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: home) }
        let paths = KeychainPaths(environment: ["HOME": home, "XDG_DATA_HOME": home + "/data"])
        let agent = AgentService(configuration: .testing(), paths: paths) { _ in AccessGroups(["user"]) }
        let provider = try SecretServiceProvider(
            agent: agent, directory: CallerDirectory(resolver: IdentityResolver(defaultGroups: AccessGroups(["user"]))))
        let service = try #require(provider.objects.interfaces(at: SecretServiceProvider.servicePath)?[I.service])
        let declared = Self.specified.map(\.0).filter { $0.interface == I.service }
        #expect(service.methods.map(\.name) == declared.map(\.name))
        for method in service.methods {
            let declaration = try #require(declared.first { $0.name == method.name })
            #expect((method.wireHandler != nil) == declaration.answersOnEventLoop, "\(method.name)")
        }
    }

    @Test("a malformed argument list is refused, naming the argument and not its value")
    func malformedArgumentsAreRefused() {
        let wrong: [DBusValue] = [.array(.string, [.string("hunter2")]), .objectPath("/")]
        let error = #expect(throws: DBusError.self) { try I.GetSecretsArguments(decoding: wrong) }
        #expect(error?.code == .typeMismatch)
        #expect(error?.message.contains("items") == true)
        #expect(error?.message.contains("hunter2") == false)
        let secret = DBusValue.structure([.objectPath("/s"), .bytes([]), .bytes([1]), .string("text/plain")])
        let decoded = try? I.CreateItemArguments(
            decoding: [
                .stringVariantDictionary(["org.freedesktop.Secret.Item.Label": .string("L")]), secret, .boolean(true),
            ])
        #expect(decoded?.properties["org.freedesktop.Secret.Item.Label"] == .string("L"))
        #expect(decoded?.secret == secret && decoded?.replace == true)
    }
}
