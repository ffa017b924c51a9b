import Foundation

/// The persistent identity of an item: a UUID that names its row, so that a lookup by
/// identity reads one row by its id and needs no index of its own.
///
/// Layout (RFC 9562 version 8, "custom"): bytes 0–5 are the row id (48 bits, big-endian);
/// the version and variant bits are set; the other 74 bits are random. A lookup checks the
/// whole UUID against the row's `uuid` column, so an identity whose row was deleted never
/// names the item that later takes the same row id.
///
/// Items added by builds before format 3 have random (version 4) identities; those are
/// found through the `uuid` index their files have.
enum PersistentIdentity {
    /// The largest row id an identity can carry.
    static let maximumRowID: Int64 = (1 << 48) - 1

    /// A new identity for the row `rowID`.
    static func make(rowID: Int64) throws -> UUID {
        guard rowID > 0, rowID <= maximumRowID else {
            throw KeychainError(.internalComponent, "the keychain has run out of row ids")
        }
        // Big-endian: the row id, the version nibble and 12 random bits; the variant bits and
        // 62 random bits.
        var random = (UInt64(0), UInt64(0))
        withUnsafeMutableBytes(of: &random) { Sealing.fillRandom($0) }
        let high = UInt64(rowID) << 16 | 0x8000 | random.0 & 0x0FFF
        let low = 0x8000_0000_0000_0000 | random.1 & 0x3FFF_FFFF_FFFF_FFFF
        return UUID(uuid: withUnsafeBytes(of: (high.bigEndian, low.bigEndian)) { $0.loadUnaligned(as: uuid_t.self) })
    }

    /// The row id an identity names, or `nil` for an identity of another layout.
    static func rowID(of identity: UUID) -> Int64? {
        let bytes = identity.uuid
        guard bytes.6 & 0xF0 == 0x80, bytes.8 & 0xC0 == 0x80 else { return nil }
        let rowID = [bytes.0, bytes.1, bytes.2, bytes.3, bytes.4, bytes.5].reduce(Int64(0)) { $0 << 8 | Int64($1) }
        return rowID > 0 ? rowID : nil
    }
}

extension UUID {
    /// The identity whose 16 bytes are `bytes`, or `nil` when there are not exactly 16.
    ///
    /// The bytes are read in place: building on `UUID()` would draw a random identity first,
    /// which on Linux opens and reads `/dev/urandom`.
    package init?(bytes: some ContiguousBytes) {
        guard let value = bytes.withUnsafeBytes({ $0.count == 16 ? $0.loadUnaligned(as: uuid_t.self) : nil })
        else { return nil }
        self.init(uuid: value)
    }
}
