// macOS's access objects: an item's list of trusted applications (`SecAccessCreate`,
// `SecTrustedApplicationCreateFromPath`), given to `SecItemAdd` as `kSecAttrAccess`. keychaind
// reads such an item unasked only for the applications on the list and asks about any other
// (Deny / Allow / Always Allow), as macOS's file-based keychain does.

public import Foundation
package import KeychainModel

/// An access object: the applications trusted to use an item without being asked
/// (`SecAccessRef`, [Apple's documentation](https://developer.apple.com/documentation/security/secaccess)).
///
/// On Linux it holds an ``KeychainModel/AccessList``: programs named by the real path of their
/// executable (pinned by their file's SHA-256 once a person chooses Always Allow), or Flatpak
/// apps by their app id.
public final class SecAccess: Sendable, CustomStringConvertible {
    /// The trusted applications.
    package let accessList: AccessList

    package init(accessList: AccessList) {
        self.accessList = accessList
    }

    /// Names the trusted applications (never a secret).
    public var description: String {
        "<SecAccessRef: trusts \(accessList.applications.isEmpty ? "no application" : accessList.applications.map(\.description).joined(separator: ", "))>"
    }
}

/// The legacy macOS type of `SecAccessRef`.
public typealias SecAccessRef = SecAccess

/// An application an access object trusts (`SecTrustedApplicationRef`,
/// [Apple's documentation](https://developer.apple.com/documentation/security/sectrustedapplication)).
public final class SecTrustedApplication: Sendable, CustomStringConvertible {
    /// The application, as access lists name it.
    package let application: TrustedApplication

    package init(application: TrustedApplication) {
        self.application = application
    }

    /// Names the application.
    public var description: String { "<SecTrustedApplicationRef: \(application)>" }
}

/// The legacy macOS type of `SecTrustedApplicationRef`.
public typealias SecTrustedApplicationRef = SecTrustedApplication

/// Makes a trusted application object for the program at `path`, or for this program when
/// `path` is `nil` (Apple's
/// [`SecTrustedApplicationCreateFromPath`](https://developer.apple.com/documentation/security/1393553-sectrustedapplicationcreatefrompath)).
///
/// A program is named by the real path of its file (symbolic links followed), as the kernel
/// names the process that runs it.
/// - Returns: `errSecSuccess`; `errSecParam` for a file that does not exist or is not a program.
@discardableResult
public func SecTrustedApplicationCreateFromPath(
    _ path: UnsafePointer<CChar>?, _ app: UnsafeMutablePointer<SecTrustedApplication?>
) -> OSStatus {
    // This program: the file the kernel says it runs.
    guard
        let given = path.map({ String(cString: $0) })
            ?? (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")),
        let application = TrustedApplication(programAt: given)
    else { return errSecParam }
    app.pointee = SecTrustedApplication(application: application)
    return errSecSuccess
}

/// Makes an access object trusting the applications in `trustedlist` (an array of
/// ``SecTrustedApplication``), or this program alone when it is `nil`, as macOS's default
/// access does; an empty array trusts no application (Apple's
/// [`SecAccessCreate`](https://developer.apple.com/documentation/security/1393522-secaccesscreate),
/// `OSX/libsecurity_keychain/lib/SecAccess.cpp`).
/// - Parameters:
///   - descriptor: The name a macOS dialog shows for the item; prompts on Linux name the item
///     by its own attributes.
///   - trustedlist: The trusted applications, or `nil` for this program.
///   - accessRef: Receives the access object.
/// - Returns: `errSecSuccess`; `errSecParam` when the array holds anything else, or this program
///   cannot be named.
@discardableResult
public func SecAccessCreate(
    _ descriptor: CFString, _ trustedlist: CFArray?, _ accessRef: UnsafeMutablePointer<SecAccess?>
) -> OSStatus {
    var applications: [TrustedApplication] = []
    if let trustedlist {
        for element in trustedlist {
            guard let trusted = element as? SecTrustedApplication else { return errSecParam }
            applications.append(trusted.application)
        }
    } else {
        var myself: SecTrustedApplication?
        let status = SecTrustedApplicationCreateFromPath(nil, &myself)
        guard status == errSecSuccess, let myself else { return status == errSecSuccess ? errSecParam : status }
        applications = [myself.application]
    }
    accessRef.pointee = SecAccess(accessList: AccessList(applications: applications))
    return errSecSuccess
}
