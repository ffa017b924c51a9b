import Foundation

/// A FIDO2 security key's credential, as a `.companion` item is bound to it
/// (``StoredAccessControl/companions``): a touch of the key that signs for `credentialID` with
/// `publicKey` answers the item.
public struct CompanionKey: Sendable, Hashable, Codable {
    /// The credential's identifier, as the key made it.
    public var credentialID: Data
    /// The credential's P-256 public key, X9.63 (65 bytes, `04 ‖ x ‖ y`).
    public var publicKey: Data

    /// A key's credential.
    public init(credentialID: Data, publicKey: Data) {
        self.credentialID = credentialID
        self.publicKey = publicKey
    }

    /// The most keys paired with a user's keychains, which an item is bound to.
    public static let mostPaired = 32

    /// The longest credential identifier kept (CTAP 2.1 allows 1023 bytes; keys make 16 to 128).
    public static let longestCredentialID = 1023

    /// The stored form: the identifier's length (2 bytes, big-endian), the identifier, the
    /// public key.
    public var serialized: Data {
        Data([UInt8(credentialID.count >> 8), UInt8(truncatingIfNeeded: credentialID.count)]) + credentialID + publicKey
    }

    /// Reads the stored form; `nil` when it is not one (a public key that is not 65 bytes of an
    /// uncompressed point, an identifier empty or too long).
    public init?(serialized data: Data) {
        let bytes = [UInt8](data)
        guard bytes.count >= 2 else { return nil }
        let length = Int(bytes[0]) << 8 | Int(bytes[1])
        guard length > 0, length <= Self.longestCredentialID, bytes.count == 2 + length + 65, bytes[2 + length] == 4
        else { return nil }
        credentialID = Data(bytes[2..<(2 + length)])
        publicKey = Data(bytes[(2 + length)...])
    }
}
