// How keychain strings, queries and results cross the Swift/Foundation bridge on Linux.
//
// On Apple platforms `CFString`, `NSString` and `String` bridge for free, and
// `AnyHashable(kSecAttrAccount as NSString) == AnyHashable("acct")`. With swift-corelibs-foundation
// the last one is false: an `NSString` and a `String` with the same characters are different
// `AnyHashable` keys. Measured behaviour that the code below (and the SecItem implementation)
// relies on:
//
// - An `NSDictionary` copies its keys; bridged to `[AnyHashable: Any]` they become `String`s,
//   bridged to `[String: Any]` or `[CFString: Any]` they become `String`s or `NSString`s.
// - Values read out of an `NSDictionary` (enumeration, subscript, or a cast to a Swift dictionary)
//   are converted to Swift types: `NSString` → `String`, `NSData` → `Data`, `NSDate` → `Date`,
//   a Boolean `NSNumber` (the `kCFBooleanTrue`/`kCFBooleanFalse` singletons, and any Swift `Bool`)
//   → `Bool`; an integer or floating-point `NSNumber` stays an `NSNumber`; `nil` → `NSNull`.
// - A `Bool` read that way answers `as? Bool` but not `as? Int`; an integer `NSNumber` answers both
//   `as? Int` and, for 0 and 1, `as? Bool` — so an integer number is the faithful way to return
//   what Apple returns as a 0/1 `CFNumber`, and `as? Bool` cannot tell a Boolean from a number.

internal import _SecurityFoundation
internal import KeychainModel

/// The class of every `kSec…` constant: an immutable `NSString` whose `AnyHashable` form is its
/// Swift `String`.
///
/// Because `CFString` is `NSString` (toll-free bridged on Apple platforms, an alias here: see
/// CoreFoundation.swift), a dictionary of type `[AnyHashable: Any]` would otherwise hold `"acct"`
/// and `kSecAttrAccount` as two different keys.
/// This subclass reports a custom `AnyHashable` representation (the same hook Foundation uses for
/// `NSString` on Apple platforms), so `dictionary[kSecAttrAccount]` and
/// `dictionary[kSecAttrAccount as String]` find the same entry. As an `NSString` it is equal to,
/// and hashes like, any other `NSString` with the same characters.
final class SecConstantString: NSString {
    /// The constant's Swift string.
    let value: String
    private let utf16: [unichar]
    /// `NSString`'s hash of the same characters, computed once: Foundation computes it from a
    /// subclass's characters, one dynamic call each, on every dictionary insertion and lookup.
    private let cachedHash: Int

    /// Creates a constant from a string.
    init(value: String) {
        self.value = value
        self.utf16 = Array(value.utf16)
        cachedHash = NSString(string: value).hash
        super.init(characters: utf16, length: utf16.count)
    }

    override var hash: Int { cachedHash }

    required convenience init(stringLiteral value: StaticString) {
        self.init(value: value.description)
    }

    required convenience init(extendedGraphemeClusterLiteral value: StaticString) {
        self.init(value: value.description)
    }

    required convenience init(unicodeScalarLiteral value: StaticString) {
        self.init(value: value.description)
    }

    required convenience init(string aString: String) {
        self.init(value: aString)
    }

    required convenience init?(coder aDecoder: NSCoder) {
        guard let string = NSString(coder: aDecoder) else { return nil }
        self.init(value: string as String)
    }

    override var length: Int {
        utf16.count
    }

    /// The constant itself: it is immutable, so a dictionary that copies its keys keeps the
    /// constant (and its Swift string) instead of rebuilding a string from UTF-16.
    override func copy(with zone: NSZone? = nil) -> Any {
        self
    }

    override func character(at index: Int) -> unichar {
        utf16[index]
    }

