import Foundation
import KeychainCore
import KeychainTestSupport
import Security

/// Runs `body` with a fresh default keychain for this task only, so that tests running in
/// parallel never share items: in memory in this process, or a file kept by the test process's
/// `keychaind` (`backend`). A password keychain starts locked on both.
///
/// Access groups other than the standard ones are in-process only: the agent gives a caller the
/// groups of who it is, not of its configuration.
func withKeychain<T>(
    _ backend: KeychainBackend = .memory, groups: AccessGroups = .standard, password: String? = nil,
    _ body: (any KeychainHandle) throws -> T
) throws -> T {
    precondition(backend != .agent || groups == .standard, "the agent gives this process its default groups")
    return try backend.withDefaultKeychain(accessGroups: groups, password: password) { keychain in
        if password != nil { keychain.lock() }
        return try body(keychain)
    }
}

/// `SecItemCopyMatching` returning the status and the result.
func copyMatching(_ query: [CFString: Any]) -> (OSStatus, CFTypeRef?) {
    var result: CFTypeRef?
    let status = SecItemCopyMatching(query as CFDictionary, &result)
    return (status, result)
}

func add(_ attributes: [CFString: Any]) -> OSStatus {
    SecItemAdd(attributes as CFDictionary, nil)
}

/// The status codes a SecItem call may return on Apple platforms (Apple's `base/SecBase.h`).
let documentedStatuses: Set<OSStatus> = [
    0, -4, -34, -36, -50, -108, -128, -909, -2070, -4960, -34018, -34020, -25291, -25292, -25293,
    -25294, -25295, -25296, -25299, -25300, -25301, -25302, -25303, -25304, -25305, -25306, -25307,
    -25308, -25309, -25310, -25315, -25316, -25317, -25320, -25240, -25243, -25244, -25256, -25257,
    -25261, -26267, -26275,
]
