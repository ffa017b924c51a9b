import Foundation
import KeychainCore
import Testing

/// `KeychainError.osStatus(of:)` is the one mapping from any error to Apple's `OSStatus`, with
/// one fallback, that `Security`, the `security` tool and `KeychainStorage` share.
@Suite("Any error's OSStatus")
struct OSStatusMappingTests {
    struct Unrelated: Error {}
    struct Carrying: OSStatusConvertible { var osStatus: Int32 }

    static let cases: [(name: String, error: any Error & Sendable, status: Int32)] = [
        ("a keychain error says its code", KeychainError(.itemNotFound), -25300),
        ("a set-up problem keeps its code", KeychainError(.io, "no device key", isSetupProblem: true), -36),
        ("any layer's error that knows its status says it", Carrying(osStatus: -25293), -25293),
        ("a POSIX error is errSecIO", POSIXError(.EACCES), -36),
        ("a file error of Foundation is errSecIO", CocoaError(.fileNoSuchFile), -36),
        ("another Foundation error is errSecInternalComponent", CocoaError(.coderReadCorrupt), -2070),
        ("an error that knows nothing is errSecInternalComponent", Unrelated(), -2070),
    ]

    @Test("each kind of error maps to its status", arguments: cases.indices)
    func maps(_ index: Int) {
        let entry = Self.cases[index]
        #expect(KeychainError.osStatus(of: entry.error) == entry.status, "\(entry.name)")
    }
}
