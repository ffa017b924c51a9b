import Foundation
import KeychainCore
import Security

/// Secrets and attributes too large to store: refused with errSecParam before their size is
/// allocated. Each value is a view of untouched address space, so any copy shows as resident
/// memory; the cases run in a worker process whose peak is reset before each one.
private struct SizeCase {
    var name: String
    /// Runs the case with a value of `size` bytes; returns the status.
    var run: (Data, KeychainDatabase) -> OSStatus
    /// Builds what the case sends from the bytes, before memory is measured (for values the
    /// caller would already hold, such as an `NSString`).
    var prepare: ((Data) -> AnyObject)? = nil
    var size: Int
    var expected: OSStatus
}

private func engineStatus(_ body: () throws -> Void) -> OSStatus {
    errorCode(body).map { $0.rawValue } ?? errSecSuccess
}

private let gibibyte = 1 << 30

/// Dictionaries built before a case is measured. A class, so that reading them back casts an
/// object: `as? [NSDictionary]` on an `NSArray` would bridge every dictionary through Swift
/// and copy its values, inside the measurement.
private final class PreparedDictionaries: @unchecked Sendable {
    let dictionaries: [NSDictionary]
    init(_ dictionaries: [NSDictionary]) { self.dictionaries = dictionaries }
}

/// The value a case's `prepare` built, held while the case runs.
private let preparedValue = Mutex<AnyObject?>(nil)

/// The size of the values sent through `Security`, whose dictionaries Foundation on Linux
/// bridges at about 15 MB/s: 1 GiB there would take over a minute per case.
nonisolated(unsafe) private var bridgedSize = 32 << 20

nonisolated(unsafe) private let sizeCases: [SizeCase] = {
    let limit = KeychainConfiguration().maximumDataSize
    let attributeLimit = KeychainConfiguration().maximumAttributeSize
    /// The caller's dictionaries (an `NSDictionary` holding the big value as `NSData` or
    /// `NSString`) are built by `prepare`, outside the measurement: bridging a Swift
    /// `[CFString: Any]` holding `Data` to `NSDictionary` copies the bytes on Linux, and that
    /// copy is the caller's, not the API's.
    func prepared() -> [NSDictionary] { (preparedValue.withLock { $0 } as? PreparedDictionaries)?.dictionaries ?? [] }
    func dictionary(_ entries: [(CFString, AnyObject)]) -> NSDictionary {
        let dictionary = NSMutableDictionary()
        for (key, value) in entries { dictionary[key] = value }
        return dictionary
    }
    func bytes(_ data: Data) -> NSData {
        let base = data.withUnsafeBytes { UnsafeMutableRawPointer(mutating: $0.baseAddress!) }
        return NSData(bytesNoCopy: base, length: data.count, freeWhenDone: false)
    }
    func secAdd(_ key: CFString) -> (run: (Data, KeychainDatabase) -> OSStatus, prepare: (Data) -> AnyObject) {
        (
            { _, database in
                KeychainDatabase.withDefault(database) { SecItemAdd(prepared()[0], nil) }
            },
            { data in
                PreparedDictionaries([
                    dictionary([
                        (kSecClass, kSecClassGenericPassword), (kSecAttrAccount, "big" as NSString), (key, bytes(data)),
                    ])
                ])
            }
        )
    }
    let addData = secAdd(kSecValueData)
    let addGeneric = secAdd(kSecAttrGeneric)
    return [
        SizeCase(
            name: "engine add, 1 GiB secret",
            run: { data, db in engineStatus { try db.add(Item(class: .genericPassword, data: data)) } },
            size: gibibyte, expected: errSecParam),
        SizeCase(
            name: "engine update, 1 GiB secret",
            run: { data, db in
                engineStatus { try db.update(ItemQuery(class: .genericPassword), attributes: [:], data: data) }
            }, size: gibibyte, expected: errSecParam),
        SizeCase(
            name: "engine add, 1 GiB attribute (gena)",
            run: { data, db in
                engineStatus { try db.add(Item(class: .genericPassword, attributes: [.generic: .data(data)])) }
            }, size: gibibyte, expected: errSecParam),
        SizeCase(
            name: "SecItemAdd, oversized NSString kSecAttrAccount",
            run: { _, database in KeychainDatabase.withDefault(database) { SecItemAdd(prepared()[0], nil) } },
            prepare: { data in
                let base = data.withUnsafeBytes { UnsafeMutableRawPointer(mutating: $0.baseAddress!) }
                let text =
                    NSString(
                        bytesNoCopy: base, length: data.count, encoding: String.Encoding.ascii.rawValue,
                        freeWhenDone: false) ?? NSString()
                return PreparedDictionaries([
                    dictionary([(kSecClass, kSecClassGenericPassword), (kSecAttrAccount, text)])
                ])
            }, size: -1, expected: errSecParam),
        SizeCase(
            name: "SecItemAdd, oversized kSecValueData", run: addData.run, prepare: addData.prepare, size: -1,
            expected: errSecParam),
        SizeCase(
            name: "SecItemAdd, oversized kSecAttrGeneric", run: addGeneric.run, prepare: addGeneric.prepare,
            size: -1, expected: errSecParam),
        SizeCase(
            name: "SecItemUpdate, oversized kSecValueData",
            run: { _, database in
                KeychainDatabase.withDefault(database) { SecItemUpdate(prepared()[0], prepared()[1]) }
            },
            prepare: { data in
                PreparedDictionaries([
                    dictionary([(kSecClass, kSecClassGenericPassword)]), dictionary([(kSecValueData, bytes(data))]),
                ])
            }, size: -1, expected: errSecParam),
        SizeCase(
            name: "SecItemAdd, secret 1 byte over the limit", run: addData.run, prepare: addData.prepare,
            size: limit + 1, expected: errSecParam),
        SizeCase(
            name: "SecItemAdd, secret exactly at the limit", run: addData.run, prepare: addData.prepare, size: limit,
            expected: errSecSuccess),
        SizeCase(
            name: "SecItemAdd, attribute 1 byte over the limit", run: addGeneric.run, prepare: addGeneric.prepare,
            size: attributeLimit + 1, expected: errSecParam),
    ]
}()

