import Crypto
import Foundation

@testable import KeychainSync

/// The code of the `SyncError` that `body` throws; `nil` if it returns or throws anything else.
func syncErrorCode(_ body: () throws -> Void) -> SyncError.Code? {
    do {
        try body()
        return nil
    } catch let error as SyncError {
        return error.code
    } catch {
        return nil
    }
}

/// A device with its private keys, for tests.
struct CryptoTestDevice {
    let id = DeviceID.random()
    let signing = Curve25519.Signing.PrivateKey()
    let agreement = Curve25519.KeyAgreement.PrivateKey()
    var name = "laptop"

    var card: DeviceCard {
        DeviceCard(
            id: id, name: name, signingKey: signing.publicKey, agreementKey: agreement.publicKey,
            addedAt: Date(timeIntervalSince1970: 1_700_000_000.123))
    }
}

extension Data {
    /// A copy with the byte at `index` (from the start) XORed with `mask`.
    func flipping(_ index: Int, mask: UInt8 = 0x01) -> Data {
        var copy = Data(self)
        copy[index] ^= mask
        return copy
    }
}

/// A record id made from one byte value.
func sampleRecordID(_ byte: UInt8) -> RecordID { RecordID(Data(repeating: byte, count: 16))! }
