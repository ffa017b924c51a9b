// SecAccessControlCreateWithFlags (Apple's `OSX/sec/Security/SecAccessControl.m`) accepts the
// accessibility values and flag combinations Apple accepts, and rejects the others with errSecParam
// in NSOSStatusErrorDomain.

import Foundation
import Security
import Testing

/// Calls `SecAccessControlCreateWithFlags` and returns the object or the error it reported.
private func create(
    _ protection: CFTypeRef, _ flags: SecAccessControlCreateFlags
) -> (access: SecAccessControl?, error: CFError?) {
    var error: Unmanaged<CFError>?
    let access = SecAccessControlCreateWithFlags(nil, protection, flags, &error)
    return (access, error?.takeRetainedValue())
}

/// Expects creation to fail with errSecParam in NSOSStatusErrorDomain.
private func expectParameterError(
    _ protection: CFTypeRef, _ flags: SecAccessControlCreateFlags,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    let (access, error) = create(protection, flags)
    #expect(access == nil, sourceLocation: sourceLocation)
    guard let error else {
        Issue.record("no error was reported", sourceLocation: sourceLocation)
        return
    }
    #expect(CFErrorGetCode(error) == Int(errSecParam), sourceLocation: sourceLocation)
    #expect(CFErrorGetCode(error) == -50, sourceLocation: sourceLocation)
    #expect(
        CFErrorGetDomain(error) as String == NSOSStatusErrorDomain, sourceLocation: sourceLocation)
}

@Suite("§1.10 SecAccessControlCreateWithFlags")
struct AccessControlTests {
    @Test(
        "Every accessibility value is accepted, and kept",
        arguments: ["ak", "ck", "dk", "akpu", "aku", "cku", "dku", "f"])
    func acceptedProtections(_ raw: String) throws {
        let (access, error) = create(NSString(string: raw), [])
        let created = try #require(access)
        #expect(error == nil)
        #expect(created.protectionValue == raw)
        #expect(created.protection as String == raw)
        #expect(created.flags.isEmpty)
    }

    @Test("The public constants are accepted as protections")
    func publicConstants() {
        let protections: [CFString] = [
            kSecAttrAccessibleWhenUnlocked, kSecAttrAccessibleAfterFirstUnlock,
            kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly,
            kSecAttrAccessibleWhenUnlockedThisDeviceOnly,
            kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly, kSecAttrAccessibleAlwaysPrivate,
            kSecAttrAccessibleAlwaysThisDeviceOnlyPrivate, kSecAttrAccessibleUntilReboot,
        ]
        for protection in protections {
            let access = SecAccessControlCreateWithFlags(
                kCFAllocatorDefault, protection, .userPresence, nil)
            #expect(access?.protection == protection)
            #expect(access?.flags == .userPresence)
        }
    }

    @Test(
        "Anything else as protection is errSecParam",
        arguments: ["", "AK", "ak ", "pdmn", "genp", "kSecAttrAccessibleWhenUnlocked", "e"])
    func rejectedStringProtections(_ raw: String) {
        expectParameterError(NSString(string: raw), [])
    }