/// The worker side: `oversized <bridged-size> <from> <count>`: one line per case,
/// `R <i>\t<status>\t<peak growth bytes> <milliseconds> <size>`.
func oversizedWorker(_ arguments: [String], from: Int, count: Int) throws {
    bridgedSize = arguments.first.flatMap { Int($0) } ?? bridgedSize
    let database = try KeychainDatabase.inMemory(configuration: StressKeys.testing())
    try database.add(Item(class: .genericPassword, attributes: [.account: .string("existing")], data: Data("x".utf8)))
    serveTrials(from: from, count: count) { index in
        let sizeCase = sizeCases[index]
        let size = sizeCase.size < 0 ? bridgedSize : sizeCase.size
        guard let region = UntouchedRegion(size: size) else { return ("no address space", "") }
        let prepared = sizeCase.prepare?(region.data)
        preparedValue.withLock { $0 = prepared }
        defer { preparedValue.withLock { $0 = nil } }
        resetPeakMemory()
        let before = memoryStatus().peak
        let started = monotonicSeconds()
        let status = sizeCase.run(region.data, database)
        let elapsed = (monotonicSeconds() - started) * 1000
        let growth = memoryStatus().peak - before
        return ("\(status)", "\(growth) \(Int(elapsed)) \(size)")
    }
}

/// Oversized secrets and attributes, through the engine and through `Security`.
func oversizedInputAttacks(_ context: StressContext) throws -> [StressRow] {
    let scratch = try Scratch("oversized")
    let bridged = context.mode.pick(quick: 16 << 20, long: 256 << 20)
    let (lines, crashes) = runTrials(
        ["oversized", String(bridged)], total: sizeCases.count, batch: sizeCases.count, stall: 120, scratch: scratch)
    var failures: [String] = crashes.map {
        "case \($0.index) (\(sizeCases[$0.index].name)): \($0.outcome) \($0.detail)"
    }
    var largest = 0
    var measurable = resetPeakMemory()
    var slowest = 0
    for line in lines {
        let sizeCase = sizeCases[line.index]
        let fields = line.detail.split(separator: " ").map { Int($0) ?? -1 }
        let (growth, milliseconds, size) = (
            fields.first ?? -1, fields.count > 1 ? fields[1] : -1, fields.count > 2 ? fields[2] : -1
        )
        let what = "\(sizeCase.name) (\(size >> 20) MiB)"
        if sizeCase.expected == errSecParam {
            largest = max(largest, growth)
            slowest = max(slowest, milliseconds)
        }
        if line.outcome != "\(sizeCase.expected)" {
            failures.append("\(what): status \(line.outcome), expected \(sizeCase.expected)")
        } else if sizeCase.expected == errSecParam && growth >= min(16 << 20, size / 4) {
            failures.append("\(what): refused after \(milliseconds) ms, but the peak grew by \(growth >> 20) MiB")
        } else if context.mode == .long && sizeCase.expected == errSecParam && milliseconds > 1_000 {
            failures.append("\(what): refused after \(milliseconds) ms")
        }
        if growth < 0 { measurable = false }
    }
    return [
        StressRow(
            group: "Bad input",
            attack:
                "oversized secrets and attributes (1 GiB to the engine, \(bridged >> 20) MiB through SecItem, limit + 1 byte)",
            trials: sizeCases.count,
            // The time is judged in the long run only: a loaded machine must not fail the quick
            // suite (which `swift test` runs); the memory bound is the mechanism.
            required:
                "errSecParam\(context.mode == .long ? " in < 1 s" : "") without allocating their size (peak memory grows < min(16 MiB, size/4))",
            measured:
                "\(sizeCases.count - failures.count)/\(sizeCases.count) as required; largest peak growth \(largest >> 20) MiB, slowest refusal \(slowest) ms"
                + (measurable ? "" : " (peak not measurable here)"),
            passed: failures.isEmpty && lines.count == sizeCases.count && measurable, evidence: failures)
    ]
}
