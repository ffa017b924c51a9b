import DBusWire
import Foundation
import KeychainCore

/// How the keychain's values travel as one argument of ``AgentInterface``'s methods, as
/// ``AgentCodec`` encodes them.
extension DBusCodec where Value == Item {
    /// An item (`a{sv}`), as ``AgentCodec/encode(_:)-(Item)`` writes it.
    @inlinable
    public static var item: Self {
        Self(
            AgentCodec.stringVariants, encode: { AgentCodec.encode($0) }, decode: { try AgentCodec.decodeItem($0) },
            read: { try AgentCodec.decodeItem(from: &$0) })
    }
}

extension DBusCodec where Value == [Item] {
    /// Items (`aa{sv}`).
    @inlinable
    public static var items: Self { .array(of: .item) }
}

extension DBusCodec where Value == ItemQuery {
    /// A query (`a{sv}`), as ``AgentCodec/encode(_:)-(ItemQuery)`` writes it.
    @inlinable
    public static var query: Self {
        Self(
            AgentCodec.stringVariants, encode: { AgentCodec.encode($0) }, decode: { try AgentCodec.decodeQuery($0) },
            read: { try AgentCodec.decodeQuery(from: &$0) })
    }
}

extension DBusCodec where Value == Attributes {
    /// Attributes (`a{sv}`), as ``AgentCodec/encode(_:)-(Attributes)`` writes them.
    @inlinable
    public static var attributes: Self {
        Self(
            AgentCodec.stringVariants, encode: { AgentCodec.encode($0) },
            decode: { try AgentCodec.decodeAttributes($0) })
    }
}

extension DBusCodec where Value == KeychainSettings {
    /// Lock settings (`a{sv}`), as ``AgentCodec/encode(_:)-(KeychainSettings)`` writes them.
    @inlinable
    public static var settings: Self {
        Self(
            AgentCodec.stringVariants, encode: { AgentCodec.encode($0) }, decode: { try AgentCodec.decodeSettings($0) })
    }
}

extension DBusCodec where Value == Data {
    /// Bytes (`ay`) as `Data`.
    @inlinable
    public static var data: Self {
        let bytes = DBusCodec<[UInt8]>.bytes
        return Self(bytes.type, encode: { .bytes(Array($0)) }, decode: { Data(try bytes.decode($0)) })
    }
}

extension AgentCodec {
    /// `a{sv}`: how items, queries, attributes and settings travel.
    @usableFromInline
    static let stringVariants = DBusType.dictionary(key: .string, value: .variant)
}