    /// Equal to any string with the same UTF-16 code units, as `-[NSString isEqual:]` is on
    /// Apple platforms; the hash is `NSString`'s, so equal strings hash alike.
    ///
    /// Foundation's own `isEqual(_:)` first rebuilds a Swift `String` from a subclass's
    /// characters, one dynamic call per character, and a dictionary calls it for every
    /// occupied bucket it probes: building a five-key query literal cost ~54k instructions, most
    /// of them here. This compares the constants' stored code units, and another string's
    /// length before its characters.
    override func isEqual(_ object: Any?) -> Bool {
        if let constant = object as? SecConstantString {
            return constant === self || (constant.cachedHash == cachedHash && constant.utf16 == utf16)
        }
        if let other = object as? NSString {
            guard other.length == utf16.count else { return false }
            for index in utf16.indices where other.character(at: index) != utf16[index] { return false }
            return true
        }
        if let string = object as? String { return string.utf16.elementsEqual(utf16) }
        return false
    }
}

/// The Swift string of a key or value read from a query dictionary, or `nil` if it is not a
/// string. A `kSec…` constant gives its string without bridging through UTF-16.
func queryString(_ value: Any) -> String? {
    if type(of: value) == SecConstantString.self, let constant = value as? SecConstantString {
        return constant.value
    }
    return value as? String
}

extension SecConstantString: _HasCustomAnyHashableRepresentation {
    func _toCustomAnyHashable() -> AnyHashable? {
        AnyHashable(value)
    }
}

/// Builds a result dictionary that callers can read in every way Apple platforms allow.
///
/// The result can be cast to `[String: Any]`, `[CFString: Any]` or `[AnyHashable: Any]`, or used
/// as an `NSDictionary`; a lookup by `kSecX` or by `kSecX as String` finds the same entry
/// (through `[AnyHashable: Any]` too). Values are stored as Foundation objects so that `as? Data`,
/// `as? NSData`, `as? String`, `as? Int` and `as? Date` work as on Apple platforms.
///
/// Booleans (a Swift `Bool`, ``kCFBooleanTrue`` or ``kCFBooleanFalse``) are stored as the integer
/// numbers 1 and 0, which is what the data protection keychain returns for Boolean attributes
/// and the only form a caller can read both `as? Bool` and `as? Int` on Linux.
///
/// - Parameter pairs: The keys and values, in any order; a later pair replaces an earlier one
///   with the same key. An `Optional` value is unwrapped, and a pair whose value is `nil` is left
///   out (a Core Foundation dictionary cannot hold `NULL`).
/// - Returns: An immutable dictionary.
package func makeResultDictionary(_ pairs: [(CFString, Any)]) -> CFDictionary {
    var builder = ResultDictionaryBuilder(capacity: pairs.count)
    for (key, value) in pairs {
        guard let object = resultObject(value) else { continue }
        builder.append(key as String, object)
    }
    return builder.build()
}

/// A result dictionary under construction: keys and the Foundation objects callers read, as
/// ``makeResultDictionary(_:)`` stores them, added with their static types so that no value is
/// boxed in `Any` and cast back. A later entry with the same key replaces an earlier one.
///
/// ```swift
/// var builder = ResultDictionaryBuilder(capacity: 2)
/// builder.append("acct", string: "alice")
/// builder.append("v_Data", data: secret)
/// let result = builder.build()
/// ```
struct ResultDictionaryBuilder {
    private var keys: [NSObject] = []
    private var objects: [AnyObject] = []

    /// An empty builder with room for `capacity` entries.
    init(capacity: Int) {
        keys.reserveCapacity(capacity)
        objects.reserveCapacity(capacity)
    }

    /// Adds a Foundation object under `key`.
    mutating func append(_ key: String, _ object: AnyObject) {
        keys.append(Self.sharedKeys[key] ?? NSString(string: key))
        objects.append(object)
    }

    /// One immutable `NSString` per key a result can hold (every attribute name of every class,
    /// and the result keys), made once and shared by every result instead of one new string per
    /// key per result. Plain `NSString`s, so that callers bridge them to `String` as cheaply as
    /// any other; immutable, so shared across threads safely.
    nonisolated(unsafe) private static let sharedKeys: [String: NSString] = {
        var names: Set<String> = ["sha1", "class", "v_Data", "v_PersistentRef"]
        for itemClass in ItemClass.allCases {
            names.formUnion(ItemSchema.of(itemClass).attributes.keys.map(\.rawValue))
        }
        return Dictionary(uniqueKeysWithValues: names.map { ($0, NSString(string: $0)) })
    }()

