import DBusWire
/// Generates `org.freedesktop.DBus.Introspectable` XML.
public enum DBusIntrospection {
    /// The document type line every introspection document starts with.
    public static let doctype = """
        <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
        """

    /// The introspection document of one node.
    ///
    /// - Parameters:
    ///   - interfaces: the object's exported interfaces, or `nil` for an intermediate node (which
    ///     then lists only `Peer` and `Introspectable`). Exported objects also list `Properties`.
    ///   - children: the names of the child nodes.
    public static func xml(interfaces: [DBusInterface]?, children: [String]) -> String {
        var lines = [doctype, "<node>"]
        lines += standardInterfaces(includingProperties: interfaces != nil)
        for interface in (interfaces ?? []).sorted(by: { $0.name < $1.name }) { lines += describe(interface) }
        lines += children.map { "  <node name=\"\(escape($0))\"/>" }
        lines.append("</node>")
        return lines.joined(separator: "\n") + "\n"
    }

    static func describe(_ interface: DBusInterface) -> [String] {
        var lines = ["  <interface name=\"\(escape(interface.name))\">"]
        for method in interface.methods {
            let args =
                method.inputs.map { argument($0, direction: "in") }
                + method.outputs.map { argument($0, direction: "out") }
            lines += element("method", name: method.name, children: args)
        }
        for signal in interface.signals {
            lines += element(
                "signal", name: signal.name, children: signal.arguments.map { argument($0, direction: nil) })
        }
        for property in interface.properties {
            lines.append(
                "    <property name=\"\(escape(property.name))\" type=\"\(escape(property.type.signature))\" access=\"\(property.access)\"/>"
            )
        }
        lines.append("  </interface>")
        return lines
    }

    private static func element(_ kind: String, name: String, children: [String]) -> [String] {
        guard !children.isEmpty else { return ["    <\(kind) name=\"\(escape(name))\"/>"] }
        return ["    <\(kind) name=\"\(escape(name))\">"] + children.map { "      " + $0 } + ["    </\(kind)>"]
    }

    private static func argument(_ argument: DBusArgument, direction: String?) -> String {
        var attributes = ""
        if let name = argument.name { attributes += " name=\"\(escape(name))\"" }
        attributes += " type=\"\(escape(argument.type.signature))\""
        if let direction { attributes += " direction=\"\(direction)\"" }
        return "<arg\(attributes)/>"
    }

    private static func standardInterfaces(includingProperties: Bool) -> [String] {
        var interfaces = [
            DBusInterface(
                DBusDispatcher.peer,
                methods: [
                    DBusMethod("Ping") { _ in [] },
                    DBusMethod("GetMachineId", outputs: [DBusArgument("machine_uuid", .string)]) { _ in [] },
                ]),
            DBusInterface(
                DBusDispatcher.introspectable,
                methods: [DBusMethod("Introspect", outputs: [DBusArgument("xml_data", .string)]) { _ in [] }]),
        ]
        if includingProperties { interfaces.append(propertiesInterface) }
        return interfaces.flatMap(describe)
    }

    private static let propertiesInterface = DBusInterface(
        DBusDispatcher.properties,
        methods: [
            DBusMethod(
                "Get", inputs: [.init("interface_name", .string), .init("property_name", .string)],
                outputs: [.init("value", .variant)]
            ) { _ in [] },
            DBusMethod(
                "GetAll", inputs: [.init("interface_name", .string)],
                outputs: [.init("properties", .dictionary(key: .string, value: .variant))]
            ) { _ in [] },
            DBusMethod(
                "Set",
                inputs: [.init("interface_name", .string), .init("property_name", .string), .init("value", .variant)]
            ) { _ in [] },
        ],
        signals: [
            DBusSignalDescription(
                "PropertiesChanged",
                arguments: [
                    .init("interface_name", .string),
                    .init("changed_properties", .dictionary(key: .string, value: .variant)),
                    .init("invalidated_properties", .array(.string)),
                ])
        ])

    static func escape(_ text: String) -> String {
        var result = ""
        for character in text {
            switch character {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            case "'": result += "&apos;"
            default: result.append(character)
            }
        }
        return result
    }
}
