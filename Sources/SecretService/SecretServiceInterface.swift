import DBusWire

/// The freedesktop Secret Service's methods (https://specifications.freedesktop.org/secret-service/),
/// each declared once: its typed arguments and reply, from which the provider's decoding,
/// dispatch and introspection follow. The names of arguments are the specification's (and
/// GNOME Keyring's, where they differ in case: `Lock` and `Item.Delete` answer `Prompt`).
enum SecretServiceInterface {
    /// A method with arguments `A` and reply `R`.
    typealias Method<A: DBusArguments, R: DBusArguments> = DBusMethodDeclaration<A, R>

    static let service = "org.freedesktop.Secret.Service"
    static let collection = "org.freedesktop.Secret.Collection"
    static let item = "org.freedesktop.Secret.Item"
    static let session = "org.freedesktop.Secret.Session"
    static let prompt = "org.freedesktop.Secret.Prompt"

    /// `(oayays)`: session, parameters, value, content type.
    static let secretType = DBusType.structure([.objectPath, .array(.byte), .array(.byte), .string])

    // MARK: org.freedesktop.Secret.Service

    /// `OpenSession(s algorithm, v input) → (v output, o result)`.
    static let openSession: Method<OpenSessionArguments, OpenedSession> = Method("OpenSession", interface: service)
    /// `CreateCollection(a{sv} properties, s alias) → (o collection, o prompt)`.
    static let createCollection: Method<CreateCollectionArguments, CreatedCollection> = Method(
        "CreateCollection", interface: service)
    /// `SearchItems(a{ss} attributes) → (ao unlocked, ao locked)`; answered on the event loop
    /// when it is quick.
    static let searchItems: Method<AttributesArguments, FoundItems> = Method(
        "SearchItems", interface: service, answersOnEventLoop: true)
    /// `Unlock(ao objects) → (ao unlocked, o prompt)`.
    static let unlock: Method<ObjectsArguments, Unlocked> = Method("Unlock", interface: service)
    /// `Lock(ao objects) → (ao locked, o Prompt)`.
    static let lock: Method<ObjectsArguments, Locked> = Method("Lock", interface: service)
    /// `GetSecrets(ao items, o session) → a{o(oayays)} secrets`; answered on the event loop
    /// when it is quick.
    static let getSecrets: Method<GetSecretsArguments, Secrets> = Method(
        "GetSecrets", interface: service, answersOnEventLoop: true)
    /// `ReadAlias(s name) → o collection`.
    static let readAlias: Method<NameArguments, CollectionPath> = Method("ReadAlias", interface: service)
    /// `SetAlias(s name, o collection)`.
    static let setAlias: Method<SetAliasArguments, DBusNoArguments> = Method("SetAlias", interface: service)

    // MARK: org.freedesktop.Secret.Collection

    /// `SearchItems(a{ss} attributes) → ao results`.
    static let searchCollection: Method<AttributesArguments, SearchResults> = Method(
        "SearchItems", interface: collection)
    /// `CreateItem(a{sv} properties, (oayays) secret, b replace) → (o item, o prompt)`.
    static let createItem: Method<CreateItemArguments, CreatedItem> = Method("CreateItem", interface: collection)
    /// `Delete() → o prompt`.
    static let deleteCollection: Method<DBusNoArguments, CollectionDeleted> = Method("Delete", interface: collection)

    // MARK: org.freedesktop.Secret.Item

    /// `GetSecret(o session) → (oayays) secret`.
    static let getSecret: Method<SessionArguments, SecretReply> = Method("GetSecret", interface: item)
    /// `SetSecret((oayays) secret)`.
    static let setSecret: Method<SecretArguments, DBusNoArguments> = Method("SetSecret", interface: item)
    /// `Delete() → o Prompt`.
    static let deleteItem: Method<DBusNoArguments, ItemDeleted> = Method("Delete", interface: item)

    // MARK: org.freedesktop.Secret.Session and Prompt

    /// `Session.Close()`.
    static let close: Method<DBusNoArguments, DBusNoArguments> = Method("Close", interface: session)
    /// `Prompt.Prompt(s window-id)`.
    static let showPrompt: Method<WindowArguments, DBusNoArguments> = Method("Prompt", interface: prompt)
    /// `Prompt.Dismiss()`.
    static let dismiss: Method<DBusNoArguments, DBusNoArguments> = Method("Dismiss", interface: prompt)
}

