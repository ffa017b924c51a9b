import CZlib
import Foundation
import KeyringImport

/// gzip by zlib: a KDBX payload is gzip-compressed unless its header says not.
enum Gzip {
    /// The most a payload may inflate to: far above any password database, far below memory.
    static let maximumSize = 512 << 20

    /// The bytes `gzip` holds.
    /// - Throws: ``KeyringImport/KeyringFileError/damaged(_:)`` when they are not gzip data, are
    ///   cut short, or inflate beyond ``maximumSize``.
    static func gunzip(_ gzip: Data) throws -> Data {
        var stream = z_stream()
        // 16 + 15: a gzip wrapper around a window of up to 2^15 bytes.
        guard inflateInit2_(&stream, 16 + 15, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw KeyringFileError.damaged("zlib cannot start")
        }
        defer { inflateEnd(&stream) }
        let (output, status) = pump(&stream, gzip, limit: maximumSize) { inflate(&$0, Z_NO_FLUSH) }
        guard output.count <= maximumSize else { throw KeyringFileError.damaged("the payload inflates beyond 512 MiB") }
        guard status == Z_STREAM_END else { throw KeyringFileError.damaged("the payload's compression is damaged") }
        return output
    }

    /// `data` gzip-compressed (zlib's default level).
    /// - Throws: ``KeePassExportError`` when zlib fails.
    static func gzip(_ data: Data) throws -> Data {
        var stream = z_stream()
        guard
            deflateInit2_(
                &stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + 15, 8, Z_DEFAULT_STRATEGY, zlibVersion(),
                Int32(MemoryLayout<z_stream>.size)) == Z_OK
        else { throw KeePassExportError(description: "zlib cannot start") }
        defer { deflateEnd(&stream) }
        let (output, status) = pump(&stream, data, limit: .max) { deflate(&$0, Z_FINISH) }
        guard status == Z_STREAM_END else { throw KeePassExportError(description: "zlib could not compress") }
        return output
    }

    /// Runs `step` (zlib's `inflate` or `deflate`) over `input` into 64 KiB chunks until it says
    /// other than `Z_OK`, or the output passes `limit`: the output, and what `step` said last.
    private static func pump(
        _ stream: inout z_stream, _ input: Data, limit: Int, step: (inout z_stream) -> Int32
    ) -> (Data, Int32) {
        var output = Data()
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        var bytes = [UInt8](input)
        var status = Z_OK
        bytes.withUnsafeMutableBufferPointer { bytes in
            stream.next_in = bytes.baseAddress
            stream.avail_in = uInt(bytes.count)
            repeat {
                chunk.withUnsafeMutableBufferPointer { out in
                    stream.next_out = out.baseAddress
                    stream.avail_out = uInt(out.count)
                    status = step(&stream)
                    output.append(out.baseAddress!, count: out.count - Int(stream.avail_out))
                }
            } while status == Z_OK && output.count <= limit
        }
        return (output, status)
    }
}
