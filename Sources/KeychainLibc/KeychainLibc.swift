// The C library, under one name on every platform: the package's only `#if canImport(Glibc)`
// import block. A module that calls libc imports `KeychainLibc` (with the access level of its other
// imports), and gets Glibc, Musl or Darwin; a name qualified by the platform's module
// (`Glibc.close`) still resolves through the re-export.
#if canImport(Glibc)
    @_exported public import Glibc
#elseif canImport(Musl)
    @_exported public import Musl
#elseif canImport(Darwin)
    @_exported public import Darwin
#endif

/// Sends every byte of `bytes` on the stream socket `socket` (`MSG_NOSIGNAL`: a peer gone is an
/// error, not a SIGPIPE), retrying after signals; `false` when the socket fails first.
package func sendAll(_ bytes: UnsafeRawBufferPointer, to socket: Int32) -> Bool {
    transferAll(bytes) { send(socket, $0, $1, Int32(MSG_NOSIGNAL)) }
}

/// Writes every byte of `bytes` to `descriptor` (a file, a pipe), retrying after signals; `false`
/// when it fails first (a full disk, a reader gone, a non-blocking pipe that is full).
package func writeAll(_ bytes: UnsafeRawBufferPointer, to descriptor: Int32) -> Bool {
    transferAll(bytes) { write(descriptor, $0, $1) }
}

/// The loop of ``sendAll(_:to:)`` and ``writeAll(_:to:)``: `step` moves some of what is left.
private func transferAll(_ bytes: UnsafeRawBufferPointer, _ step: (UnsafeRawPointer, Int) -> Int) -> Bool {
    var offset = 0
    while offset < bytes.count {
        let moved = step(bytes.baseAddress! + offset, bytes.count - offset)
        if moved > 0 {
            offset += moved
        } else if moved < 0 && errno == EINTR {
            continue
        } else {
            return false
        }
    }
    return true
}

/// Field 22 of a `/proc/PID/stat` text, the process's start time in clock ticks since boot;
/// `nil` when the text has none. The command name (field 2) is in parentheses and may hold spaces
/// or ')': the fields are split after the last ')', so field 3 is the first of the rest and field
/// 22 is at index 19.
package func processStartTime(procStat text: String) -> UInt64? {
    guard let close = text.lastIndex(of: ")") else { return nil }
    let fields = text[text.index(after: close)...].split(separator: " ")
    guard fields.count > 19 else { return nil }
    return UInt64(fields[19])
}

/// Runs `body` with spawn attributes that start a child with no signal blocked and SIGTERM,
/// SIGINT, SIGHUP and SIGPIPE at their default actions, whatever this process does with them: a
/// child keeps an ignored signal across `exec`, and keychaind ignores SIGTERM and SIGINT to take
/// them through a dispatch source, so a dialog it started would survive the SIGTERM that is to
/// take it off the screen.
package func withDefaultSignals<T>(_ body: (inout posix_spawnattr_t) throws -> T) rethrows -> T {
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var none = sigset_t()
    sigemptyset(&none)
    posix_spawnattr_setsigmask(&attributes, &none)
    var defaults = sigset_t()
    sigemptyset(&defaults)
    for signal in [SIGTERM, SIGINT, SIGHUP, SIGPIPE] { sigaddset(&defaults, signal) }
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
    return try body(&attributes)
}

/// A close-on-exec Unix socket of `type` (`SOCK_STREAM`, `SOCK_SEQPACKET`) connected to `path`.
/// - Returns: The descriptor, or `nil` when the path is too long or nothing listens there (the
///   reason in `errno`).
package func connectUnixSocket(_ path: String, type: __socket_type) -> Int32? {
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    guard bytes.count < MemoryLayout.size(ofValue: address.sun_path), !bytes.contains(0) else {
        errno = ENAMETOOLONG
        return nil
    }
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
        raw.copyBytes(from: bytes)
        raw[bytes.count] = 0
    }
    let socket = Glibc.socket(AF_UNIX, Int32(type.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard socket >= 0 else { return nil }
    var status: Int32 = -1
    repeat {
        status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(socket, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
    } while status != 0 && errno == EINTR
    guard status == 0 else {
        let code = errno
        _ = Glibc.close(socket)
        errno = code
        return nil
    }
    return socket
}