/// The `Secret` types below: one list of fields each, in wire order, with their names.
extension SecretServiceInterface {
    struct OpenSessionArguments: DBusArguments {
        var algorithm = ""
        /// The value inside the `v`.
        var input: DBusValue = .string("")
        mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("algorithm", &algorithm, .string)
            try fields.field("input", &input, .variant)
        }
    }

    struct OpenedSession: DBusArguments {
        /// The value inside the `v`.
        var output: DBusValue = .string("")
        var result = "/"
        mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("output", &output, .variant)
            try fields.field("result", &result, .objectPath)
        }
    }

    struct CreateCollectionArguments: DBusArguments {
        /// The properties, their variants unwrapped.
        var properties: [String: DBusValue] = [:]
        var alias = ""
        mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("properties", &properties, .stringVariantDictionary)
            try fields.field("alias", &alias, .string)
        }
    }

    struct CreatedCollection: DBusArguments {
        var collection = "/"
        var prompt = "/"
        mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("collection", &collection, .objectPath)
            try fields.field("prompt", &prompt, .objectPath)
        }
    }

    struct AttributesArguments: DBusArguments {
        var attributes: [String: String] = [:]
        mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("attributes", &attributes, .stringDictionary)
        }
    }

    struct FoundItems: DBusArguments {
        var unlocked: [String] = []
        var locked: [String] = []
        mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("unlocked", &unlocked, .objectPaths)
            try fields.field("locked", &locked, .objectPaths)
        }
    }

    struct ObjectsArguments: DBusArguments {
        var objects: [String] = []
        mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("objects", &objects, .objectPaths)
        }
    }

    struct Unlocked: DBusArguments {
        var unlocked: [String] = []
        var prompt = "/"
        mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("unlocked", &unlocked, .objectPaths)
            try fields.field("prompt", &prompt, .objectPath)
        }
    }

    struct Locked: DBusArguments {
        var locked: [String] = []
        var prompt = "/"
        mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("locked", &locked, .objectPaths)
            try fields.field("Prompt", &prompt, .objectPath)
        }
    }

    struct GetSecretsArguments: DBusArguments {
        var items: [String] = []
        var session = "/"
        mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("items", &items, .objectPaths)
            try fields.field("session", &session, .objectPath)
        }
    }

    struct Secrets: DBusArguments {
        /// `a{o(oayays)}`.
        var secrets: DBusValue = .dictionary(key: .objectPath, value: SecretServiceInterface.secretType, [])
        mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field(
                "secrets", &secrets, .value(of: .dictionary(key: .objectPath, value: SecretServiceInterface.secretType))
            )
        }
    }

    struct NameArguments: DBusArguments {
        var name = ""
        mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("name", &name, .string)
        }
    }

    struct CollectionPath: DBusArguments {
        var collection = "/"
        mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("collection", &collection, .objectPath)
        }
    }

    struct SetAliasArguments: DBusArguments {
        var name = ""
        var collection = "/"
        mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("name", &name, .string)
            try fields.field("collection", &collection, .objectPath)
        }
    }

    struct SearchResults: DBusArguments {
        var results: [String] = []
        mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("results", &results, .objectPaths)
        }
    }

    struct CreateItemArguments: DBusArguments {
        /// The properties, their variants unwrapped.
        var properties: [String: DBusValue] = [:]
        /// `(oayays)`.
        var secret: DBusValue = .structure([.objectPath("/"), .bytes([]), .bytes([]), .string("")])
        var replace = false
        mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("properties", &properties, .stringVariantDictionary)
            try fields.field("secret", &secret, .value(of: SecretServiceInterface.secretType))
            try fields.field("replace", &replace, .boolean)
        }
    }

    struct CreatedItem: DBusArguments {
        var item = "/"
        var prompt = "/"
        mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("item", &item, .objectPath)
            try fields.field("prompt", &prompt, .objectPath)
        }
    }

    struct CollectionDeleted: DBusArguments {
        var prompt = "/"
        mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("prompt", &prompt, .objectPath)
        }
    }

    struct ItemDeleted: DBusArguments {
        var prompt = "/"
        mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("Prompt", &prompt, .objectPath)
        }
    }

    struct SessionArguments: DBusArguments {
        var session = "/"
        mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("session", &session, .objectPath)
        }
    }

    struct SecretReply: DBusArguments {
        /// `(oayays)`.
        var secret: DBusValue = .structure([.objectPath("/"), .bytes([]), .bytes([]), .string("")])
        mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("secret", &secret, .value(of: SecretServiceInterface.secretType))
        }
    }

    struct SecretArguments: DBusArguments {
        /// `(oayays)`.
        var secret: DBusValue = .structure([.objectPath("/"), .bytes([]), .bytes([]), .string("")])
        mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("secret", &secret, .value(of: SecretServiceInterface.secretType))
        }
    }

    struct WindowArguments: DBusArguments {
        var windowID = ""
        mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("window-id", &windowID, .string)
        }
    }
}
