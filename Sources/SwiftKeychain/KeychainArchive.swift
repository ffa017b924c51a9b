import Foundation

/// Archives ``KeychainData`` with `NSKeyedArchiver` (secure coding) and reads it back,
/// allowing only the classes an item lists.
///
/// Foundation on Linux stops the process, instead of throwing, when it meets a class that
/// is not allowed or a value that does not support secure coding. So values are checked
/// before archiving, and an archive's class names are checked before unarchiving: a
/// disallowed class is a thrown ``SwiftKeychainError``, never a crash.
enum KeychainArchive {
    /// Always allowed: the property-list classes other than `NSDate`.
    static let baseClasses: [AnyClass] = [
        NSDictionary.self, NSArray.self, NSString.self, NSNumber.self, NSData.self,
    ]

    static func archive(_ data: KeychainData, allowing storedClasses: [AnyClass]) throws -> Data {
        let allowed = baseClasses + storedClasses
        for (key, value) in data {
            try check(value, allowed: allowed, where: "the value for \"\(key)\"")
        }
        do {
            return try NSKeyedArchiver.archivedData(withRootObject: data, requiringSecureCoding: true)
        } catch {
            throw SwiftKeychainError(
                osStatus: SwiftKeychainError.parameterStatus, "the item's data could not be archived")
        }
    }

    static func unarchive(_ archive: Data, allowing storedClasses: [AnyClass]) throws -> KeychainData {
        let allowed = baseClasses + storedClasses
        func corrupt() -> SwiftKeychainError {
            SwiftKeychainError(osStatus: SwiftKeychainError.decodeStatus, "the stored data is not a keyed archive")
        }
        guard
            let plist = try? PropertyListSerialization.propertyList(from: archive, format: nil) as? [String: Any],
            plist["$archiver"] as? String == "NSKeyedArchiver",
            let objects = plist["$objects"] as? [Any]
        else { throw corrupt() }
        for object in objects {
            guard let description = object as? [String: Any], let name = description["$classname"] as? String
            else { continue }
            guard let objectClass = NSClassFromString(name), isAllowed(objectClass, in: allowed) else {
                throw SwiftKeychainError(
                    osStatus: SwiftKeychainError.decodeStatus,
                    "the stored data contains a \(name), which is not in the item's storedClasses")
            }
        }
        let root: Any?
        do {
            root = try NSKeyedUnarchiver.unarchivedObject(ofClasses: allowed, from: archive)
        } catch {
            throw corrupt()
        }
        guard let dictionary = root as? [String: any Sendable] else { throw corrupt() }
        return dictionary
    }

    static func isAllowed(_ objectClass: AnyClass, in allowed: [AnyClass]) -> Bool {
        guard let objectType = objectClass as? NSObject.Type else { return false }
        return allowed.contains { objectClass == $0 || objectType.isSubclass(of: $0) }
    }

    /// Checks that `value` archives securely with only `allowed` classes.
    private static func check(_ value: Any, allowed: [AnyClass], where location: String) throws {
        func refuse(_ what: String) -> SwiftKeychainError {
            SwiftKeychainError(
                osStatus: SwiftKeychainError.parameterStatus,
                "\(location) is \(what), which is not in the item's storedClasses")
        }
        switch value {
        case is String, is Bool, is Int, is Int8, is Int16, is Int32, is Int64, is UInt, is UInt8, is UInt16,
            is UInt32, is UInt64, is Double, is Float, is Data:
            return
        case is Date:
            guard isAllowed(NSDate.self, in: allowed) else { throw refuse("a date (archived as NSDate)") }
        case is URL:
            guard isAllowed(NSURL.self, in: allowed) else { throw refuse("a URL (archived as NSURL)") }
        case let dictionary as [String: Any]:
            for (key, element) in dictionary {
                try check(element, allowed: allowed, where: "\(location)[\"\(key)\"]")
            }
        case let array as [Any]:
            for element in array { try check(element, allowed: allowed, where: location + "[…]") }
        case let object as NSObject:
            guard object is NSSecureCoding, isAllowed(type(of: object), in: allowed) else {
                throw refuse("a \(type(of: object))")
            }
        default:
            throw refuse("a \(type(of: value)) (not an NSSecureCoding object)")
        }
    }
}
