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