    @Test("A protection that is not a string is errSecParam, and the message names the problem")
    func rejectedNonStringProtections() {
        expectParameterError(NSNumber(value: 1), [])
        expectParameterError(NSData(data: Data("ak".utf8)), [])
        expectParameterError(NSArray(array: ["ak"]), [])
        let (_, error) = create(NSString(string: "zz"), [])
        #expect(
            (error.map { CFErrorCopyDescription($0) as String } ?? "")
                .contains("SecAccessControl: invalid protection"))
    }

    @Test("An invalid protection is reported before invalid flags")
    func protectionCheckedFirst() {
        let (_, error) = create(NSString(string: "zz"), [.or, .and])
        #expect(error?.localizedDescription.contains("invalid protection") == true)
    }

    @Test("Or together with And is errSecParam")
    func orAndAnd() {
        expectParameterError(kSecAttrAccessibleWhenUnlocked, [.or, .and])
        expectParameterError(
            kSecAttrAccessibleWhenUnlocked, [.devicePasscode, .biometryAny, .or, .and])
        #expect(
            create(kSecAttrAccessibleWhenUnlocked, [.devicePasscode, .biometryAny, .or]).access
                != nil)
        #expect(
            create(kSecAttrAccessibleWhenUnlocked, [.devicePasscode, .biometryAny, .and]).access
                != nil)
    }

    @Test("BiometryAny together with BiometryCurrentSet is errSecParam")
    func twoBiometryConstraints() {
        expectParameterError(kSecAttrAccessibleWhenUnlocked, [.biometryAny, .biometryCurrentSet])
        expectParameterError(
            kSecAttrAccessibleWhenUnlocked, [.biometryAny, .biometryCurrentSet, .or])
        #expect(create(kSecAttrAccessibleWhenUnlocked, .biometryAny).access != nil)
        #expect(create(kSecAttrAccessibleWhenUnlocked, .biometryCurrentSet).access != nil)
    }

    @Test(
        "UserPresence combined with another constraint is errSecParam",
        arguments: [
            SecAccessControlCreateFlags.devicePasscode, .biometryAny, .biometryCurrentSet,
            .companion, .or, .and, SecAccessControlCreateFlags(rawValue: 1 << 2),
        ])
    func userPresenceWithOthers(_ other: SecAccessControlCreateFlags) {
        expectParameterError(kSecAttrAccessibleWhenUnlocked, [.userPresence, other])
    }

    @Test(
        "UserPresence may be combined with ApplicationPassword and PrivateKeyUsage",
        arguments: [
            SecAccessControlCreateFlags.userPresence, [.userPresence, .applicationPassword],
            [.userPresence, .privateKeyUsage],
            [.userPresence, .applicationPassword, .privateKeyUsage],
        ])
    func userPresenceCompanions(_ flags: SecAccessControlCreateFlags) throws {
        let (access, error) = create(kSecAttrAccessibleWhenUnlockedThisDeviceOnly, flags)
        #expect(error == nil)
        #expect(try #require(access).flags == flags)
    }

    @Test("Failures with a nil error pointer return nil without crashing")
    func nilErrorPointer() {
        #expect(SecAccessControlCreateWithFlags(nil, NSString(string: "zz"), [], nil) == nil)
        #expect(
            SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleWhenUnlocked, [.or, .and], nil)
                == nil)
    }

    @Test("The error bridges to Swift's Error with domain and code intact")
    func errorBridgesToSwiftError() {
        var error: Unmanaged<CFError>?
        _ = SecAccessControlCreateWithFlags(
            nil, kSecAttrAccessibleWhenUnlocked, [.or, .and], &error)
        let swiftError: Error? = error?.takeRetainedValue() as Error?
        let nsError = swiftError as NSError?
        #expect(nsError?.domain == NSOSStatusErrorDomain)
        #expect(nsError?.code == -50)
        let userInfo = nsError.map { CFErrorCopyUserInfo($0) as NSDictionary }
        #expect(userInfo?.count == 1)
    }

    @Test("An error already in the slot becomes the underlying error, as with Apple's SecError")
    func previousErrorIsConsumed() {
        let previous = NSError(domain: "previous", code: 7)
        var error: Unmanaged<CFError>? = Unmanaged.passRetained(previous)
        _ = SecAccessControlCreateWithFlags(
            nil, kSecAttrAccessibleWhenUnlocked, [.or, .and], &error)
        let reported = error?.takeRetainedValue()
        #expect(reported?.code == -50)
        #expect((reported?.userInfo[NSUnderlyingErrorKey] as? NSError) === previous)
    }

    @Test("Equal protections and flags give equal objects; they are Hashable and described")
    func equalityAndDescription() throws {
        let first = try #require(create(kSecAttrAccessibleWhenUnlocked, .devicePasscode).access)
        let second = try #require(create(kSecAttrAccessibleWhenUnlocked, .devicePasscode).access)
        let other = try #require(create(kSecAttrAccessibleAfterFirstUnlock, .devicePasscode).access)
        #expect(first == second)
        #expect(first.hashValue == second.hashValue)
        #expect(first != other)
        #expect(Set([first, second, other]).count == 2)
        let plain = try #require(create(kSecAttrAccessibleWhenUnlocked, []).access)
        #expect(plain.description == "<SecAccessControlRef: ak>")
        #expect(first.description == "<SecAccessControlRef: ak;flags(0x10)>")
    }
}
