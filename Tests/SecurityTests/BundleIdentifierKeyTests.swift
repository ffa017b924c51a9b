// `kCFBundleIdentifierKey`, which Locksmith needs to compile: its default service name is the main
// bundle's identifier, read from the information dictionary by this key.

import Foundation
import Security
import Testing

/// Locksmith's default service, written the way Locksmith writes it.
private let locksmithDefaultService =
    Bundle.main.infoDictionary?[String(kCFBundleIdentifierKey)] as? String ?? "com.locksmith.defaultService"

@Suite("kCFBundleIdentifierKey")
struct BundleIdentifierKeyTests {
    @Test("its value is Apple's \"CFBundleIdentifier\"")
    func rawValue() {
        #expect(String(kCFBundleIdentifierKey) == "CFBundleIdentifier")
        #expect(kCFBundleIdentifierKey as String == "CFBundleIdentifier")
        #expect(kCFBundleIdentifierKey.isEqual(to: "CFBundleIdentifier"))
    }

    @Test("Locksmith's default service name compiles and is the main bundle's identifier or its fallback")
    func locksmithDefaultServiceName() {
        #expect(locksmithDefaultService == Bundle.main.bundleIdentifier ?? "com.locksmith.defaultService")
    }

    @Test("it finds the identifier in an information dictionary under every bridge")
    func lookUpInInfoDictionary() {
        let info: [String: Any] = ["CFBundleIdentifier": "com.example.app", "CFBundleName": "Example"]
        #expect(info[String(kCFBundleIdentifierKey)] as? String == "com.example.app")
        #expect(info[kCFBundleIdentifierKey as String] as? String == "com.example.app")

        let hashable: [AnyHashable: Any] = ["CFBundleIdentifier": "com.example.app"]
        #expect(hashable[kCFBundleIdentifierKey as AnyHashable] as? String == "com.example.app")

        let bridged = NSDictionary(dictionary: ["CFBundleIdentifier": "com.example.app"])
        #expect(bridged[kCFBundleIdentifierKey!] as? String == "com.example.app")
    }
}
