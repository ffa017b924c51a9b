import Crypto
import KeychainLibc
import Synchronization

/// SHA-256 digests of executables, cached on (device, inode, size, mtime, ctime), so a file is
/// hashed once until it changes. Safe to share between connections; each resolver may own one,
/// so tests start empty.
public final class ExecutableHashCache: Sendable {
    struct Key: Hashable {
        var device: UInt64
        var inode: UInt64
        var size: Int64
        var modification: Int64
        var change: Int64

        init(_ info: stat) {
            device = UInt64(info.st_dev)
            inode = UInt64(info.st_ino)
            size = Int64(info.st_size)
            modification = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
            change = Int64(info.st_ctim.tv_sec) * 1_000_000_000 + Int64(info.st_ctim.tv_nsec)
        }
    }

    private let digests = Mutex<[Key: String]>([:])
    private let hashCount = Atomic<Int>(0)

    /// Creates an empty cache.
    public init() {}

    /// How many files were actually read and hashed (cache misses).
    public var filesHashed: Int { hashCount.load(ordering: .relaxed) }

    /// The lowercase hex SHA-256 of the open file `fd`, whose status is `info`.
    func digest(of fd: Int32, info: stat) throws -> String {
        let key = Key(info)
        if let cached = digests.withLock({ $0[key] }) { return cached }
        let digest = try Self.hash(fd)
        hashCount.add(1, ordering: .relaxed)
        // Store only if the file did not change while it was read.
        var after = stat()
        if fstat(fd, &after) == 0, Key(after) == key { digests.withLock { $0[key] = digest } }
        return digest
    }

    private static func hash(_ fd: Int32) throws -> String {
        var hasher = SHA256()
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        var offset: off_t = 0
        while true {
            let count = pread(fd, &chunk, chunk.count, offset)
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { throw AgentError.system("pread", "executable") }
            if count == 0 { break }
            hasher.update(data: chunk[..<count])
            offset += off_t(count)
        }
        return hasher.finalize().map { String(format: $0) }.joined()
    }
}

extension String {
    fileprivate init(format byte: UInt8) {
        let digits = Array("0123456789abcdef")
        self = String([digits[Int(byte >> 4)], digits[Int(byte & 0xf)]])
    }
}
