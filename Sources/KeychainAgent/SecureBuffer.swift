import CKeychainAgent
import KeychainLibc

/// Memory for key material: its own private anonymous mapping, locked in RAM where the limit
/// allows (`mlock`), left out of core dumps (`MADV_DONTDUMP`), wiped in a forked child
/// (`MADV_WIPEONFORK`) and zeroed before it is unmapped.
///
/// The type is non-copyable, so the bytes exist once; the only ways in and out are
/// ``withUnsafeBytes(_:)`` and ``withUnsafeMutableBytes(_:)``. There is no `Data`, `String` or
/// array view, and its description shows the size only.
///
/// ```swift
/// var key = try SecureBuffer(count: 32)
/// key.withUnsafeMutableBytes { fillFromKDF($0) }
/// ```
public struct SecureBuffer: ~Copyable, @unchecked Sendable {
    private let base: UnsafeMutableRawPointer
    private let mappedLength: Int
    /// The number of usable bytes.
    public let count: Int
    /// Whether `mlock` succeeded: `false` when `RLIMIT_MEMLOCK` is exhausted (best effort; the
    /// pages can then reach swap, but are still excluded from core dumps).
    public let isLocked: Bool
    /// Whether `MADV_DONTDUMP` was accepted.
    public let isExcludedFromCoreDumps: Bool

    /// Maps `count` zeroed bytes (rounded up to whole pages).
    /// - Parameter count: The number of bytes, at least 1.
    /// - Throws: ``AgentError/Code/system`` when the mapping fails.
    public init(count: Int) throws {
        precondition(count > 0, "a SecureBuffer holds at least one byte")
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let length = (count + page - 1) / page * page
        let pointer = mmap(nil, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        guard let pointer, pointer != MAP_FAILED else { throw AgentError.system("mmap", "\(length) bytes") }
        base = pointer
        mappedLength = length
        self.count = count
        isExcludedFromCoreDumps = madvise(pointer, length, MADV_DONTDUMP) == 0
        _ = madvise(pointer, length, 18)  // MADV_WIPEONFORK (Linux 4.14), absent from older headers
        isLocked = mlock(pointer, length) == 0
    }

    /// Calls `body` with read access to the bytes.
    public func withUnsafeBytes<Result, Failure: Error>(
        _ body: (UnsafeRawBufferPointer) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try body(UnsafeRawBufferPointer(start: base, count: count))
    }

    /// Calls `body` with write access to the bytes.
    public mutating func withUnsafeMutableBytes<Result, Failure: Error>(
        _ body: (UnsafeMutableRawBufferPointer) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try body(UnsafeMutableRawBufferPointer(start: base, count: count))
    }

    /// The address of the first byte, for tests that check the kernel's protection of it.
    package var address: UInt { UInt(bitPattern: base) }

    deinit {
        ck_explicit_bzero(base, mappedLength)
        if isLocked { munlock(base, mappedLength) }
        munmap(base, mappedLength)
    }
}