    /// Adds a string, stored as an `NSString`.
    mutating func append(_ key: String, string: String) { append(key, string as NSString) }

    /// Adds bytes, stored as `NSData`.
    mutating func append(_ key: String, data: Data) { append(key, data as NSData) }

    /// Adds a date, stored as an `NSDate`.
    mutating func append(_ key: String, date: Date) { append(key, date as NSDate) }

    /// Adds an integer, stored as an `NSNumber`.
    mutating func append(_ key: String, number: Int) { append(key, NSNumber(value: number)) }

    /// The immutable dictionary, built in one step: cheaper than filling a mutable dictionary
    /// through `AnyHashable` keys and copying it.
    func build() -> CFDictionary {
        keys.withUnsafeBufferPointer { keys in
            objects.withUnsafeBufferPointer { objects in
                NSDictionary(objects: objects.baseAddress, forKeys: keys.baseAddress, count: keys.count)
            }
        }
    }
}

/// Builds a result array (for a search whose limit is not one) from result objects.
///
/// The array can be cast to `[[String: Any]]`, `[[AnyHashable: Any]]`, `[NSDictionary]` or `[Data]`
/// as its elements allow.
///
/// - Parameter elements: The per-item results: dictionaries from ``makeResultDictionary(_:)``,
///   data, or references. `nil` elements are left out.
/// - Returns: An immutable array.
package func makeResultArray(_ elements: [Any]) -> CFArray {
    NSArray(array: elements.compactMap(resultObject))
}

/// Returns the truth value of a query value if it is a Boolean, and `nil` for anything else.
///
/// A value is Boolean if it is a Swift `Bool` or one of ``kCFBooleanTrue`` and ``kCFBooleanFalse``
/// (Foundation returns these singletons for every Boolean `NSNumber`). The integer numbers 0 and 1
/// are *not* Booleans here, although `1 as? Bool` succeeds on Linux: the return keys accept only
/// Booleans on Apple platforms (a `CFBoolean`, as Apple's `keychain/securityd/SecDbQuery.c` checks).
///
/// - Parameter value: A value read from a query dictionary.
/// - Returns: `true` or `false` for a Boolean, `nil` otherwise.
package func cfBooleanValue(_ value: Any) -> Bool? {
    guard let number = value as? NSNumber else { return nil }
    if number === kCFBooleanTrue { return true }
    if number === kCFBooleanFalse { return false }
    return nil
}

/// Converts a result value to the Foundation object a caller can cast as on Apple platforms;
/// `nil` for an empty `Optional`.
private func resultObject(_ value: Any) -> AnyObject? {
    // The types attribute results are made of, recognised by their exact type: cheaper than
    // the protocol and bridging casts of the general path below.
    let type = type(of: value)
    if type == String.self, let string = value as? String { return string as NSString }
    if type == Data.self, let data = value as? Data { return data as NSData }
    if type == Date.self, let date = value as? Date { return date as NSDate }
    // Objects already made for a result (dictionaries, data, access controls) go in as they
    // are; a number may be a Boolean, which the general path below converts.
    if let object = value as? NSObject, !(object is NSNumber) { return object }
    guard let value = unwrapped(value) else { return nil }
    if let boolean = cfBooleanValue(value) {
        return NSNumber(value: Int32(boolean ? 1 : 0))
    }
    return value as AnyObject
}

/// Looks through any level of `Optional` wrapping.
private protocol OptionalValue {
    var unwrappedValue: Any? { get }
}

extension Optional: OptionalValue {
    fileprivate var unwrappedValue: Any? {
        guard case .some(let wrapped) = self else { return nil }
        return unwrapped(wrapped)
    }
}

/// Returns the value inside any `Optional` wrapping, or `nil` for an empty optional.
private func unwrapped(_ value: Any) -> Any? {
    if let optional = value as? OptionalValue {
        return optional.unwrappedValue
    }
    return value
}
